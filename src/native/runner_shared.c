/*
 * What every part of a native run uses: the clock, the futex words of the
 * shared page, the run's first error, and where a region's chunks lie.
 * The bottom of the runner's files (runner_ops.c and runner_child.c above
 * it, runner.c on top), so none of them calls another in a circle.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "runner_impl.h"

uint64_t runner_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

void runner_futex_wait(atomic_int *word, int value)
{
	/* 10 s at most: the coordinator also watches for dead children.  Not
	 * shorter: each wake-up of a waiting process is a switch to its mm, which
	 * the kernel traces as a flush on task switch inside the window (at
	 * 100 ms, about 100 of them in a 3 s run under QEMU). */
	struct timespec timeout = {.tv_sec = 10};
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
	       (c % 2 == 0 || madvise(addr, reg->chunk_bytes, MADV_DONTDUMP) == 0);
}
