/*
 * munmap, mprotect, madvise and page faults (src/kernel/vm.c): what each call
 * changes, what it flushes, and what the stale checker then sees.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>
#include "support.h"
#include "tlbsim/util/error.h"

/*
 * cpu 0 runs @call on the 4-page "victim" while cpu 1 keeps touching all of
 * it (read or write); afterwards cpu 1 goes on touching it.
 */
static char *victim_case(const char *call, int reader_writes)
{
	return g_strdup_printf(
		"{\"name\": \"vm\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 16384, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    %s,"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"toucher\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\", \"pages\": 4,"
		"     \"while_flag\": \"run\", \"write\": %d, \"cycles\": 10}]}]}",
		call, reader_writes);
}

/* madvise(DONTNEED) zaps 4 present pages: a 4-page flush; the toucher then
 * faults each page back in (once: later faults find it present). */
Test(vm, madvise_dontneed_flushes_and_refaults)
{
	char *w = victim_case("{\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"}", 0);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 4);
	cr_assert_eq(CPU(r, 1, invlpg), 4);
	cr_assert_eq(CPU(r, 1, page_faults), 4);
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(r.result->total.syscalls, 1);
	support_run_free(&r);
	g_free(w);
}

/* mprotect to read-only flushes the whole range; reads go on hitting. */
Test(vm, mprotect_read_only_flushes_the_range)
{
	char *w = victim_case("{\"op\": \"mprotect\", \"region\": \"victim\", \"prot\": \"read\"}", 0);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 4);
	cr_assert_eq(CPU(r, 1, invlpg), 4);
	cr_assert_eq(CPU(r, 1, page_faults), 0, "the pages stay present");
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/* A writer after mprotect(read) would get SIGSEGV: the run stops with the
 * op's path in the message. */
Test(vm, write_after_mprotect_read_is_sigsegv)
{
	char *w = victim_case("{\"op\": \"mprotect\", \"region\": \"victim\", \"prot\": \"read\"}", 1);
	int code = -1;
	char *msg = support_run_error("tiny-2cpu.json", "linux-4.5", NULL, w, &code);
	cr_assert_eq(code, TLBSIM_ERROR_INVALID);
	cr_assert(strstr(msg, "$.tasks[1].program[1]") != NULL, "%s", msg);
	cr_assert(strstr(msg, "read-only") != NULL, "%s", msg);
	g_free(msg);
	g_free(w);
}

/* Reading an unmapped chunk after munmap: the walk finds nothing. */
Test(vm, access_after_munmap_is_sigsegv)
{
	char *w = victim_case("{\"op\": \"munmap\", \"region\": \"victim\"}", 0);
	int code = -1;
	char *msg = support_run_error("tiny-2cpu.json", "linux-4.5", NULL, w, &code);
	cr_assert(strstr(msg, "unmapped memory") != NULL, "%s", msg);
	g_free(msg);
	g_free(w);
}

/* Unmapping a chunk twice is a workload bug, reported with its path. */
Test(vm, double_munmap_is_reported)
{
	const char *w =
		"{\"name\": \"twice\","
		" \"regions\": [{\"name\": \"r\", \"size\": 4096}],"
		" \"tasks\": [{\"name\": \"t\", \"program\": ["
		"   {\"op\": \"munmap\", \"region\": \"r\"},"
		"   {\"op\": \"munmap\", \"region\": \"r\"}]}]}";
	int code = -1;
	char *msg = support_run_error("tiny-2cpu.json", "linux-4.5", NULL, w, &code);
	/* The workload file first, as for every other error about it. */
	cr_assert(g_str_has_prefix(msg, "case: $.tasks[0].program[1]: "), "%s", msg);
	cr_assert(strstr(msg, "already unmapped") != NULL, "%s", msg);
	g_free(msg);
}

/*
 * Writes to an unpopulated region fault once per page; a racing second
 * toucher of the same page (cpu 1 and cpu 0 both write page 0) finds it
 * mapped and only fills.
 */
Test(vm, faults_populate_once)
{
	const char *w =
		"{\"name\": \"faults\","
		" \"regions\": [{\"name\": \"heap\", \"size\": 32768}],"
		" \"tasks\": [{\"name\": \"w\", \"count\": 2, \"cpu\": \"$thread\", \"program\": ["
		"   {\"op\": \"access\", \"region\": \"heap\", \"pattern\": \"sequential\","
		"    \"pages\": 8, \"rounds\": 3, \"write\": 1, \"cycles\": 5}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	uint64_t faults = r.result->total.page_faults;
	/* Each CPU faults on every page it finds absent: 8 pages, two CPUs
	 * racing, at least 8 and at most 16 faults; no flush ever. */
	cr_assert_geq(faults, 8);
	cr_assert_leq(faults, 16);
	cr_assert_eq(r.result->total.accesses, 2 * 8 * 3);
	cr_assert_eq(r.result->total.page_walks, r.result->total.tlb_misses + faults);
	cr_assert_eq(r.result->total.nr_tlb_remote_flush, 0);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
}

