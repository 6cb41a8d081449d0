#ifndef TLBSIM_TYPES_H
#define TLBSIM_TYPES_H
/* Small value types shared by every layer above the engine. */
#include <stdint.h>

enum page_size { PS_4K, PS_2M, PS_1G, NR_PAGE_SIZES };

static inline unsigned page_size_shift(enum page_size ps)
{
	static const unsigned shift[NR_PAGE_SIZES] = {12, 21, 30};
	return shift[ps];
}

static inline uint64_t page_size_bytes(enum page_size ps)
{
	return UINT64_C(1) << page_size_shift(ps);
}

/*
 * The host's cache line.  State that different host threads write (each
 * core's TLBs, caches and counters, when the engine runs cores in parallel)
 * starts on a line of its own, so that no write of one thread takes a line
 * another thread is using.
 */
#define HOST_LINE 64

static inline uint64_t host_line_round(uint64_t bytes)
{
	return (bytes + HOST_LINE - 1) & ~(uint64_t)(HOST_LINE - 1);
}

/* "4K", "2M", "1G" */
const char *page_size_name(enum page_size ps);
/* Returns -1 for an unknown name. */
int page_size_from_name(const char *name);

#endif
