/*
 * fork + exit + waitpid (src/kernel/fork.c, src/workload/interp_fork.c) on
 * qemu-x86-4 (no PCID: every switch to another mm is a full flush) under
 * linux-6.1, counts worked by hand from the 6.1 paths in fork.c's header.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/util/histogram.h"

/*
 * The parent, pinned on cpu 0, owns the 4-page "buf"; with @reader, a thread
 * of the same process pinned on cpu 1 reads it until the parent is done.
 * The parent runs @forks forks, each followed by @after (ops, or "").
 */
static char *fork_case(bool reader, int forks, const char *after)
{
	return g_strdup_printf(
	    "{\"name\": \"fork\","
	    " \"regions\": [{\"name\": \"buf\", \"size\": 16384, \"populate\": \"all\"}],"
	    " \"tasks\": ["
	    "  {\"name\": \"parent\", \"cpu\": 0, \"program\": ["
	    "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	    "    {\"op\": \"compute\", \"cycles\": 100000},"
	    "    {\"op\": \"loop\", \"count\": %d, \"body\": [{\"op\": \"fork\"}%s]},"
	    "    {\"op\": \"compute\", \"cycles\": 100000},"
	    "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]}%s]}",
	    forks, after,
	    reader ? ", {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		     "  {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		     "  {\"op\": \"access\", \"region\": \"buf\", \"pattern\": \"sequential\","
		     "   \"pages\": 4, \"while_flag\": \"run\", \"cycles\": 10}]}"
		   : "");
}

static struct support_run fork_run(bool reader, int forks, const char *after)
{
	char *w = fork_case(reader, forks, after);
	struct support_run r = support_run("qemu-x86-4", "linux-6.1", NULL, w);
	g_free(w);
	return r;
}

/*
 * One fork with a reader on cpu 1.  dup_mmap()'s flush_tlb_mm() is a full
 * flush of the parent's mm: cpu 0 traces remote_send_ipi and its own
 * local_mm_shootdown, cpu 1 a remote_shootdown, all full.  The parent's
 * stack write while the child lives copies a page: the same three events,
 * one page each.  The child runs on an idle cpu (2 or 3): its switch to the
 * new mm is a full task-switch flush, its rseq write a one-page local flush,
 * and exit_mmap()'s full flush finds the CPU lazy and switches it to init_mm,
 * a second task-switch flush; it interrupts nobody.
 */
Test(fork, flushes_the_parent_everywhere_and_the_child_locally)
{
	struct support_run r = fork_run(true, 1, "");
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), 2);
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi_full), 1);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown), 2);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown_full), 1);
	cr_assert_eq(CPU(r, 1, tlb_remote_shootdown), 2);
	cr_assert_eq(CPU(r, 1, tlb_remote_shootdown_full), 1);
	/* The first switch of each task to its mm at the start, and no more:
	 * the parent comes back from its wait to the mm it left lazily, with
	 * no flush missed. */
	cr_assert_eq(CPU(r, 0, tlb_flush_task_switch), 1);
	cr_assert_eq(CPU(r, 1, tlb_flush_task_switch), 1);
	unsigned child = CPU(r, 2, tlb_flush_task_switch) ? 2 : 3;
	cr_assert_eq(CPU(r, child, tlb_flush_task_switch), 2);
	cr_assert_eq(CPU(r, child, tlb_flush_task_switch_full), 2);
	cr_assert_eq(CPU(r, child, tlb_local_mm_shootdown), 1);
	cr_assert_eq(CPU(r, child, tlb_local_mm_shootdown_full), 0);
	cr_assert_eq(CPU(r, 5 - child, tlb_flush_events), 0);
	cr_assert_eq(CPU(r, child, tlb_remote_send_ipi) + CPU(r, child, tlb_remote_shootdown), 0);
	cr_assert_eq(r.result->total.page_faults, 2, "the stack and the rseq page");
	cr_assert_eq(r.result->total.syscalls, 1);
	cr_assert_eq(r.result->total.stale_hits, 0);
	support_run_free(&r);
}

/* Alone in its mm, the parent's flushes are local: no IPI at all. */
Test(fork, alone_the_parent_flushes_locally)
{
	struct support_run r = fork_run(false, 1, "");
	cr_assert_eq(r.result->total.tlb_remote_send_ipi, 0);
	cr_assert_eq(r.result->total.ipis_sent, 0);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown), 2);
	cr_assert_eq(CPU(r, 0, tlb_local_mm_shootdown_full), 1);
	cr_assert_eq(r.result->total.tlb_flush_task_switch, 3,
		     "the parent's first, the child's two");
	support_run_free(&r);
}

/*
 * Writes after each fork: the child is gone, so each of the 4 write-protected
 * pages faults once and is reused (wp_page_reuse()): no flush beyond the
 * fork's own; a second fork write-protects them again.
 */
Test(fork, cow_writes_after_the_child_exits_reuse_without_flush)
{
	const char *writes = ", {\"op\": \"access\", \"region\": \"buf\", \"pattern\": "
			     "\"sequential\", \"pages\": 4, \"rounds\": 2, \"write\": 1, "
			     "\"cycles\": 10}";
	struct support_run r = fork_run(true, 2, writes);
	cr_assert_eq(r.result->total.page_faults, 2 * (2 + 4));
	cr_assert_eq(CPU(r, 0, tlb_remote_send_ipi), 2 * 2);
	cr_assert_eq(CPU(r, 1, tlb_remote_shootdown), 2 * 2);
	cr_assert_eq(r.result->total.stale_hits, 0);
	cr_assert_eq(r.result->total.syscalls, 2);
	support_run_free(&r);
}

/* "count" forks in one op, each waited for: the same as a loop of them. */
Test(fork, count_is_a_loop_of_forks)
{
	char *w = g_strdup_printf(
	    "{\"name\": \"fork\","
	    " \"regions\": [{\"name\": \"buf\", \"size\": 16384, \"populate\": \"all\"}],"
	    " \"tasks\": [{\"name\": \"parent\", \"cpu\": 0, \"program\": ["
	    "   {\"op\": \"fork\", \"count\": 3}]}],"
	    " \"report\": {\"op\": \"fork\"}}");
	struct support_run r = support_run("qemu-x86-4", "linux-6.1", NULL, w);
	cr_assert_eq(r.result->total.syscalls, 3);
	cr_assert_eq(histogram_count(r.result->op_cycles), 3);
	cr_assert_eq(r.result->total.tlb_local_mm_shootdown, 3 * 3, "2 parent, 1 child each");
	support_run_free(&r);
	g_free(w);
}