/* madvise of pages 1-2 of the 4: a 2-page flush, and only those refault. */
Test(vm, madvise_of_a_page_range)
{
	char *w = victim_case("{\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\","
			      " \"first\": 1, \"pages\": 2}",
			      0);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(CPU(r, 0, nr_tlb_local_flush_one), 2);
	cr_assert_eq(CPU(r, 1, invlpg), 2);
	cr_assert_eq(CPU(r, 1, page_faults), 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

Test(vm, madvise_range_past_the_end_is_an_error)
{
	char *w = victim_case("{\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\","
			      " \"first\": 3, \"pages\": 2}",
			      0);
	int code = -1;
	char *msg = support_run_error("tiny-2cpu.json", "linux-4.5", NULL, w, &code);
	cr_assert(strstr(msg, "pages is 2, expected [1, 1]") != NULL, "%s", msg);
	g_free(msg);
	g_free(w);
}

/*
 * cpu 0 reads the 16 pages of "heap" (private unless @shared), then runs
 * @then; cpu 1 keeps another region of the mm hot meanwhile, so it is in
 * mm_cpumask and gets every flush.
 */
static struct support_run zero_page_case(bool shared, const char *then)
{
	char *w = g_strdup_printf(
		"{\"name\": \"zero\","
		" \"regions\": [{\"name\": \"heap\", \"size\": \"64K\"%s},"
		"  {\"name\": \"hot\", \"size\": \"16K\", \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"reader\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"access\", \"region\": \"heap\", \"pattern\": \"sequential\","
		"     \"pages\": 16, \"rounds\": 1, \"write\": 0, \"cycles\": 10}%s,"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"other\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"hot\", \"pattern\": \"sequential\", \"pages\": 4,"
		"     \"while_flag\": \"run\", \"cycles\": 10}]}]}",
		shared ? ", \"shared\": true" : "", then);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	g_free(w);
	return r;
}

#define WRITE_HEAP                                                                        \
	", {\"op\": \"access\", \"region\": \"heap\", \"pattern\": \"sequential\", \"pages\": 16," \
	" \"rounds\": 1, \"write\": 1, \"cycles\": 10}"

/*
 * A read fault in a private anonymous mapping maps the zero page: nothing
 * joins the LRU (16 new pages would fill a 15-page batch).  Writing the pages
 * then copies each (wp_page_copy()): a new page, and a one-page flush of the
 * zero page's translation from every CPU of the mm.
 */
Test(vm, read_faults_map_the_zero_page_and_writes_copy_it)
{
	struct support_run r = zero_page_case(false, "");
	cr_expect_eq(CPU(r, 0, page_faults), 16);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 0, "the zero page is on no LRU");
	cr_expect_eq(r.result->total.nr_tlb_remote_flush, 0);
	support_run_free(&r);

	r = zero_page_case(false, WRITE_HEAP);
	cr_expect_eq(CPU(r, 0, page_faults), 32);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 1, "16 copies: one full batch");
	cr_expect_eq(CPU(r, 0, nr_tlb_remote_flush), 16);
	cr_expect_eq(CPU(r, 1, nr_tlb_remote_flush_received), 16);
	cr_expect_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
}

/* MAP_SHARED memory has no zero page: a read fault allocates (the batch
 * fills at the 15th page) and the pages are writable at once. */
Test(vm, shared_mappings_allocate_on_read_faults)
{
	struct support_run r = zero_page_case(true, WRITE_HEAP);
	cr_expect_eq(CPU(r, 0, page_faults), 16);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 1);
	cr_expect_eq(r.result->total.nr_tlb_remote_flush, 0);
	support_run_free(&r);
}

/* Zapping the zero page's PTEs flushes them but frees nothing: no drain, no
 * LRU work, where zapping 16 written pages drains and frees under the lock. */
Test(vm, zapping_the_zero_page_frees_nothing)
{
	const char *dontneed = ", {\"op\": \"madvise\", \"region\": \"heap\", \"advice\": \"dontneed\"}";
	struct support_run r = zero_page_case(false, dontneed);
	cr_expect_eq(CPU(r, 0, nr_tlb_remote_flush), 1);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 0);
	support_run_free(&r);

	char *both = g_strconcat(WRITE_HEAP, dontneed, NULL);
	r = zero_page_case(false, both);
	cr_expect_eq(CPU(r, 0, nr_tlb_remote_flush), 17);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 3, "a full batch, then drain and free");
	support_run_free(&r);
	g_free(both);
}

/*
 * munmap, then mmap of the same chunk: a fresh read-write mapping (the
 * mprotect(read) before the munmap is gone) with no page present.  The caller
 * write-faults pages 0-1 back in; after its flag, cpu 1 reads pages 2-3 and
 * faults them in too (the new VMA is everyone's), with no SIGSEGV anywhere.
 */
