/*
 * The coordinator of a native run: the shared page, a child per mm, the
 * start barrier and the window, the results.
 *
 * The parent only coordinates: every mm is a child process holding exactly
 * the workload's threads of it, so the kernel's mm_cpumask and lazy-TLB
 * decisions see the workload's tasks and nothing else of ours.  Children
 * are forked before anything is mapped (runner_child.c).
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "runner_impl.h"
#include "tlbsim/util/error.h"

/* ---- checks ------------------------------------------------------------------------ */

static bool group_cpu(const struct workload *w, unsigned g, unsigned thread, unsigned task,
		      unsigned nr_cpus, int *cpu, GError **error);

bool runner_check(const struct workload *w, const char *file, unsigned nr_cpus, GError **error)
{
	for (unsigned g = 0, task = 0; g < w->nr_groups; g++)
		for (unsigned t = 0; t < w->groups[g].count; t++, task++) {
			int cpu;
			GError *e = NULL;
			if (!group_cpu(w, g, t, task, nr_cpus, &cpu, &e)) {
				g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
					    "%s: $.tasks[%u].cpu: %s", file, g, e->message);
				g_error_free(e);
				return false;
			}
		}
	return true;
}

struct cpu_ctx {
	const struct workload *w;
	unsigned thread, task, nr_cpus;
};

static bool cpu_lookup(void *ctx, const char *name, int64_t *value)
{
	const struct cpu_ctx *c = ctx;
	if (strcmp(name, "thread") == 0)
		*value = c->thread;
	else if (strcmp(name, "task") == 0)
		*value = c->task;
	else if (strcmp(name, "cpus") == 0)
		*value = c->nr_cpus;
	else
		return workload_param(c->w, name, value);
	return true;
}

static bool group_cpu(const struct workload *w, unsigned g, unsigned thread, unsigned task,
		      unsigned nr_cpus, int *cpu, GError **error)
{
	*cpu = -1;
	if (!w->groups[g].cpu)
		return true;
	struct cpu_ctx c = {.w = w, .thread = thread, .task = task, .nr_cpus = nr_cpus};
	int64_t v = 0;
	if (!expr_eval(w->groups[g].cpu, cpu_lookup, &c, &v, error))
		return false;
	if (v < 0 || v >= nr_cpus) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "thread %u is pinned to CPU %" G_GINT64_FORMAT
			    ", but this machine has CPUs 0-%u online",
			    thread, v, nr_cpus - 1);
		return false;
	}
	*cpu = (int)v;
	return true;
}

/* ---- the coordinator --------------------------------------------------------------- */

static unsigned nr_tasks(const struct workload *w)
{
	unsigned n = 0;
	for (unsigned g = 0; g < w->nr_groups; g++)
		n += (unsigned)w->groups[g].count;
	return n;
}

static struct shared *shared_new(const struct workload *w, const struct runner_options *o,
				 size_t *bytes)
{
	unsigned n = nr_tasks(w);
	size_t head = sizeof(struct shared) + n * sizeof(struct shared_task);
	*bytes = head + (w->nr_flags + 1) * sizeof(atomic_int);
	struct shared *sh =
	    mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return NULL;
	sh->flags = (atomic_int *)((char *)sh + head);
	for (unsigned g = 0, id = 0; g < w->nr_groups; g++)
		for (unsigned t = 0; t < w->groups[g].count; t++, id++) {
			sh->tasks[id].phase_begin = UINT64_MAX;
			group_cpu(w, g, t, id, o->nr_cpus, &sh->tasks[id].cpu, NULL);
		}
	return sh;
}

/* Has a task failed?  Then its message, once it is written, as @error. */
static bool run_failed(struct shared *sh, GError **error)
{
	if (!atomic_load(&sh->failed))
		return false;
	while (atomic_load(&sh->failed) != 1)
		sched_yield();
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID, "%s", sh->error);
	return true;
}

/* A child that ended before its time fails the run. */
static void check_children(struct shared *sh, pid_t *pids, unsigned nr_pids)
{
	for (unsigned i = 0; i < nr_pids && !atomic_load(&sh->failed); i++) {
		int status;
		if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
			runner_fail(sh, "the process of mm %u ended early (%s %d)", i,
				    WIFSIGNALED(status) ? "signal" : "status",
				    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
			pids[i] = 0;
		}
	}
}

