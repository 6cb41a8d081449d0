#ifndef TLBSIM_SCHED_H
#define TLBSIM_SCHED_H
/*
 * The scheduler and each CPU's execution context (kernel/sched/core.c + fair.c,
 * in miniature).
 *
 * A CPU runs its current task, the idle task, or an interrupt handler.  A task
 * is driven through task_ops->run(): the scheduler calls it when the task gets
 * the CPU or its pending work completes, and run() ends by calling exactly one
 * of sched_continue_at(), sched_block(), sched_yield_at(), sched_exit(), or by
 * starting a kernel wait whose completion calls sched_continue_at().
 *
 * Interrupts steal time: work pending at irq entry resumes later by the
 * handler's duration.  Slice expiry and wakeup preemption only take effect on
 * preemptible work (user mode); kernel work finishes its step first, as with
 * PREEMPT_VOLUNTARY.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel/kernel.h"

struct task;

/*
 * What a CPU does until its next resume.  Kernel work is not preemptible;
 * user work is.  Quiet user work also promises that the task's next steps
 * reach no other core before the next event in some lane: plain memory
 * accesses on present pages.  A quiet resume is left out of the lanes, so
 * other CPUs may run ahead past it (machine.h, "Lookahead").
 */
enum sched_work { WORK_KERNEL, WORK_USER, WORK_USER_QUIET };

struct task_ops {
	void (*run)(struct kernel *k, struct task *task, struct cpu *cpu, uint64_t now);
};

/* TASK_WAKING: woken onto another CPU, on its way there (not on any queue). */
enum task_state { TASK_RUNNABLE, TASK_RUNNING, TASK_BLOCKED, TASK_WAKING, TASK_DEAD };

struct task {
	unsigned id;
	char *name;
	struct mm *mm;  /* NULL for a kernel thread */
	int pinned_cpu; /* -1: the scheduler chooses */
	unsigned cpu;   /* run queue it belongs to */
	enum task_state state;
	uint64_t vruntime;
	uint64_t last_ran; /* when it last left a CPU (task_hot()) */
	bool has_run;
	uint64_t remaining; /* preempted user work still to do */
	bool has_remaining;
	enum sched_work remaining_work;
	bool wake_pending; /* woken while still running: do not block */
	/* Set while it sleeps inside the kernel (sched_wake_kernel()): what it
	 * goes on with when it runs again, instead of ops->run(). */
	struct kcont kresume;
	const struct task_ops *ops;
	void *data; /* owned by the caller of sched_add_task() */
};

struct sched *sched_new(struct kernel *k);
void sched_free(struct sched *sched);

/*
 * Put @task on a run queue (its pinned CPU, or the CPU with the fewest tasks,
 * preferring idle cores, lowest number first) as runnable at time 0.  Call
 * before sched_start().  The task is borrowed.  Unpinned tasks may move later
 * (sched_balance.c), when the policy balances load.
 */
void sched_add_task(struct kernel *k, struct task *task);
/* Start every CPU: pick the first task or go idle, at time 0. */
void sched_start(struct kernel *k);

void sched_continue_at(struct kernel *k, struct cpu *cpu, uint64_t time, enum sched_work work);
void sched_block(struct kernel *k, struct cpu *cpu, uint64_t time);
void sched_yield_at(struct kernel *k, struct cpu *cpu, uint64_t time);
void sched_exit(struct kernel *k, struct cpu *cpu, uint64_t time);
/* Make a blocked task runnable at @time (>= now). */
void sched_wake(struct kernel *k, struct task *task, uint64_t time);
/*
 * A sleep inside a syscall (a kernel wait that schedules, as an rwsem
 * waiter's): sched_block() the task where it waits; sched_wake_kernel() makes
 * it runnable at @time, and once it has its CPU again (after the switch from
 * idle) @resume runs with the time it does, where ops->run() would.
 */
void sched_wake_kernel(struct kernel *k, struct task *task, uint64_t time, struct kcont resume);

/* Interrupt handlers bracket themselves with these (see smp.c). */
void sched_irq_enter(struct kernel *k, struct cpu *cpu, uint64_t time);
void sched_irq_exit(struct kernel *k, struct cpu *cpu, uint64_t time);
/* In an interrupt on @cpu that arrived while it ran user code. */
bool sched_irq_from_user(const struct kernel *k, const struct cpu *cpu);
/*
 * In an interrupt on @cpu, and sched_irq_exit() would now leave nothing but
 * a quiet resume of the interrupted task: the interrupt only delays quiet
 * work.  Any change of that while in the interrupt taints the CPU
 * (machine_cpu_taint()): its handler may now leave work that reaches other
 * cores.
 */
bool sched_irq_quiet(const struct kernel *k, const struct cpu *cpu);

struct task *sched_current(const struct kernel *k, const struct cpu *cpu);
/*
 * Whether @cpu's thread competes for its core's issue slots: it runs a task
 * (user or kernel code) and is not in an interrupt.  An interrupt's delivery
 * discards the thread's work in flight, and a flush handler's INVLPG or CR3
 * write and its IRET are serialising instructions (SDM Vol.3A 8.3): the
 * thread's pipeline drains, and its SMT sibling issues alone meanwhile, as
 * for any thread that cannot use a stage (IA-32 Optimization Reference
 * Manual, "Microarchitecture Pipeline and Hyper-Threading Technology").  The
 * handler's few dozen other instructions are neglected.  A halted (idle)
 * thread takes nothing either.
 */
bool sched_cpu_issuing(const struct kernel *k, const struct cpu *cpu);

/*
 * For running an SMT sibling's accesses inline.  sched_pending_resume(): false
 * if @cpu has no resume pending; else *@at is its time and *@quiet tells
 * whether it is quiet user work with nothing else due first (so its task's
 * accesses may be run by a sibling).  sched_move_resume() then moves that
 * resume to a later @at, as @work.
 */
bool sched_pending_resume(const struct kernel *k, const struct cpu *cpu, uint64_t *at,
			  bool *quiet);
void sched_move_resume(struct kernel *k, struct cpu *cpu, uint64_t at, enum sched_work work);
/*
 * Something every CPU can see changed (a page table, a flag): promises made by
 * quiet resumes no longer hold, so they become ordinary user work again.
 */
void sched_revoke_quiet(struct kernel *k);
/* Tasks not yet dead, and when the last one so far exited. */
unsigned sched_nr_alive(const struct kernel *k);
uint64_t sched_last_exit(const struct kernel *k);
/* Effective (scaled) CFS values, in cycles. */
uint64_t sched_slice_cycles(const struct kernel *k, unsigned nr_running);

#endif