Test(vm, mmap_after_munmap_maps_a_fresh_chunk)
{
	const char *w =
		"{\"name\": \"remap\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 16384, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 4, \"rounds\": 1, \"cycles\": 10},"
		"    {\"op\": \"mprotect\", \"region\": \"victim\", \"prot\": \"read\"},"
		"    {\"op\": \"munmap\", \"region\": \"victim\"},"
		"    {\"op\": \"mmap\", \"region\": \"victim\"},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 2, \"rounds\": 3, \"write\": 1, \"cycles\": 10},"
		"    {\"op\": \"set_flag\", \"flag\": \"mapped\", \"value\": 1}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"mapped\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"first\": 2, \"pages\": 2, \"rounds\": 2, \"cycles\": 10}]}],"
		" \"report\": {\"op\": \"mmap\"}}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_expect_eq(CPU(r, 0, page_faults), 2, "pages 0-1, once each");
	cr_expect_eq(CPU(r, 1, page_faults), 2, "pages 2-3, once each");
	cr_expect_eq(CPU(r, 0, syscalls), 3, "mprotect, munmap, mmap");
	cr_expect_eq(r.result->total.accesses, 4 + 6 + 4);
	cr_expect_eq(r.result->total.stale_hits, 0);
	cr_expect_eq(r.result->total.stale_pwc, 0);
	/* mprotect's four pages and munmap's four; mmap flushes nothing. */
	cr_expect_eq(CPU(r, 0, invlpg), 8);
	/* Entry, mmap_lock for writing (its line last written by this CPU's
	 * munmap: a self transfer), vma_op, then the return at the global
	 * event, releasing mmap_lock (self again): no PTE work. */
	cr_assert_eq(histogram_count(r.result->op_cycles), 1);
	const struct topology_costs *costs = &r.topology->costs;
	cr_expect_eq(histogram_max(r.result->op_cycles),
		     costs->syscall + costs->vma_op + 2 * costs->line_transfer[DIST_SELF]);
	support_run_free(&r);
}

/* mmap of a chunk that is mapped is a workload bug, reported with its path. */
Test(vm, mmap_of_a_mapped_chunk_is_reported)
{
	const char *w =
		"{\"name\": \"twice\","
		" \"regions\": [{\"name\": \"r\", \"chunks\": 2, \"chunk_size\": 4096}],"
		" \"tasks\": [{\"name\": \"t\", \"program\": ["
		"   {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 1},"
		"   {\"op\": \"mmap\", \"region\": \"r\", \"chunk\": 1},"
		"   {\"op\": \"mmap\", \"region\": \"r\", \"chunk\": 1}]}]}";
	int code = -1;
	char *msg = support_run_error("tiny-2cpu.json", "linux-4.5", NULL, w, &code);
	cr_expect_eq(code, TLBSIM_ERROR_INVALID);
	cr_expect(g_str_has_prefix(msg, "case: $.tasks[0].program[2]: mmap of chunk 1 of r, "
					"already mapped"), "%s", msg);
	g_free(msg);
}

/*
 * A munmap after the mmap frees the page-table page again.  Two 1 MiB chunks
 * share one 2 MiB span (chunk 1 below chunk 0), the first page of each
 * present.  munmap 1 leaves the span to chunk 0: a one-page flush.  munmap 0
 * frees the span's PTE page, and pte_free_tlb() widens the range down to the
 * span's start: 257 pages, over linux-4.5's ceiling of 33, a full flush.
 * After mmap 0 and a write fault, munmap 0 frees the page again: another full
 * flush; had the mmap not taken the page back, this munmap would find it
 * already freed.
 */
Test(vm, munmap_after_mmap_frees_the_page_table_again)
{
	const char *w =
		"{\"name\": \"tables\","
		" \"regions\": [{\"name\": \"r\", \"chunks\": 2, \"chunk_size\": \"1M\","
		"                \"populate\": \"first\"}],"
		" \"tasks\": [{\"name\": \"t\", \"cpu\": 0, \"program\": ["
		"   {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 1},"
		"   {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 0},"
		"   {\"op\": \"mmap\", \"region\": \"r\", \"chunk\": 0},"
		"   {\"op\": \"access\", \"region\": \"r\", \"chunk\": 0,"
		"    \"pattern\": \"sequential\", \"pages\": 1, \"rounds\": 1, \"write\": 1,"
		"    \"cycles\": 10},"
		"   {\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 0}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_expect_eq(CPU(r, 0, nr_tlb_local_flush_one), 1, "munmap 1's present page");
	cr_expect_eq(CPU(r, 0, nr_tlb_local_flush_all), 2, "each munmap 0 frees the table");
	cr_expect_eq(CPU(r, 0, page_faults), 1);
	cr_expect_eq(r.result->total.stale_pwc, 0);
	support_run_free(&r);
}

/*
 * mmap raises total_vm again, which the 3.6 range rule reads: INVLPG each
 * page iff the range is at most min(tlb_lld_4k, total_vm) >> shift pages
 * (tiny-2cpu: 16 entries, shift 1).  "a" (4 pages) and "b" (6) make
 * total_vm 10, so munmap of "a" flushes its 4 pages one by one (4 <= 10 >> 1)
 * both times; had the mmap not counted a's pages again, the second munmap
 * would see 6 >> 1 = 3 and flush everything.
 */
Test(vm, mmap_raises_total_vm_for_the_range_rule)
{
	const char *w =
		"{\"name\": \"total_vm\","
		" \"regions\": [{\"name\": \"a\", \"size\": \"16K\", \"populate\": \"all\"},"
		"               {\"name\": \"b\", \"size\": \"24K\"}],"
		" \"tasks\": [{\"name\": \"t\", \"cpu\": 0, \"program\": ["
		"   {\"op\": \"munmap\", \"region\": \"a\"},"
		"   {\"op\": \"mmap\", \"region\": \"a\"},"
		"   {\"op\": \"munmap\", \"region\": \"a\"}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-3.6", NULL, w);
	cr_expect_eq(CPU(r, 0, nr_tlb_local_flush_one), 8);
	cr_expect_eq(CPU(r, 0, nr_tlb_local_flush_all), 0);
	support_run_free(&r);
}

