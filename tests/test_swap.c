/*
 * The LRU's per-CPU add batches and lock (src/kernel/swap.c), counted and timed by
 * hand on tiny-2cpu: tasks fault pages in and give them back with
 * MADV_DONTNEED, as will-it-scale's tlb_flush2 does.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"

/* @tasks tasks (task t on cpu @cpu, an expression of $thread) each fault in
 * @pages pages of their own chunk one by one, freeing each right after
 * (@dontneed) or never. */
static char *fault_loop_on(unsigned tasks, unsigned pages, bool dontneed, const char *cpu)
{
	return g_strdup_printf(
	    "{\"name\": \"lru\", \"regions\": [{\"name\": \"heap\", \"chunks\": %u, "
	    "\"chunk_size\": \"%u * 4K\"}],"
	    " \"tasks\": [{\"name\": \"t\", \"count\": %u, \"cpu\": \"%s\", \"program\": ["
	    "  {\"op\": \"loop\", \"count\": %u, \"var\": \"i\", \"body\": ["
	    "    {\"op\": \"access\", \"region\": \"heap\", \"chunk\": \"$thread\","
	    "     \"pattern\": \"sequential\", \"first\": \"$i\", \"pages\": 1, \"rounds\": 1,"
	    "     \"write\": 1, \"cycles\": 10}%s]}]}]}",
	    tasks, pages, tasks, cpu, pages,
	    dontneed ? ", {\"op\": \"madvise\", \"region\": \"heap\", \"chunk\": \"$thread\","
		       " \"advice\": \"dontneed\", \"first\": \"$i\", \"pages\": 1}"
		     : "");
}

static struct support_run run_on(const char *topology, const char *cpu, unsigned tasks,
				 unsigned pages, bool dontneed, bool drain)
{
	const char *const sets[] = {drain ? "lru_add_drain_on_free=true"
					  : "lru_add_drain_on_free=false",
				    NULL};
	char *w = fault_loop_on(tasks, pages, dontneed, cpu);
	struct support_run r = support_run(topology, "linux-4.5", sets, w);
	g_free(w);
	return r;
}

static struct support_run run(unsigned tasks, unsigned pages, bool dontneed, bool drain)
{
	return run_on("tiny-2cpu.json", "$thread", tasks, pages, dontneed, drain);
}

/* A batch drains when its 15th page comes in, and not before. */
Test(swap, new_pages_reach_the_lock_fifteen_at_a_time)
{
	unsigned pages[] = {14, 15, 30, 44};
	uint64_t drains[] = {0, 1, 2, 2};
	for (unsigned i = 0; i < G_N_ELEMENTS(pages); i++) {
		struct support_run r = run(1, pages[i], false, true);
		cr_expect_eq(CPU(r, 0, page_faults), pages[i]);
		cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), drains[i], "%u pages", pages[i]);
		/* Alone, the lock and the list are this CPU's lines: self transfers
		 * (20 each) and lru_page (40) for each of the 15 pages. */
		cr_expect_eq(CPU(r, 0, lru_lock_cycles), drains[i] * (20 + 20 + 15 * 40));
		support_run_free(&r);
	}
}

/*
 * Before 6.15 every free drains the batch first: a fault-and-free loop takes
 * the lock twice per page (the page onto the list, then off it), 80 cycles
 * each alone.  Without the drain the freed page stays in the batch until it
 * fills: the 15th fault drains the batch (its 15 pages on, the 14 freed ones
 * off again) and that page, now on the list, takes the lock once more when
 * freed: two acquisitions per 15 pages.
 */
Test(swap, free_drains_the_batch_before_6_15_only)
{
	struct support_run r = run(1, 10, true, true);
	cr_expect_eq(CPU(r, 0, page_faults), 10);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 20);
	cr_expect_eq(CPU(r, 0, lru_lock_cycles), 20 * 80);
	support_run_free(&r);

	r = run(1, 10, true, false);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 0);
	support_run_free(&r);

	r = run(1, 30, true, false);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 4);
	cr_expect_eq(CPU(r, 0, lru_lock_cycles), 2 * (20 + 20 + 29 * 40) + 2 * 80);
	support_run_free(&r);
}

/* Two CPUs on the lock: each holder gets it a socket transfer (100) after
 * the other's release, and the list's lines too, so the same work costs
 * more than twice one CPU's, and sometimes waits for the holder. */
Test(swap, the_lock_is_a_contended_line)
{
	struct support_run one = run(1, 40, true, true);
	struct support_run two = run(2, 40, true, true);
	for (unsigned c = 0; c < 2; c++)
		cr_expect_eq(CPU(two, c, lru_lock_acquisitions), 80, "cpu %u", c);
	uint64_t both = CPU(two, 0, lru_lock_cycles) + CPU(two, 1, lru_lock_cycles);
	cr_expect_gt(both, 2 * CPU(one, 0, lru_lock_cycles) + 2 * 80 * (100 - 20),
		     "%lu cycles for two CPUs, %lu for one", (unsigned long)both,
		     (unsigned long)CPU(one, 0, lru_lock_cycles));
	support_run_free(&one);
	support_run_free(&two);
}

