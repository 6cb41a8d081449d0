/*
 * A task's program, run by its thread: the ops of workload.h as real
 * system calls, loads and stores.  Expressions see what the interpreter's
 * do (interp_task.c): loop variables, $thread, $task, $cpus, parameters.
 * Random access patterns are drawn from the same rng stream as tlbsim's
 * (seed, task id), so both runs touch the same pages.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "runner_impl.h"
#include "tlbsim/util/types.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static bool task_lookup(void *ctx, const char *name, int64_t *value)
{
	const struct ntask *ts = ctx;
	for (unsigned d = ts->depth; d-- > 0;) {
		if (ts->vars[d].var && strcmp(ts->vars[d].var, name) == 0) {
			*value = ts->vars[d].iter;
			return true;
		}
	}
	if (strcmp(name, "thread") == 0)
		*value = ts->thread;
	else if (strcmp(name, "task") == 0)
		*value = ts->id;
	else if (strcmp(name, "cpus") == 0)
		*value = ts->run->o->nr_cpus;
	else
		return workload_param(ts->run->w, name, value);
	return true;
}

static bool task_fail(struct ntask *ts, const struct op *op, const char *msg)
{
	runner_fail(ts->run->sh, "%s: %s (task %s/%u)", op->path, msg,
		    ts->run->w->groups[ts->group].name, ts->thread);
	return false;
}

static bool eval(struct ntask *ts, const struct op *op, const struct expr *e, int64_t min,
		 int64_t max, const char *what, int64_t *out)
{
	GError *error = NULL;
	char *msg = NULL;
	if (!expr_eval(e, task_lookup, ts, out, &error))
		msg = g_strdup_printf("%s: %s", what, error->message);
	else if (*out < min || *out > max)
		msg = g_strdup_printf("%s is %" G_GINT64_FORMAT ", expected [%" G_GINT64_FORMAT
				      ", %" G_GINT64_FORMAT "] (\"%s\")",
				      what, *out, min, max, expr_text(e));
	g_clear_error(&error);
	if (msg) {
		task_fail(ts, op, msg);
		g_free(msg);
		return false;
	}
	return true;
}

static bool sys_fail(struct ntask *ts, const struct op *op, const char *call, int err)
{
	char *msg = g_strdup_printf("%s: %s", call, g_strerror(err));
	task_fail(ts, op, msg);
	g_free(msg);
	return false;
}

/* ---- access ----------------------------------------------------------------- */

struct access {
	uint8_t **addrs;
	uint64_t nr, rounds;
	bool write;
	int64_t cycles;
};

/* "cycles" of work besides the access: one empty loop iteration each
 * (about a cycle on a current x86 core; the barrier keeps the loop). */
static inline void spin_cycles(int64_t cycles)
{
	for (int64_t i = 0; i < cycles; i++)
		__asm__ volatile("" ::: "memory");
}

static void access_loop(struct ntask *ts, const struct op *op, const struct access *a)
{
	atomic_int *flag = op->while_flag >= 0 ? &ts->run->sh->flags[op->while_flag] : NULL;
	for (uint64_t round = 0; round < a->rounds; round++) {
		if (flag && atomic_load_explicit(flag, memory_order_relaxed) == 0)
			break;
		for (uint64_t i = 0; i < a->nr; i++) {
			volatile uint8_t *p = a->addrs[i];
			if (a->write)
				*p = (uint8_t)i;
			else
				(void)*p;
			spin_cycles(a->cycles);
		}
		ts->out->accesses += a->nr;
		ts->out->round_accesses += a->nr;
	}
}

/* The pages as access.c draws them: fixed for the op, a byte of each
 * page chosen by its position (which cache line, not which page). */