/*
 * The new VMA is visible to the other CPUs from the call's global event,
 * syscall + vma_op (3150 cycles, ns on tiny-2cpu) after it entered the
 * kernel, not before.  cpu 0 unmaps the chunk, sets "go", computes 1000 cycles
 * and mmaps it: entry at about 9.3 us, return at 12.5 us.  cpu 1 sees "go" a
 * line transfer later, switches to its reader (2000 cycles, at 10.5 us),
 * computes @wait cycles and reads the chunk: 500 in, the mmap is under way and
 * the walk finds nothing (SIGSEGV); 8000 in, it faults the page in.
 */
static char *visibility_case(unsigned wait)
{
	return g_strdup_printf(
		"{\"name\": \"visible\","
		" \"regions\": [{\"name\": \"r\", \"size\": 16384, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"munmap\", \"region\": \"r\"},"
		"    {\"op\": \"set_flag\", \"flag\": \"go\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 1000},"
		"    {\"op\": \"mmap\", \"region\": \"r\"}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"go\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": %u},"
		"    {\"op\": \"access\", \"region\": \"r\", \"pattern\": \"sequential\", \"pages\": 1,"
		"     \"rounds\": 1, \"cycles\": 10}]}]}",
		wait);
}

Test(vm, mmap_is_visible_from_its_return)
{
	char *w = visibility_case(500);
	int code = -1;
	char *msg = support_run_error("tiny-2cpu.json", "linux-4.5", NULL, w, &code);
	cr_expect(strstr(msg, "$.tasks[1].program[2]: access to unmapped memory") != NULL, "%s",
		  msg);
	g_free(msg);
	g_free(w);

	w = visibility_case(8000);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_expect_eq(CPU(r, 1, page_faults), 1);
	support_run_free(&r);
	g_free(w);
}

/*
 * A write to the zero page whose fault is taken just before another CPU's
 * mprotect(read) lands, and handled just after it: the copy must not happen
 * in a read-only VMA (it used to abort); the write goes through on what is
 * mapped, as other write faults racing an mprotect do.  On tiny-2cpu the
 * mprotect lands about 5250 cycles after "go"; these delays put the fault's
 * start before that and its handling after it.
 */
Test(vm, zero_page_write_racing_mprotect_read)
{
	for (unsigned delay = 4000; delay <= 5000; delay += 500) {
		char *w = g_strdup_printf(
			"{\"name\": \"race\", \"regions\": [{\"name\": \"heap\", \"size\": \"4K\"}],"
			" \"tasks\": ["
			"  {\"name\": \"a\", \"cpu\": 0, \"program\": ["
			"    {\"op\": \"access\", \"region\": \"heap\", \"pattern\": \"sequential\","
			"     \"pages\": 1, \"rounds\": 1, \"write\": 0, \"cycles\": 10},"
			"    {\"op\": \"set_flag\", \"flag\": \"go\", \"value\": 1},"
			"    {\"op\": \"compute\", \"cycles\": %u},"
			"    {\"op\": \"access\", \"region\": \"heap\", \"pattern\": \"sequential\","
			"     \"pages\": 1, \"rounds\": 1, \"write\": 1, \"cycles\": 10}]},"
			"  {\"name\": \"b\", \"cpu\": 1, \"program\": ["
			"    {\"op\": \"wait_flag\", \"flag\": \"go\", \"value\": 1},"
			"    {\"op\": \"mprotect\", \"region\": \"heap\", \"prot\": \"read\"}]}]}",
			delay);
		struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
		cr_expect_eq(r.result->total.page_faults, 2, "delay %u", delay);
		cr_expect_eq(r.result->total.stale_hits, 0, "delay %u", delay);
		support_run_free(&r);
		g_free(w);
	}
}

/* ---- mmap_lock and the per-VMA lock (vm.c, rwsem.c) ------------------------- */

/*
 * cpu 0 writes the 4 pages of chunk 0 of region r (faults: nothing is
 * populated), sets flag "go" and makes @call; cpu 1 waits for the flag, then
 * 1000 cycles, and writes page 0 of its target: a fault that comes while
 * @call holds its locks (more than vma_op, 3000 cycles).  @merged: cpu 1's
 * target is chunk 1 of r, adjacent to chunk 0 (one VMA lock, mm.h), else
 * another region (a lock of its own).
 */
static char *lock_case(const char *call, bool merged)
{
	return g_strdup_printf(
		"{\"name\": \"locks\","
		" \"regions\": [{\"name\": \"r\", \"chunks\": 2, \"chunk_size\": 16384},"
		"              {\"name\": \"s\", \"size\": 16384}],"
		" \"tasks\": ["
		"  {\"name\": \"caller\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"r\", \"chunk\": 0, \"pattern\": \"sequential\","
		"     \"pages\": 4, \"rounds\": 1, \"write\": 1, \"cycles\": 10},"
		"    {\"op\": \"set_flag\", \"flag\": \"go\", \"value\": 1}, %s]},"
		"  {\"name\": \"faulter\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"go\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 1000},"
		"    {\"op\": \"access\", %s, \"pattern\": \"sequential\", \"pages\": 1,"
		"     \"rounds\": 1, \"write\": 1, \"cycles\": 10}]}]}",
		call, merged ? "\"region\": \"r\", \"chunk\": 1" : "\"region\": \"s\"");
}

