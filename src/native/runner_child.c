/*
 * A child of a native run: one mm's regions mapped and populated, its
 * threads started and held at the barrier, then each running its program.
 *
 * Chunks are mapped as one mapping, placed as tlbsim places them (chunk 0
 * highest), then split into one VMA each by MADV_DONTDUMP on every other
 * chunk: neighbours then differ in vm_flags and never merge, and no gap
 * changes which munmap frees a page-table page.  (VM_DONTDUMP only leaves
 * the chunk out of core dumps; MADV_DONTFORK, which did this before the
 * fork op, would keep a forked child from copying it.)
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "runner_impl.h"
#include "tlbsim/util/types.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#define ALIGN_2M (UINT64_C(1) << 21)
/* Malloc'ed by each task before the window, and never given back (see
 * runner_child_main()): an access op's address table of up to 128 Ki pages. */
#define WARM_MALLOC_BYTES (1u << 20)

/* ---- a child: its regions and its threads ------------------------------------------ */

static uintptr_t round_up_2m(uintptr_t a)
{
	return (a + ALIGN_2M - 1) & ~(uintptr_t)(ALIGN_2M - 1);
}

/*
 * A 2 MiB-aligned place for @bytes (over-map, trim), with a 2 MiB PROT_NONE
 * guard below its start and above its last 2 MiB boundary: tlbsim leaves
 * 2 MiB between regions, so no other mapping shares a page-table page with
 * the region and decides whether a munmap frees one.  The region itself is
 * mapped over the returned address with MAP_FIXED.
 */