static bool access_op(struct ntask *ts, const struct op *op)
{
	const struct region *r = &ts->run->w->regions[op->region];
	uint64_t size = page_size_bytes(r->page_size);
	uint64_t region_pages = r->chunks * (r->chunk_bytes / size);
	uint8_t *base = runner_chunk_addr(ts->run, op->region, r->chunks - 1);
	int64_t pages = 0, rounds = INT64_MAX, write = 0, cycles = 0, first = 0, chunk = 0;
	if (op->chunk) {
		if (!eval(ts, op, op->chunk, 0, (int64_t)r->chunks - 1, "chunk", &chunk))
			return false;
		region_pages = r->chunk_bytes / size;
		base = runner_chunk_addr(ts->run, op->region, (uint64_t)chunk);
	}
	if (!eval(ts, op, op->pages, 1, 1 << 24, "pages", &pages) ||
	    (op->count && !eval(ts, op, op->count, 0, INT64_MAX, "rounds", &rounds)) ||
	    !eval(ts, op, op->write, 0, 1, "write", &write) ||
	    !eval(ts, op, op->cycles, 1, 1000000000, "cycles", &cycles) ||
	    (op->first && !eval(ts, op, op->first, 0, (int64_t)region_pages - 1, "first", &first)))
		return false;
	if (!op->random && (uint64_t)(first + pages) > region_pages)
		return task_fail(ts, op, "pages run past the end of the region");
	struct access a = {.addrs = g_new(uint8_t *, (gsize)pages),
			   .nr = (uint64_t)pages,
			   .rounds = (uint64_t)rounds,
			   .write = write != 0,
			   .cycles = cycles - 1};
	for (uint64_t i = 0; i < a.nr; i++) {
		uint64_t page =
		    op->random ? rng_below(&ts->rng, region_pages) : (uint64_t)first + i;
		uint64_t h = (page ^ i) * UINT64_C(0x9e3779b97f4a7c15);
		a.addrs[i] = base + page * size + ((h >> 32) & (size - 1));
	}
	access_loop(ts, op, &a);
	g_free(a.addrs);
	return true;
}

/* ---- system calls -------------------------------------------------------------- */

static bool madvise_op(struct ntask *ts, const struct op *op, uint8_t *addr, uint64_t bytes,
		       uint64_t size)
{
	int64_t nr = (int64_t)(bytes / size), first = 0, pages = nr;
	if ((op->first && !eval(ts, op, op->first, 0, nr - 1, "first", &first)) ||
	    (op->pages && !eval(ts, op, op->pages, 1, nr - first, "pages", &pages)))
		return false;
	if (!op->pages)
		pages = nr - first;
	int advice = op->pageout ? MADV_PAGEOUT : MADV_DONTNEED;
	if (madvise(addr + (uint64_t)first * size, (uint64_t)pages * size, advice) == 0)
		return true;
	if (errno == EINVAL && op->pageout)
		return task_fail(ts, op,
				 "madvise(MADV_PAGEOUT): EINVAL: this kernel lacks "
				 "MADV_PAGEOUT (Linux 5.4+)");
	return sys_fail(ts, op, "madvise", errno);
}

static bool do_syscall(struct ntask *ts, const struct op *op, unsigned region, uint64_t c)
{
	struct nrun *run = ts->run;
	const struct region *r = &run->w->regions[region];
	uint8_t *addr = runner_chunk_addr(run, region, c);
	struct nregion *nr = &run->regions[region];
	switch (op->kind) {
	case OP_MUNMAP:
		return munmap(addr, r->chunk_bytes) == 0 || sys_fail(ts, op, "munmap", errno);
	case OP_MMAP: {
		void *p = mmap(addr, r->chunk_bytes, PROT_READ | PROT_WRITE,
			       nr->map_flags | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED)
			return sys_fail(ts, op, "mmap(MAP_FIXED_NOREPLACE)", errno);
		if (p != addr)
			return task_fail(ts, op,
					 "mmap: the kernel ignored MAP_FIXED_NOREPLACE "
					 "(Linux 4.17+ needed)");
		return runner_chunk_setup(run, region, c) ||
		       sys_fail(ts, op, "madvise after mmap", errno);
	}
	case OP_MPROTECT:
		return mprotect(addr, r->chunk_bytes,
				op->writable ? PROT_READ | PROT_WRITE : PROT_READ) == 0 ||
		       sys_fail(ts, op, "mprotect", errno);
	case OP_MADVISE:
		return madvise_op(ts, op, addr, r->chunk_bytes, page_size_bytes(r->page_size));
	default:
		g_assert_not_reached();
	}
}