/*
 * Wait until *@word reaches @target, a task fails or a child dies.  A task
 * that failed also counts as done: the failure is checked after the wait.
 */
static bool wait_for(struct shared *sh, atomic_int *word, int target, pid_t *pids, unsigned nr_pids,
		     GError **error)
{
	for (int now; (now = atomic_load(word)) < target && !atomic_load(&sh->failed);) {
		check_children(sh, pids, nr_pids);
		runner_futex_wait(word, now);
	}
	return !run_failed(sh, error);
}

static void collect(const struct workload *w, const struct shared *sh, uint64_t window_ns,
		    struct runner_result *r)
{
	memset(r, 0, sizeof(*r));
	r->window_ns = window_ns;
	uint64_t begin = UINT64_MAX, end = 0;
	for (unsigned i = 0; i < nr_tasks(w); i++) {
		const struct shared_task *t = &sh->tasks[i];
		r->op_count += t->op_count;
		r->op_ns_sum += t->op_ns_sum;
		r->accesses += t->accesses;
		r->round_accesses += t->round_accesses;
		r->threads += t->accesses > 0;
		begin = MIN(begin, t->phase_begin);
		end = MAX(end, t->phase_end);
	}
	r->phase_ns = w->report_phase < 0 ? window_ns : end > begin ? end - begin : 0;
}

/* The window: release, wait for every task, with the hooks around it. */
static bool window(struct nrun *run, const struct runner_hooks *hooks, pid_t *pids, uint64_t *ns,
		   GError **error)
{
	struct shared *sh = run->sh;
	int n = (int)nr_tasks(run->w);
	if (!wait_for(sh, &sh->ready, n, pids, run->w->nr_mms, error) ||
	    (hooks && hooks->before && !hooks->before(hooks->ctx, error)))
		return false;
	uint64_t t0 = runner_now_ns();
	atomic_store(&sh->start, 1);
	runner_futex_wake(&sh->start);
	bool ok = wait_for(sh, &sh->done, n, pids, run->w->nr_mms, error);
	*ns = runner_now_ns() - t0;
	return ok && (!hooks || !hooks->after || hooks->after(hooks->ctx, error));
}

/* Let the children go (or kill them after a failure) and reap them. */
static void end_children(struct shared *sh, pid_t *pids, unsigned n, bool ok)
{
	if (!ok)
		atomic_store(&sh->start, 2);
	atomic_store(&sh->release, 1);
	runner_futex_wake(&sh->start);
	runner_futex_wake(&sh->release);
	for (unsigned i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		if (!ok)
			kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

bool runner_run(const struct workload *w, const char *file, const struct runner_options *o,
		const struct runner_hooks *hooks, struct runner_result *result, GError **error)
{
	size_t bytes = 0;
	struct nrun run = {.w = w, .file = file, .o = o, .sh = shared_new(w, o, &bytes)};
	run.shared_bytes = bytes;
	if (!run.sh) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: mmap of the shared page: %s",
			    file, g_strerror(errno));
		return false;
	}
	run.regions = g_new0(struct nregion, w->nr_regions);
	pid_t *pids = g_new0(pid_t, w->nr_mms);
	bool ok = true;
	fflush(NULL);
	for (unsigned m = 0; ok && m < w->nr_mms; m++) {
		pids[m] = fork();
		if (pids[m] == 0)
			runner_child_main(&run, m);
		if (pids[m] < 0) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "fork: %s",
				    g_strerror(errno));
			ok = false;
		}
	}
	uint64_t ns = 0;
	ok = ok && window(&run, hooks, pids, &ns, error);
	end_children(run.sh, pids, w->nr_mms, ok);
	if (ok) {
		collect(w, run.sh, ns, result);
		for (unsigned g = 0; g < w->nr_groups; g++)
			if (workload_ops_access(w->groups[g].ops, w->groups[g].nr_ops))
				result->access_tasks += w->groups[g].count;
	}
	munmap(run.sh, bytes);
	g_free(run.regions);
	g_free(pids);
	return ok;
}
