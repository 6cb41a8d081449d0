/*
 * Processes, mappings and the start barrier of a native run.
 *
 * The parent only coordinates: every mm is a child process holding exactly
 * the workload's threads of it, so the kernel's mm_cpumask and lazy-TLB
 * decisions see the workload's tasks and nothing else of ours.  Children
 * are forked before anything is mapped; each maps and populates its regions,
 * starts its threads, and they wait at the barrier.  Chunks are mapped as
 * one mapping, placed as tlbsim places them (chunk 0 highest), then split
 * into one VMA each by MADV_DONTFORK on every other chunk: neighbours then
 * differ in vm_flags and never merge, and no gap changes which munmap frees
 * a page-table page.  (Nothing forks after the split, so DONTFORK has no
 * other effect.)
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "runner_impl.h"
#include "tlbsim/util/error.h"
#include "tlbsim/util/types.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#define ALIGN_2M (UINT64_C(1) << 21)
/* Malloc'ed by each task before the window, and never given back (see
 * child_main()): an access op's address table of up to 128 Ki pages. */
#define WARM_MALLOC_BYTES (1u << 20)

uint64_t runner_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

void runner_futex_wait(atomic_int *word, int value)
{
	/* 100 ms at most: the coordinator also watches for dead children. */
	struct timespec timeout = {.tv_nsec = 100000000};
	syscall(SYS_futex, (int *)word, FUTEX_WAIT, value, &timeout, NULL, 0);
}

void runner_futex_wake(atomic_int *word)
{
	syscall(SYS_futex, (int *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void runner_fail(struct shared *sh, const char *fmt, ...)
{
	int expected = 0;
	if (atomic_compare_exchange_strong(&sh->failed, &expected, -1)) {
		va_list args;
		va_start(args, fmt);
		vsnprintf(sh->error, sizeof(sh->error), fmt, args);
		va_end(args);
		atomic_store(&sh->failed, 1);
	}
	runner_futex_wake(&sh->done);
	runner_futex_wake(&sh->ready);
}

uint8_t *runner_chunk_addr(const struct nrun *run, unsigned r, uint64_t c)
{
	const struct region *reg = &run->w->regions[r];
	return run->regions[r].base + (reg->chunks - 1 - c) * reg->chunk_bytes;
}

bool runner_chunk_setup(const struct nrun *run, unsigned r, uint64_t c)
{
	const struct region *reg = &run->w->regions[r];
	uint8_t *addr = runner_chunk_addr(run, r, c);
	return (!run->regions[r].thp || madvise(addr, reg->chunk_bytes, MADV_HUGEPAGE) == 0) &&
	       (c % 2 == 0 || madvise(addr, reg->chunk_bytes, MADV_DONTFORK) == 0);
}

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
					nr->thp ? "madvise(MADV_HUGEPAGE or DONTFORK)"
						: "madvise(MADV_DONTFORK)",
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
__attribute__((no_sanitize_address)) static void touch_range(unsigned long start,
							      unsigned long end)
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
	atomic_fetch_add(&sh->ready, 1);
	runner_futex_wake(&sh->ready);
	for (int s; (s = atomic_load(&sh->start)) == 0;)
		runner_futex_wait(&sh->start, 0);
	if (atomic_load(&sh->start) == 1)
		runner_task_run(ts);
	atomic_fetch_add(&sh->done, 1);
	runner_futex_wake(&sh->done);
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
	_exit(2);
}

static void child_main(struct nrun *run, unsigned mm)
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
	for (unsigned i = 0; i < threads->len; i++)
		pthread_join(*(pthread_t *)g_ptr_array_index(threads, i), NULL);
	for (int r; (r = atomic_load(&run->sh->release)) == 0;)
		runner_futex_wait(&run->sh->release, 0);
	_exit(0);
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

/* Does @ops (loop bodies included) have an access op? */
static bool has_access(const struct op *ops, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++)
		if (ops[i].kind == OP_ACCESS ||
		    (ops[i].kind == OP_LOOP && has_access(ops[i].body, ops[i].nr_body)))
			return true;
	return false;
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
			child_main(&run, m);
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
			if (has_access(w->groups[g].ops, w->groups[g].nr_ops))
				result->access_tasks += w->groups[g].count;
	}
	munmap(run.sh, bytes);
	g_free(run.regions);
	g_free(pids);
	return ok;
}
