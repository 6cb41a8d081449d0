/* Table-driven helpers over struct counters (see include/tlbsim/machine/counters.h). */
#include <stddef.h>
#include "tlbsim/machine/counters.h"

const char *const counters_names[] = {
#define COUNTERS_NAME(name) #name,
	COUNTERS_FOREACH(COUNTERS_NAME)
#undef COUNTERS_NAME
	NULL,
};

void counters_add(struct counters *dst, const struct counters *src)
{
#define COUNTERS_ADD(name) dst->name += src->name;
	COUNTERS_FOREACH(COUNTERS_ADD)
#undef COUNTERS_ADD
}

void counters_add_delta(struct counters *dst, const struct counters *now,
			const struct counters *then)
{
#define COUNTERS_ADD_DELTA(name) dst->name += now->name - then->name;
	COUNTERS_FOREACH(COUNTERS_ADD_DELTA)
#undef COUNTERS_ADD_DELTA
}

unsigned counters_count(void)
{
	return sizeof(struct counters) / sizeof(uint64_t);
}

uint64_t counters_get(const struct counters *c, unsigned index)
{
	const uint64_t *fields = (const uint64_t *)c;
	return fields[index];
}
