#ifndef TLBSIM_NATIVE_RUNNER_IMPL_H
#define TLBSIM_NATIVE_RUNNER_IMPL_H
/* What runner.c (processes, layout, the barrier) and runner_ops.c (a
 * task's program) share. */
#include <stdatomic.h>
#include "tlbsim/native/runner.h"
#include "tlbsim/util/rng.h"

#define RUNNER_ERROR_LEN 1024

/* A task's results, written by its thread, read by the coordinator. */
struct shared_task {
	uint64_t op_count, op_ns_sum, accesses, round_accesses;
	uint64_t phase_begin; /* CLOCK_MONOTONIC ns; UINT64_MAX: never began */
	uint64_t phase_end;
	int cpu; /* pinning, -1: none */
};

/* One MAP_SHARED page set, mapped before the forks: every process sees it,
 * and its words are futexes (FUTEX_WAIT without _PRIVATE). */
struct shared {
	atomic_int ready;   /* tasks at the start barrier */
	atomic_int start;   /* 0 setup, 1 released, 2 aborted */
	atomic_int done;    /* tasks that ended */
	atomic_int failed;  /* set once, by whoever wrote error[] */
	atomic_int release; /* the children may exit */
	char error[RUNNER_ERROR_LEN];
	atomic_int *flags; /* [nr_flags], in this mapping too */
	struct shared_task tasks[];
};

/* A region of the current process: its base and each chunk's state. */
struct nregion {
	uint8_t *base;
	int map_flags; /* MAP_SHARED/PRIVATE | MAP_ANONYMOUS (| MAP_HUGETLB ...) */
	bool thp;
	atomic_bool *mapped; /* [chunks] */
};

struct nrun {
	const struct workload *w;
	const char *file;
	const struct runner_options *o;
	struct shared *sh;
	size_t shared_bytes;
	struct nregion *regions; /* [nr_regions]; only this mm's are mapped */
};

struct ntask {
	struct nrun *run;
	unsigned id, group, thread;
	struct rng rng;
	struct shared_task *out;
	bool in_report_phase;
	unsigned depth;
	struct {
		const char *var;
		int64_t iter;
	} vars[WORKLOAD_MAX_DEPTH + 1];
};

uint64_t runner_now_ns(void);
void runner_futex_wait(atomic_int *word, int value);
void runner_futex_wake(atomic_int *word);
/* Record the run's first error (later ones are dropped) and wake the coordinator. */
void runner_fail(struct shared *sh, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Chunk @c of region @r's address (chunk 0 highest, as tlbsim lays them out). */
uint8_t *runner_chunk_addr(const struct nrun *run, unsigned r, uint64_t c);
/* After an mmap of chunk @c: keep it a VMA of its own, THP-backed if asked. */
bool runner_chunk_setup(const struct nrun *run, unsigned r, uint64_t c);
/* The child process of mm @mm: map, populate, run its tasks; never returns. */
_Noreturn void runner_child_main(struct nrun *run, unsigned mm);
/* Run @ts's program to its end; false after runner_fail(). */
bool runner_task_run(struct ntask *ts);
/* The JSON path of the op the calling thread runs, or NULL. */
const char *runner_current_path(void);

#endif
