/*
 * The scheduler (src/sched.c): time-sharing, sleeping, wakeups and the cost
 * of switches, on the tiny machines (1 GHz: cycles are nanoseconds).  CFS
 * tunables scale by 1 + ilog2(min(cpus, 8)): 2 on tiny-2cpu, so latency is
 * 12 ms and the slice of each of two tasks 6 ms.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"

static char *compute_tasks(unsigned count, unsigned cycles, const char *cpu)
{
	return g_strdup_printf(
		"{\"name\": \"compute\","
		" \"tasks\": [{\"name\": \"worker\", \"count\": %u, \"cpu\": \"%s\", \"program\": ["
		"   {\"op\": \"phase\", \"name\": \"all\", \"action\": \"begin\"},"
		"   {\"op\": \"compute\", \"cycles\": %u},"
		"   {\"op\": \"phase\", \"name\": \"all\", \"action\": \"end\"}]}],"
		" \"report\": {\"phase\": \"all\"}}",
		count, cpu, cycles);
}

/*
 * Two 30 ms tasks pinned to cpu 0 take turns in 6 ms slices: both finish
 * after 60 ms of work plus the switches, the first no earlier than the
 * second's last slice began.  Work is conserved: nothing is lost or doubled.
 */
Test(sched, two_tasks_share_a_cpu)
{
	char *w = compute_tasks(2, 30000000, "0");
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	uint64_t switches = CPU(r, 0, context_switches);
	/* 60 ms of work in slices of 6 ms that include the switch's own
	 * 2000 cycles: 11 turns, plus the switch in and the final exit. */
	cr_assert_geq(switches, 11);
	cr_assert_leq(switches, 14);
	/* Time is conserved: work + every switch into a task (all but the
	 * last, to idle) + the first mm load (two cpumask RMWs of 20 and a
	 * CR3 write of 120). */
	cr_assert_eq(r.result->sim_cycles, 60000000 + (switches - 1) * 2000 + 160);
	/* The phase spans first begin (after the first switch) to last end. */
	cr_assert_eq(r.result->phase_cycles + 2000 + 160, r.result->sim_cycles);
	cr_assert_eq(CPU(r, 1, context_switches), 0, "cpu 1 never runs anything");
	support_run_free(&r);
	g_free(w);
}

/* Unpinned tasks spread over idle CPUs first: two tasks on two CPUs never switch. */
Test(sched, placement_spreads_unpinned_tasks)
{
	const char *w =
		"{\"name\": \"spread\","
		" \"tasks\": [{\"name\": \"worker\", \"count\": 2, \"program\": ["
		"   {\"op\": \"compute\", \"cycles\": 20000000}]}]}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	/* One switch in (idle -> task) on each CPU; exits go idle. */
	cr_assert_eq(CPU(r, 0, context_switches), 2);
	cr_assert_eq(CPU(r, 1, context_switches), 2);
	cr_assert_lt(r.result->sim_cycles, 20010000);
	support_run_free(&r);
}

/*
 * A sleeper wakes exactly on time when its CPU is idle: sleep 5 ms, then end.
 * Timeline: switch in (2000 + mm load 160), sleep at 2160, wake at
 * 5002160, switch in again (2000; same mm, lazy: no CR3 write), end.
 */
Test(sched, sleep_wakes_on_time)
{
	const char *w =
		"{\"name\": \"sleep\","
		" \"tasks\": [{\"name\": \"sleeper\", \"cpu\": 0, \"program\": ["
		"   {\"op\": \"sleep\", \"ms\": 5},"
		"   {\"op\": \"phase\", \"name\": \"woke\", \"action\": \"begin\"},"
		"   {\"op\": \"phase\", \"name\": \"woke\", \"action\": \"end\"}]}],"
		" \"report\": {\"phase\": \"woke\"}}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	cr_assert_eq(r.result->sim_cycles, 2160 + 5000000 + 2000);
	support_run_free(&r);
}

/*
 * Wakeup preemption: a long task runs on cpu 0; a task that slept 1 ms wakes
 * with sleeper credit, preempts at once, and finishes its short work long
 * before the long task's slice would have ended.
 */
Test(sched, woken_task_preempts)
{
	const char *w =
		"{\"name\": \"preempt\","
		" \"tasks\": ["
		"  {\"name\": \"long\", \"cpu\": 0, \"program\": [{\"op\": \"compute\", \"cycles\": 50000000}]},"
		"  {\"name\": \"short\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"sleep\", \"ms\": 20},"
		"    {\"op\": \"phase\", \"name\": \"short\", \"action\": \"begin\"},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    {\"op\": \"phase\", \"name\": \"short\", \"action\": \"end\"}]}],"
		" \"report\": {\"phase\": \"short\"}}";
	struct support_run r = support_run("tiny-2cpu.json", "linux-4.5", NULL, w);
	/* The short task's work took its own 0.1 ms, not a wait for a slice. */
	cr_assert_eq(r.result->phase_cycles, 100000);
	support_run_free(&r);
}