static bool syscall_op(struct ntask *ts, const struct op *op)
{
	const struct region *r = &ts->run->w->regions[op->region];
	int64_t chunk = 0;
	if (!eval(ts, op, op->chunk, 0, (int64_t)r->chunks - 1, "chunk", &chunk))
		return false;
	atomic_bool *mapped = &ts->run->regions[op->region].mapped[chunk];
	bool want = op->kind != OP_MMAP;
	if (atomic_load(mapped) != want) {
		char *msg = g_strdup_printf("%s of chunk %" G_GINT64_FORMAT " of %s, already %s",
					    workload_op_name(op->kind), chunk, r->name,
					    want ? "unmapped" : "mapped");
		task_fail(ts, op, msg);
		g_free(msg);
		return false;
	}
	uint64_t t0 = runner_now_ns();
	if (!do_syscall(ts, op, op->region, (uint64_t)chunk))
		return false;
	uint64_t t1 = runner_now_ns();
	if (op->kind == OP_MUNMAP || op->kind == OP_MMAP)
		atomic_store(mapped, op->kind == OP_MMAP);
	const struct workload *w = ts->run->w;
	if (op->kind == w->report_op && (w->report_phase < 0 || ts->in_report_phase)) {
		ts->out->op_count++;
		ts->out->op_ns_sum += t1 - t0;
	}
	return true;
}

/* ---- fork ------------------------------------------------------------------------ */

/*
 * fork() whose child exits at once without touching memory: the child's
 * only work is in the kernel (copy_process(), exit_mmap()), as in tlbsim's
 * model.  glibc's fork() would make the child write its memory before it
 * could exit (CLONE_CHILD_SETTID's TID store, the atfork handlers, the
 * return through the stack), each write a copy-on-write fault and a local
 * flush of one page; so on x86-64 the clone(SIGCHLD) (fork's flags) and the
 * child's exit_group(0) are one block of assembly that touches no memory in
 * the child.  Elsewhere: fork() and _exit(0).  Returns the child's pid, or
 * -1 with errno.
 */
static pid_t fork_exit_child(void)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = 0; /* child_tid */
	register long r8 __asm__("r8") = 0;   /* tls */
	long ret = SYS_clone;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov %[exit_group], %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall\n\t"
			 "1:"
			 : "+a"(ret)
			 : "D"((long)SIGCHLD), "S"(0L), "d"(0L), "r"(r10), "r"(r8),
			   [exit_group] "i"(SYS_exit_group)
			 : "rcx", "r11", "memory");
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return (pid_t)ret;
#else
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	return pid;
#endif
}