static const char *const munmap_chunk0 = "{\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 0}";
static const char *const compute_instead = "{\"op\": \"compute\", \"cycles\": 10}";

static uint64_t self_transfer(const struct support_run *r)
{
	return r->topology->costs.line_transfer[DIST_SELF];
}

/*
 * Without per-VMA locks (linux-4.5) a fault takes mmap_lock for reading, so
 * one that comes while another CPU's munmap holds it for writing waits for
 * the rest of the munmap, its VMA work (vma_op) at least; without the munmap
 * it takes the lock at once: one RMW on the line cpu 0's faults wrote last,
 * a same-socket transfer.
 */
Test(vm, fault_waits_for_munmap_holding_mmap_lock)
{
	char *w = lock_case(munmap_chunk0, false);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	uint64_t vma_op = r.topology->costs.vma_op;
	cr_assert_eq(CPU(r, 1, page_faults), 1);
	cr_assert_eq(CPU(r, 1, mmap_lock_acquisitions), 1);
	cr_assert_eq(CPU(r, 0, mmap_lock_acquisitions), 4 + 1, "its faults and the munmap");
	cr_expect_gt(CPU(r, 1, mmap_lock_wait_cycles), vma_op, "the fault waited %lu cycles",
		     (unsigned long)CPU(r, 1, mmap_lock_wait_cycles));
	cr_expect_eq(r.result->total.vma_lock_acquisitions, 0, "no per-VMA locks in 4.5");
	support_run_free(&r);
	g_free(w);

	w = lock_case(compute_instead, false);
	r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_expect_eq(CPU(r, 1, mmap_lock_wait_cycles), r.topology->costs.line_transfer[DIST_SOCKET]);
	support_run_free(&r);
	g_free(w);
}

/*
 * A task that waits for mmap_lock sleeps (rwsem_down_{read,write}_slowpath()
 * schedule; no optimistic spinning): cpu 1 switches to idle and, once the
 * munmap's release wakes it (an IPI later), back: two context switches more
 * than when it does not wait, and it waits at least the IPI and the switch
 * back.  A reader (cpu 1's write fault) holds the lock from the hand-off; a
 * writer (cpu 1's own munmap of chunk 1) takes it with an RMW of its own
 * once it runs, on the line the hand-off left on cpu 0.
 */
Test(vm, mmap_lock_waiters_sleep)
{
	char *w = lock_case(munmap_chunk0, true);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	g_free(w);
	w = lock_case(compute_instead, true);
	struct support_run base = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	g_free(w);
	const struct topology_costs *costs = &base.topology->costs;
	cr_expect_eq(CPU(r, 1, context_switches), CPU(base, 1, context_switches) + 2);
	cr_expect_geq(CPU(r, 1, mmap_lock_wait_cycles),
		      costs->ipi_latency[DIST_SOCKET] + costs->context_switch);
	cr_expect_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);

	/* cpu 1 unmaps chunk 1 (its 4 pages never touched) instead of writing it. */
	w = lock_case(munmap_chunk0, true);
	const char *write_op = "{\"op\": \"access\", \"region\": \"r\", \"chunk\": 1, "
			       "\"pattern\": \"sequential\", \"pages\": 1,"
			       "     \"rounds\": 1, \"write\": 1, \"cycles\": 10}";
	cr_assert(strstr(w, write_op), "%s", w);
	char **parts = g_strsplit(w, write_op, 2);
	g_free(w);
	w = g_strjoinv("{\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 1}", parts);
	g_strfreev(parts);
	r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_expect_eq(CPU(r, 1, context_switches), CPU(base, 1, context_switches) + 2);
	cr_expect_geq(CPU(r, 1, mmap_lock_wait_cycles),
		      costs->ipi_latency[DIST_SOCKET] + costs->context_switch +
			  costs->line_transfer[DIST_SOCKET]);
	support_run_free(&r);
	support_run_free(&base);
	g_free(w);
}

/*
 * With per-VMA locks the same fault takes only its VMA's lock: a VMA of its
 * own is free however long the munmap holds mmap_lock (one self transfer,
 * mmap_lock untouched by cpu 1).  A VMA merged with the munmapped one shares
 * its lock, which munmap write-locked (vma_start_write()): the fault gives
 * up on it (vma_lock_abort) and takes mmap_lock for reading, where it waits
 * for the munmap.  The split leaves chunk 1 alone in its VMA, under the lock
 * the two chunks had, still marked until mmap_lock is dropped.
 */