static uint8_t *reserve_aligned(uint64_t bytes)
{
	uint64_t span = round_up_2m(bytes) + 3 * ALIGN_2M;
	uint8_t *p = mmap(NULL, span + ALIGN_2M, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint8_t *guard_low = (uint8_t *)round_up_2m((uintptr_t)p);
	uint8_t *base = guard_low + ALIGN_2M;
	uint8_t *end = base + bytes;
	uint8_t *guard_high = (uint8_t *)round_up_2m((uintptr_t)end);
	uint8_t *top = p + span + ALIGN_2M;
	if (guard_low > p)
		munmap(p, (size_t)(guard_low - p));
	if (guard_high > end)
		munmap(end, (size_t)(guard_high - end));
	munmap(guard_high + ALIGN_2M, (size_t)(top - guard_high - ALIGN_2M));
	return base;
}

static bool map_fail(struct nrun *run, unsigned i, const char *what, int err)
{
	const struct region *r = &run->w->regions[i];
	const char *hint = "";
	if (r->hugetlb && err == ENOMEM)
		hint = " (hugetlb: not enough huge pages reserved; see /proc/sys/vm/nr_hugepages)";
	runner_fail(run->sh, "%s: $.regions[%u] (%s): %s: %s%s", run->file, i, r->name, what,
		    g_strerror(err), hint);
	return false;
}

static int map_flags(const struct region *r)
{
	int flags = MAP_ANONYMOUS | (r->shared ? MAP_SHARED : MAP_PRIVATE);
	if (r->hugetlb)
		flags |= MAP_HUGETLB | (int)(page_size_shift(r->page_size) << MAP_HUGE_SHIFT);
	return flags;
}

static bool map_region(struct nrun *run, unsigned i)
{
	const struct region *r = &run->w->regions[i];
	struct nregion *nr = &run->regions[i];
	uint64_t bytes = r->chunks * r->chunk_bytes;
	nr->map_flags = map_flags(r);
	nr->thp = r->page_size == PS_2M && !r->hugetlb;
	uint8_t *at = NULL;
	if (!r->hugetlb && (r->placement == PLACEMENT_ALIGNED || nr->thp) &&
	    !(at = reserve_aligned(bytes)))
		return map_fail(run, i, "mmap (2 MiB-aligned reservation)", errno);
	void *p =
	    mmap(at, bytes, PROT_READ | PROT_WRITE, nr->map_flags | (at ? MAP_FIXED : 0), -1, 0);
	if (p == MAP_FAILED)
		return map_fail(run, i, r->hugetlb ? "mmap(MAP_HUGETLB)" : "mmap", errno);
	nr->base = p;
	nr->mapped = g_new(atomic_bool, r->chunks);
	for (uint64_t c = 0; c < r->chunks; c++) {
		atomic_init(&nr->mapped[c], true);
		if (!runner_chunk_setup(run, i, c))
			return map_fail(run, i,
					nr->thp ? "madvise(MADV_HUGEPAGE or DONTDUMP)"
						: "madvise(MADV_DONTDUMP)",
					errno);
	}
	return true;
}

/* One byte per page written: tlbsim starts populated regions populated. */
static void populate_region(struct nrun *run, unsigned i)
{
	const struct region *r = &run->w->regions[i];
	uint64_t size = page_size_bytes(r->page_size);
	for (uint64_t c = 0; c < r->chunks && r->populate != POPULATE_NONE; c++) {
		volatile uint8_t *chunk = runner_chunk_addr(run, i, c);
		uint64_t n = r->populate == POPULATE_ALL ? r->chunk_bytes / size : 1;
		for (uint64_t p = 0; p < n; p++)
			chunk[p * size] = 1;
	}
}

/*
 * Nothing a task needs may fault in the window: a fault takes the mmap_lock
 * (before per-VMA locks, Linux 6.4) and queues behind a task that munmaps
 * in a loop, so readers that should run along would not.  A fork maps file
 * pages lazily, so the program's and libraries' pages are read here once.
 */
/* Reads of whatever the pages hold: not this program's objects, so not
 * AddressSanitizer's business (its redzones lie in them). */
__attribute__((no_sanitize_address)) static void touch_range(unsigned long start, unsigned long end)
{
	for (unsigned long a = start; a < end; a += 4096)
		(void)*(volatile const char *)a;
}

static void prefault_files(void)
{
	char *maps = NULL;
	if (!g_file_get_contents("/proc/self/maps", &maps, NULL, NULL))
		return;
	char **lines = g_strsplit(maps, "\n", -1);
	for (char **l = lines; *l; l++) {
		unsigned long start = 0, end = 0;
		char perms[5] = "";
		if (sscanf(*l, "%lx-%lx %4s", &start, &end, perms) != 3 || perms[0] != 'r' ||
		    !strchr(*l, '/'))
			continue;
		touch_range(start, end);
	}
	g_strfreev(lines);
	g_free(maps);
	(void)runner_now_ns(); /* the vDSO's data pages */
}

/* The stack a task's program needs, touched before the window. */
#define STACK_TOUCH_BYTES (128u << 10)

__attribute__((noinline)) static void touch_stack(void)
{
	char buf[STACK_TOUCH_BYTES];
	volatile char *p = buf;
	for (unsigned i = 0; i < STACK_TOUCH_BYTES; i += 4096)
		p[i] = 0;
}

/* Tasks of this process at the start barrier: the main thread waits for all
 * of them before it resets the mask and reports them ready. */
static atomic_int local_ready;

static void *task_thread(void *arg)
{
	struct ntask *ts = arg;
	struct shared *sh = ts->run->sh;
	if (ts->out->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(ts->out->cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0)
			runner_fail(sh, "$.tasks[%u].cpu: sched_setaffinity(CPU %d): %s", ts->group,
				    ts->out->cpu, g_strerror(errno));
	}
	/* The thread's malloc arena made and grown now: in the window a first
	 * malloc would mmap() and mprotect(), queueing behind the mmap_lock of
	 * a task that munmaps in a loop (seen: readers that never started). */
	g_free(g_malloc(WARM_MALLOC_BYTES));
	touch_stack();
	(void)*(volatile const char *)ts->out;
	atomic_fetch_add(&local_ready, 1);
	runner_futex_wake(&local_ready);
	for (int s; (s = atomic_load(&sh->start)) == 0;)
		runner_futex_wait(&sh->start, 0);
	if (atomic_load(&sh->start) == 1)
		runner_task_run(ts);
	atomic_fetch_add(&sh->done, 1);
	runner_futex_wake(&sh->done);
	/* Not gone before the window ends: glibc's thread exit madvise()s the
	 * stack away, a flush the workload did not ask for. */
	for (int r; (r = atomic_load(&sh->release)) == 0;)
		runner_futex_wait(&sh->release, 0);
	return NULL;
}

/* A fault in a task (an access to an unmapped or read-only page): say
 * where, then end the child; the coordinator sees it die. */
static struct shared *fault_shared;

static void on_fault(int sig)
{
	const char *path = runner_current_path();
	int expected = 0;
	if (atomic_compare_exchange_strong(&fault_shared->failed, &expected, -1)) {
		snprintf(fault_shared->error, RUNNER_ERROR_LEN,
			 "%s: %s: the access hit a page the workload unmapped or made read-only "
			 "(tlbsim faults it in; the real kernel kills the task)",
			 path ? path : "workload", strsignal(sig));
		atomic_store(&fault_shared->failed, 1);
	}
	/* The coordinator sleeps on these for up to 10 s: wake it now. */
	runner_futex_wake(&fault_shared->done);
	runner_futex_wake(&fault_shared->ready);
	_exit(2);
}

/*
 * Leave in mm_cpumask only the CPUs that run this process now, as tlbsim's
 * mm starts: every CPU the setup ran on stays in the mask, lazily, until a
 * flush that freed page tables reaches it (it then switches to init_mm and
 * leaves), and until then every flush traces a "remote ipi send".  So free
 * a page-table page: touch one page of a 2 MiB-aligned span (THP off, so
 * that it gets a PTE page) and unmap it.  Done on the CPU of the process's first task
 * if it is pinned, since this thread's own CPU stays in the mask.
 */
static void reset_mm_cpumask(const struct nrun *run, unsigned mm)
{
	const struct workload *w = run->w;
	int cpu = -1;
	for (unsigned g = 0, id = 0; g < w->nr_groups && cpu < 0; id += w->groups[g].count, g++)
		if (w->groups[g].mm == mm && w->groups[g].count > 0)
			cpu = run->sh->tasks[id].cpu;
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		(void)sched_setaffinity(0, sizeof(set), &set);
	}
	size_t len = 4u << 20;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	uint8_t *span = (uint8_t *)(((uintptr_t)p + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
	(void)madvise(p, len, MADV_NOHUGEPAGE);
	*(volatile uint8_t *)span = 1;
	munmap(p, len);
}

/* Wait for this process's @n tasks at the barrier, reset the mask, then
 * report them to the coordinator. */
static void report_ready(struct nrun *run, unsigned mm, int n)
{
	for (int now; (now = atomic_load(&local_ready)) < n && !atomic_load(&run->sh->failed);)
		runner_futex_wait(&local_ready, now);
	reset_mm_cpumask(run, mm);
	atomic_fetch_add(&run->sh->ready, n);
	runner_futex_wake(&run->sh->ready);
}

_Noreturn void runner_child_main(struct nrun *run, unsigned mm)
{
	const struct workload *w = run->w;
	fault_shared = run->sh;
	/* Freed memory stays in the arenas, below the mmap threshold, so a
	 * task's malloc in the window makes no system call. */
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	signal(SIGSEGV, on_fault);
	signal(SIGBUS, on_fault);
	for (unsigned i = 0; i < w->nr_regions; i++)
		if (w->regions[i].mm == mm && !map_region(run, i))
			_exit(2);
	for (unsigned i = 0; i < w->nr_regions; i++)
		if (w->regions[i].mm == mm)
			populate_region(run, i);
	prefault_files();
	for (size_t off = 0; off < run->shared_bytes; off += 4096)
		(void)((volatile const char *)run->sh)[off];
	GPtrArray *threads = g_ptr_array_new();
	for (unsigned g = 0, id = 0; g < w->nr_groups; g++) {
		for (unsigned t = 0; t < w->groups[g].count; t++, id++) {
			if (w->groups[g].mm != mm)
				continue;
			struct ntask *ts = g_new0(struct ntask, 1);
			*ts = (struct ntask){.run = run,
					     .id = id,
					     .group = g,
					     .thread = t,
					     .out = &run->sh->tasks[id]};
			rng_seed_stream(&ts->rng, run->o->seed, id);
			pthread_t *th = g_new(pthread_t, 1);
			if (pthread_create(th, NULL, task_thread, ts) != 0) {
				runner_fail(run->sh, "pthread_create: %s", g_strerror(errno));
				_exit(2);
			}
			g_ptr_array_add(threads, th);
		}
	}
	report_ready(run, mm, (int)threads->len);
	for (unsigned i = 0; i < threads->len; i++)
		pthread_join(*(pthread_t *)g_ptr_array_index(threads, i), NULL);
	for (int r; (r = atomic_load(&run->sh->release)) == 0;)
		runner_futex_wait(&run->sh->release, 0);
	_exit(0);
}
