/* Names of the shared value types. */
#include <string.h>
#include "tlbsim/util/types.h"

static const char *const page_size_names[NR_PAGE_SIZES] = {"4K", "2M", "1G"};

const char *page_size_name(enum page_size ps)
{
	return page_size_names[ps];
}

int page_size_from_name(const char *name)
{
	for (int i = 0; i < NR_PAGE_SIZES; i++)
		if (strcmp(name, page_size_names[i]) == 0)
			return i;
	return -1;
}
