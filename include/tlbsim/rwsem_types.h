#ifndef TLBSIM_RWSEM_TYPES_H
#define TLBSIM_RWSEM_TYPES_H
/*
 * struct rw_semaphore alone, for the structures that embed one (mm.h's VMA
 * locks) without the kernel-layer API (rwsem.h), as the kernel's
 * rwsem_types split goes.
 */
#include <stdbool.h>
#include "tlbsim/fabric.h"

struct rwsem_waiter; /* private to rwsem.c */

struct rw_semaphore {
	struct cacheline count; /* the count word's line */
	unsigned readers;       /* holders for reading */
	bool writer;            /* held for writing */
	/* FIFO of waiters (allocated with kernel_alloc(): a run stopped early
	 * frees them with the other in-flight objects). */
	struct rwsem_waiter *head, *tail;
};

#endif