/* One lock per node: on tiny-2socket, CPUs 0 and 2 are on different sockets
 * and each takes its own lock as if alone (its own lines, 80 cycles a take);
 * CPUs 0 and 1 share socket 0's and pay for each other. */
Test(swap, each_socket_has_its_own_lock)
{
	struct support_run apart = run_on("tiny-2socket.json", "$thread * 2", 2, 40, true, true);
	for (unsigned c = 0; c <= 2; c += 2) {
		cr_expect_eq(CPU(apart, c, lru_lock_acquisitions), 80, "cpu %u", c);
		cr_expect_eq(CPU(apart, c, lru_lock_cycles), 80 * 80, "cpu %u", c);
	}
	struct support_run together = run_on("tiny-2socket.json", "$thread", 2, 40, true, true);
	cr_expect_gt(CPU(together, 0, lru_lock_cycles) + CPU(together, 1, lru_lock_cycles),
		     2 * 80 * 80);
	support_run_free(&apart);
	support_run_free(&together);
}

/* Hugetlb pages are never on the LRU: faulting them in and unmapping them
 * takes no lock; the same on 4K pages does. */
Test(swap, hugetlb_pages_stay_off_the_lru)
{
	const char *fmt =
	    "{\"name\": \"huge\", \"regions\": [{\"name\": \"r\", \"size\": \"4M\"%s}],"
	    " \"tasks\": [{\"name\": \"t\", \"program\": ["
	    "  {\"op\": \"access\", \"region\": \"r\", \"pattern\": \"sequential\", \"pages\": 2,"
	    "   \"rounds\": 1, \"write\": 1, \"cycles\": 10},"
	    "  {\"op\": \"munmap\", \"region\": \"r\"}]}]}";
	char *w = g_strdup_printf(fmt, ", \"page_size\": \"2M\", \"hugetlb\": true");
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_expect_eq(CPU(r, 0, page_faults), 2);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 0);
	support_run_free(&r);
	g_free(w);
	w = g_strdup_printf(fmt, "");
	r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_expect_eq(CPU(r, 0, page_faults), 2);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 2, "drain the batch, then free");
	support_run_free(&r);
	g_free(w);
}

/*
 * A list operation writes its run's outer neighbours, which another CPU's
 * pages are once another CPU used the list: list_add() the old first entry,
 * list_del() the prev and next entries.  With 6.15's batches (no drain on
 * free), on tiny-2cpu (a transfer 100, self 20, lru_page 40): cpu 0 faults 15
 * pages in (its 15th drains them: the first holder, 20 + 20 + 15 x 40), cpu 1
 * then does the same after cpu 0's release (100 + 100 for the lock and the
 * list, 100 for the old first entry, 15 x 40), and cpu 0 then frees its
 * first page, now on the list (100 + 100, 2 x 100 for its neighbours, 40).
 */
Test(swap, list_operations_write_the_neighbours_other_cpus_wrote)
{
	const char *const sets[] = {"lru_add_drain_on_free=false", NULL};
	const char *w =
	    "{\"name\": \"neighbours\", \"regions\": [{\"name\": \"heap\", \"chunks\": 2,"
	    " \"chunk_size\": \"64K\"}], \"tasks\": ["
	    " {\"name\": \"a\", \"cpu\": 0, \"program\": ["
	    "  {\"op\": \"access\", \"region\": \"heap\", \"chunk\": 0, \"pattern\": \"sequential\","
	    "   \"pages\": 15, \"rounds\": 1, \"write\": 1, \"cycles\": 10},"
	    "  {\"op\": \"sleep\", \"ms\": 2},"
	    "  {\"op\": \"madvise\", \"region\": \"heap\", \"chunk\": 0, \"advice\": \"dontneed\","
	    "   \"first\": 0, \"pages\": 1}]},"
	    " {\"name\": \"b\", \"cpu\": 1, \"program\": ["
	    "  {\"op\": \"sleep\", \"ms\": 1},"
	    "  {\"op\": \"access\", \"region\": \"heap\", \"chunk\": 1, \"pattern\": \"sequential\","
	    "   \"pages\": 15, \"rounds\": 1, \"write\": 1, \"cycles\": 10}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", sets, w);
	cr_expect_eq(CPU(r, 0, lru_lock_acquisitions), 2);
	cr_expect_eq(CPU(r, 1, lru_lock_acquisitions), 1);
	cr_expect_eq(CPU(r, 0, lru_lock_cycles), (20 + 20 + 15 * 40) + (100 + 100 + 2 * 100 + 40));
	cr_expect_eq(CPU(r, 1, lru_lock_cycles), 100 + 100 + 100 + 15 * 40);
	support_run_free(&r);
}