/* The fork op: @count times fork a child that exits, and waitpid() for it. */
static bool fork_op(struct ntask *ts, const struct op *op)
{
	int64_t count = 0;
	if (!eval(ts, op, op->count, 0, INT64_MAX, "count", &count))
		return false;
	const struct workload *w = ts->run->w;
	bool counted = op->kind == w->report_op && (w->report_phase < 0 || ts->in_report_phase);
	for (int64_t i = 0; i < count; i++) {
		uint64_t t0 = runner_now_ns();
		pid_t pid = fork_exit_child();
		if (pid < 0)
			return sys_fail(ts, op, "fork", errno);
		int status = 0;
		while (waitpid(pid, &status, 0) < 0) {
			if (errno != EINTR)
				return sys_fail(ts, op, "waitpid", errno);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			return task_fail(ts, op, "the forked child did not exit with status 0");
		if (counted) {
			ts->out->op_count++;
			ts->out->op_ns_sum += runner_now_ns() - t0;
		}
	}
	return true;
}

/* ---- time and flags --------------------------------------------------------------- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000),
			      .tv_nsec = (long)(ns % 1000000000)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Burn @cycles at the --ghz clock: a spin on the clock, not a sleep. */
static void compute(const struct ntask *ts, uint64_t cycles)
{
	uint64_t ns = cycles * 1000 / ts->run->o->ghz_milli;
	uint64_t end = runner_now_ns() + ns;
	while (runner_now_ns() < end)
		;
}

static bool flag_op(struct ntask *ts, const struct op *op)
{
	int64_t v = 0;
	if (!eval(ts, op, op->value, INT_MIN, INT_MAX, "value (a futex word natively)", &v))
		return false;
	atomic_int *flag = &ts->run->sh->flags[op->flag];
	if (op->kind == OP_SET_FLAG) {
		atomic_store(flag, (int)v);
		return true;
	}
	for (int now; (now = atomic_load(flag)) != (int)v;)
		runner_futex_wait(flag, now);
	return true;
}

static void phase_op(struct ntask *ts, const struct op *op)
{
	if ((int)op->phase != ts->run->w->report_phase)
		return;
	ts->in_report_phase = op->begin;
	uint64_t now = runner_now_ns();
	if (op->begin && ts->out->phase_begin == UINT64_MAX)
		ts->out->phase_begin = now;
	if (!op->begin)
		ts->out->phase_end = now;
}

static bool run_ops(struct ntask *ts, const struct op *ops, unsigned nr);

static bool loop_op(struct ntask *ts, const struct op *op)
{
	int64_t count = 0;
	if (!eval(ts, op, op->count, 0, INT64_MAX, "count", &count))
		return false;
	g_assert(ts->depth < G_N_ELEMENTS(ts->vars));
	unsigned d = ts->depth++;
	ts->vars[d].var = op->var;
	bool ok = true;
	for (int64_t i = 0; ok && i < count; i++) {
		ts->vars[d].iter = i;
		ok = run_ops(ts, op->body, op->nr_body);
	}
	ts->depth--;
	return ok;
}

static bool run_op(struct ntask *ts, const struct op *op)
{
	int64_t v = 0;
	switch (op->kind) {
	case OP_ACCESS:
		return access_op(ts, op);
	case OP_MUNMAP:
	case OP_MMAP:
	case OP_MPROTECT:
	case OP_MADVISE:
		return syscall_op(ts, op);
	case OP_SLEEP:
		if (!eval(ts, op, op->ns, 0, INT64_MAX / op->ns_scale / 16, "sleep", &v))
			return false;
		sleep_ns((uint64_t)(v * op->ns_scale));
		return true;
	case OP_YIELD:
		sched_yield();
		return true;
	case OP_COMPUTE:
		if (!eval(ts, op, op->cycles, 0, INT64_MAX / 16000, "cycles", &v))
			return false;
		compute(ts, (uint64_t)v);
		return true;
	case OP_SET_FLAG:
	case OP_WAIT_FLAG:
		return flag_op(ts, op);
	case OP_LOOP:
		return loop_op(ts, op);
	case OP_PHASE:
		phase_op(ts, op);
		return true;
	case OP_FORK:
		return fork_op(ts, op);
	case NR_OP_KINDS:
		break;
	}
	g_assert_not_reached();
}

/* The op a task is at, for a signal's message (a fault has no other way to
 * say where it happened). */
static _Thread_local const char *current_path;

const char *runner_current_path(void)
{
	return current_path;
}

/*
 * Consecutive set_flag ops store all their values before any waiter is
 * woken.  In tlbsim they land together, before a woken task can run; for
 * real, the first wake would often preempt the task on its own CPU, and a
 * reader woken by "started" would see "run" still 0 and leave at once.
 */
static void wake_stored(struct ntask *ts, const struct op *ops, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++)
		if (ops[i].kind == OP_SET_FLAG)
			runner_futex_wake(&ts->run->sh->flags[ops[i].flag]);
}

static bool run_ops(struct ntask *ts, const struct op *ops, unsigned nr)
{
	unsigned stored = 0; /* ops[stored..i) are set_flags not yet woken for */
	for (unsigned i = 0; i < nr; i++) {
		if (ops[i].kind != OP_SET_FLAG)
			wake_stored(ts, ops, stored, i);
		current_path = ops[i].path;
		if (atomic_load_explicit(&ts->run->sh->failed, memory_order_relaxed) ||
		    !run_op(ts, &ops[i]))
			return false;
		if (ops[i].kind != OP_SET_FLAG)
			stored = i + 1;
	}
	wake_stored(ts, ops, stored, nr);
	return true;
}

bool runner_task_run(struct ntask *ts)
{
	const struct task_group *g = &ts->run->w->groups[ts->group];
	return run_ops(ts, g->ops, g->nr_ops);
}
