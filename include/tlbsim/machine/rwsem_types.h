#ifndef TLBSIM_RWSEM_TYPES_H
#define TLBSIM_RWSEM_TYPES_H
/*
 * struct rw_semaphore alone, for the machine-state structures that embed one
 * (mm.h's VMA locks, as the kernel's vm_area_struct embeds its lock) without
 * the kernel-layer API (rwsem.h).
 */
#include <stdbool.h>
#include "tlbsim/machine/fabric.h"

struct rwsem_waiter; /* private to rwsem.c */

struct rw_semaphore {
	struct cacheline count; /* the count word's line */
	unsigned readers;       /* holders for reading */
	bool writer;            /* held for writing */
	/* FIFO of waiters (allocated by the kernel layer's kernel_alloc(): a
	 * run stopped early frees them with the other in-flight objects). */
	struct rwsem_waiter *head, *tail;
};

/* __RWSEM_INITIALIZER: unlocked, nobody waiting, its line in nobody's cache. */
#define RWSEM_INITIALIZER ((struct rw_semaphore){.count = CACHELINE_INIT})

#endif