Test(vm, per_vma_lock_fault_falls_back_to_mmap_lock_on_a_write_locked_vma)
{
	const char *const sets[] = {"per_vma_lock=true", "munmap_downgrade=false", NULL};
	char *w = lock_case(munmap_chunk0, false);
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
	cr_assert_eq(CPU(r, 1, page_faults), 1);
	cr_expect_eq(CPU(r, 1, mmap_lock_acquisitions), 0);
	cr_expect_eq(CPU(r, 1, vma_lock_acquisitions), 1);
	cr_expect_eq(CPU(r, 1, vma_lock_abort), 0);
	cr_expect_eq(CPU(r, 1, vma_lock_wait_cycles), self_transfer(&r));
	cr_expect_eq(CPU(r, 0, vma_lock_acquisitions), 4 + 1, "its faults, munmap's vma_start_write()");
	cr_expect_eq(CPU(r, 0, mmap_lock_acquisitions), 1);
	support_run_free(&r);
	g_free(w);

	w = lock_case(munmap_chunk0, true);
	r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
	cr_assert_eq(CPU(r, 1, page_faults), 1);
	cr_expect_eq(CPU(r, 1, vma_lock_abort), 1);
	cr_expect_eq(CPU(r, 1, vma_lock_acquisitions), 0);
	cr_expect_eq(CPU(r, 1, mmap_lock_acquisitions), 1);
	cr_expect_gt(CPU(r, 1, mmap_lock_wait_cycles), r.topology->costs.vma_op,
		     "the fault waited %lu cycles", (unsigned long)CPU(r, 1, mmap_lock_wait_cycles));
	cr_expect_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * mmap merges the mapping with its neighbours and write-locks their VMAs
 * (vma_merge()): cpu 0 unmaps chunk 0, then maps it again; cpu 1's fault on
 * chunk 1 comes during the mmap and falls back to mmap_lock.  A fault into
 * another region (s) finds its own VMA's lock free.
 */
Test(vm, mmap_write_locks_the_neighbour_it_merges_with)
{
	const char *const sets[] = {"per_vma_lock=true", NULL};
	/* cpu 1 wakes (a context switch, 2000 cycles) and computes 1000 cycles
	 * after the flag: its fault lands in the mmap (more than vma_op). */
	const char *remap = "{\"op\": \"munmap\", \"region\": \"r\", \"chunk\": 0},"
			    "{\"op\": \"set_flag\", \"flag\": \"go\", \"value\": 2},"
			    "{\"op\": \"compute\", \"cycles\": 1500},"
			    "{\"op\": \"mmap\", \"region\": \"r\", \"chunk\": 0}";
	for (unsigned merged = 0; merged < 2; merged++) {
		char *w = lock_case(remap, merged);
		/* cpu 1 waits for the second flag: the mmap's. */
		char **parts = g_strsplit(w, "\"wait_flag\", \"flag\": \"go\", \"value\": 1", 2);
		g_free(w);
		w = g_strjoinv("\"wait_flag\", \"flag\": \"go\", \"value\": 2", parts);
		g_strfreev(parts);
		struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
		cr_assert_eq(CPU(r, 1, page_faults), 1);
		cr_expect_eq(CPU(r, 1, vma_lock_abort), merged, "merged %u", merged);
		cr_expect_eq(CPU(r, 1, mmap_lock_acquisitions), merged, "merged %u", merged);
		cr_expect_eq(CPU(r, 0, vma_lock_acquisitions), 4 + 1 + 1,
			     "its faults, munmap's and mmap's vma_start_write()");
		support_run_free(&r);
		g_free(w);
	}
}

/*
 * 4.20+ munmap downgrades mmap_lock once the VMA is detached (which ends its
 * VMA write lock too): a fault queued behind it gets in at the downgrade,
 * while the zap and the flush go on, not at the return.  Both with mmap_lock
 * (4.5 plus the knob) and with a merged VMA's lock (the fault gives up on it
 * and waits for mmap_lock).
 */
Test(vm, munmap_downgrade_lets_faults_in_before_the_flush)
{
	const char *const plain[][3] = {
		{"munmap_downgrade=false", NULL, NULL},
		{"munmap_downgrade=true", NULL, NULL},
		{"munmap_downgrade=false", "per_vma_lock=true", NULL},
		{"munmap_downgrade=true", "per_vma_lock=true", NULL},
	};
	uint64_t wait[4];
	for (unsigned i = 0; i < 4; i++) {
		bool vma = i >= 2;
		char *w = lock_case(munmap_chunk0, vma);
		struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", plain[i], w);
		cr_assert_eq(CPU(r, 1, page_faults), 1);
		cr_expect_eq(CPU(r, 1, vma_lock_abort), vma ? 1 : 0);
		wait[i] = CPU(r, 1, mmap_lock_wait_cycles);
		cr_expect_eq(r.result->total.stale_hits, 0);
		support_run_free(&r);
		g_free(w);
	}
	/* The flush alone (an IPI to cpu 1 and its acknowledgement) takes
	 * more than the IPI's latency (1500) off the wait. */
	cr_expect_gt(wait[0], wait[1] + 1500, "mmap_lock: %lu vs %lu", (unsigned long)wait[0],
		     (unsigned long)wait[1]);
	cr_expect_gt(wait[2], wait[3] + 1500, "VMA lock: %lu vs %lu", (unsigned long)wait[2],
		     (unsigned long)wait[3]);
}

/*
 * madvise(DONTNEED) takes mmap_lock for reading: two CPUs' calls on their own
 * chunks hold it together, neither waits for the other's zap and flush, but
 * each RMW pulls the line: cpu 0 asks first and takes the line nobody wrote
 * (a self transfer); cpu 1 asks while cpu 0 holds and takes it from cpu 0
 * (a same-socket transfer); their releases pull it back and forth again.
 */
Test(vm, madvise_readers_share_mmap_lock_but_bounce_its_line)
{
	const char *w =
		"{\"name\": \"readers\","
		" \"regions\": [{\"name\": \"r\", \"chunks\": 2, \"chunk_size\": 16384,"
		"               \"populate\": \"all\"}],"
		" \"tasks\": [{\"name\": \"t\", \"count\": 2, \"cpu\": \"$thread\", \"program\": ["
		"   {\"op\": \"compute\", \"cycles\": \"30000 + 500 * $thread\"},"
		"   {\"op\": \"madvise\", \"region\": \"r\", \"chunk\": \"$thread\","
		"    \"advice\": \"dontneed\"}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	const struct topology_costs *costs = &r.topology->costs;
	for (unsigned c = 0; c < 2; c++) {
		cr_expect_eq(CPU(r, c, syscalls), 1);
		cr_expect_eq(CPU(r, c, mmap_lock_acquisitions), 1);
	}
	cr_expect_eq(CPU(r, 0, mmap_lock_wait_cycles), costs->line_transfer[DIST_SELF]);
	cr_expect_eq(CPU(r, 1, mmap_lock_wait_cycles), costs->line_transfer[DIST_SOCKET]);
	cr_expect_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
}

/*
 * End to end: the shipped tlb_flush2 (36 tasks on amd-milan-36c, as
 * docs/validation.md section 7), shortened.  Its tasks' chunks are one
 * region's, so under linux-6.15's per-VMA locks every task faults under one
 * shared VMA lock: every fault takes it and never mmap_lock; every syscall
 * takes mmap_lock; munmap and mmap also write-lock the VMA.  The shared line
 * alone makes each fault's wait at least a cross-CCD transfer on average.
 */
Test(vm, tlb_flush2_faults_share_one_vma_lock)
{
	char *json = NULL;
	cr_assert(g_file_get_contents(TLBSIM_SOURCE_DIR "/workloads/tlb_flush2.json", &json, NULL,
				      NULL));
	const char *const edits[][2] = {{"\"threads\": \"$cpus\"", "\"threads\": 36"},
					{"\"iterations\": 2000", "\"iterations\": 300"},
					{"\"warmup\": 200", "\"warmup\": 10"}};
	for (unsigned i = 0; i < G_N_ELEMENTS(edits); i++) {
		cr_assert(strstr(json, edits[i][0]), "tlb_flush2.json has no %s", edits[i][0]);
		char **parts = g_strsplit(json, edits[i][0], 2);
		g_free(json);
		json = g_strjoinv(edits[i][1], parts);
		g_strfreev(parts);
	}
	struct support_run r = support_run("amd-milan-36c", "linux-6.15", NULL, json);
	const struct counters *t = &r.result->total;
	/* 310 loops: a write and a read fault each, a madvise, and a munmap
	 * and an mmap after each pass over the 256 pages (one pass here). */
	cr_assert_eq(t->page_faults, 36 * 310 * 2);
	cr_assert_eq(t->syscalls, 36 * (310 + 2));
	cr_expect_eq(t->mmap_lock_acquisitions, t->syscalls + t->vma_lock_abort);
	uint64_t locked = t->page_faults - t->vma_lock_abort;
	cr_expect_lt(t->vma_lock_abort, t->page_faults / 10, "%lu of %lu faults gave up",
		     (unsigned long)t->vma_lock_abort, (unsigned long)t->page_faults);
	/* Each munmap marks its VMA, each mmap the one or two it merges with. */
	cr_expect_geq(t->vma_lock_acquisitions, locked + 36 + 36);
	cr_expect_leq(t->vma_lock_acquisitions, locked + 36 + 2 * 36);
	cr_expect_geq(t->vma_lock_wait_cycles / locked,
		      r.topology->costs.line_transfer[DIST_SOCKET], "%lu cycles per fault",
		      (unsigned long)(t->vma_lock_wait_cycles / locked));
	cr_expect_gt(t->mmap_lock_wait_cycles, 0);
	cr_expect_eq(t->stale_hits, 0);
	support_run_free(&r);
	g_free(json);
}

/*
 * tlb_finish_mmu() with another gather of the mm in flight: two tasks on two
 * CPUs madvise(DONTNEED) their own 4-page chunk, of which only the first page
 * is present, the second 100 cycles after the first, while the first still
 * waits for its IPI.  The second sees tlb_flush_pending at 2: from 5.2
 * (linux-6.1) it flushes everything, so cpu 0 takes a full flush for it; in
 * 4.13-5.1 (linux-4.20) its whole 4-page range rather than the one page it
 * gathered.  With the knob at "none", cpu 0 flushes the one page.
 */
static const char *const nested_case =
	"{\"name\": \"nested\","
	" \"regions\": [{\"name\": \"r\", \"chunks\": 2, \"chunk_size\": 16384,"
	"               \"populate\": \"first\"}],"
	" \"tasks\": [{\"name\": \"t\", \"count\": 2, \"cpu\": \"$thread\", \"program\": ["
	"   {\"op\": \"compute\", \"cycles\": \"30000 + 100 * $thread\"},"
	"   {\"op\": \"madvise\", \"region\": \"r\", \"chunk\": \"$thread\","
	"    \"advice\": \"dontneed\"}]}]}";

static struct support_run nested_run(const char *policy, const char *knob)
{
	char *set = g_strdup_printf("nested_flush=%s", knob);
	const char *const sets[] = {set, NULL};
	struct support_run r = support_run("tiny-2cpu-pcid.json", policy, sets, nested_case);
	g_free(set);
	return r;
}

Test(vm, nested_gather_flushes_everything_from_5_2)
{
	struct support_run r = nested_run("linux-6.1", "full");
	cr_expect_eq(CPU(r, 0, tlb_remote_shootdown), 1);
	cr_expect_eq(CPU(r, 0, tlb_remote_shootdown_full), 1, "cpu 1's nested gather");
	cr_expect_eq(CPU(r, 0, invlpg), 1, "only cpu 0's own page, by INVLPG");
	support_run_free(&r);
	r = nested_run("linux-6.1", "none");
	cr_expect_eq(CPU(r, 0, tlb_remote_shootdown_full), 0);
	cr_expect_eq(CPU(r, 0, invlpg), 2, "its own page and cpu 1's");
	support_run_free(&r);
}

Test(vm, nested_gather_flushes_its_range_in_4_13_to_5_1)
{
	struct support_run r = nested_run("linux-4.20", "range");
	cr_expect_eq(CPU(r, 0, invlpg), 1 + 4, "its own page, then cpu 1's whole chunk");
	cr_expect_eq(CPU(r, 0, tlb_remote_shootdown_full), 0, "4 pages: under the ceiling");
	support_run_free(&r);
	r = nested_run("linux-4.20", "none");
	cr_expect_eq(CPU(r, 0, invlpg), 1 + 1);
	support_run_free(&r);
}

/*
 * cpu 1 runs in the mm once (touching page 0 of the 8-page shared "victim",
 * so that read faults allocate pages: MADV_PAGEOUT skips the zero page) and
 * waits: lazy on it, still in mm_cpumask on x86 6.1, so reclaim defers.
 * cpu 0 then runs @calls (a comma-separated list of ops).
 */
static char *lazy_other_case(const char *populate, const char *calls)
{
	return g_strdup_printf(
		"{\"name\": \"lazy\","
		" \"regions\": [{\"name\": \"victim\", \"size\": 32768, \"shared\": true,"
		"   \"populate\": \"%s\"}],"
		" \"tasks\": ["
		"  {\"name\": \"main\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"ready\", \"value\": 1}, %s,"
		"    {\"op\": \"set_flag\", \"flag\": \"done\", \"value\": 1}]},"
		"  {\"name\": \"other\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": 1, \"rounds\": 1, \"cycles\": 1},"
		"    {\"op\": \"set_flag\", \"flag\": \"ready\", \"value\": 1},"
		"    {\"op\": \"wait_flag\", \"flag\": \"done\", \"value\": 1}]}]}",
		populate, calls);
}

#define PAGEOUT "{\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"pageout\"}"

/*
 * After a batched pageout the munmap's zap first flushes the mm whole
 * (flush_tlb_batched_pending() -> flush_tlb_mm(), freed_tables): the IPI
 * reaches lazy cpu 1, which leaves the mm; the munmap's own flush (its freed
 * page table) is then local.  Without the batch (per-page reclaim) that own
 * flush is what reaches cpu 1, as a range.  Sends: the batch (full) and the
 * pageout walk's range; then flush_tlb_mm (full).
 */
Test(vm, munmap_after_batched_reclaim_flushes_the_mm_first)
{
	char *w = lazy_other_case(
		"all", PAGEOUT ", {\"op\": \"munmap\", \"region\": \"victim\"}");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-6.1", NULL, w);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi_full), 2);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), 3);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
	const char *const per_page[] = {"reclaim_flush=per_page", NULL};
	r = support_run("tiny-2cpu-pcid.json", "linux-6.1", per_page, w);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi_full), 0);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	support_run_free(&r);
	g_free(w);
}

/* mprotect's change_pte_range() does the same; with nothing present it
 * flushes nothing of its own, so per-page reclaim never reaches cpu 1. */
Test(vm, mprotect_after_batched_reclaim_flushes_the_mm_first)
{
	char *w = lazy_other_case("all", PAGEOUT ", {\"op\": \"mprotect\", \"region\": \"victim\","
					 " \"prot\": \"read\"}");
	struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-6.1", NULL, w);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 1);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi_full), 2);
	support_run_free(&r);
	const char *const per_page[] = {"reclaim_flush=per_page", NULL};
	r = support_run("tiny-2cpu-pcid.json", "linux-6.1", per_page, w);
	cr_assert_eq(CPU(r, 1, nr_tlb_remote_flush_received), 0);
	support_run_free(&r);
	g_free(w);
}

/*
 * A write fault maps its page dirty: two pages written in (nothing populated)
 * are each flushed before they are written out (2 sends), then the pageout
 * walk's range (1).  Read in, they are clean: the batch's one flush at the
 * end and the walk's.
 */
Test(vm, write_faults_map_pages_dirty)
{
	const char *touch = "{\"op\": \"access\", \"region\": \"victim\","
			    " \"pattern\": \"sequential\", \"pages\": 2, \"rounds\": 1,"
			    " \"write\": %d, \"cycles\": 1}, " PAGEOUT;
	for (int write = 0; write <= 1; write++) {
		char *calls = g_strdup_printf(touch, write);
		char *w = lazy_other_case("none", calls);
		struct support_run r = support_run("tiny-2cpu-pcid.json", "linux-6.1", NULL, w);
		cr_assert_eq(CPU(r, 0, pages_reclaimed), 2, "write %d", write);
		cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), write ? 2 + 1 : 1 + 1, "write %d",
			     write);
		support_run_free(&r);
		g_free(w);
		g_free(calls);
	}
}
