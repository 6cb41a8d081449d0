/* Page-size names and arithmetic (src/util/types.c, include/tlbsim/util/types.h). */
#include <criterion/criterion.h>
#include "tlbsim/util/types.h"

Test(types, page_sizes)
{
	cr_assert_eq(page_size_bytes(PS_4K), 4096);
	cr_assert_eq(page_size_bytes(PS_2M), 2u << 20);
	cr_assert_eq(page_size_bytes(PS_1G), 1u << 30);
	cr_assert_eq(page_size_shift(PS_2M), 21);
}

Test(types, names_round_trip)
{
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++)
		cr_assert_eq(page_size_from_name(page_size_name((enum page_size)ps)), ps);
	cr_assert_str_eq(page_size_name(PS_1G), "1G");
	cr_assert_eq(page_size_from_name("4k"), -1, "names are case-sensitive");
	cr_assert_eq(page_size_from_name(""), -1);
}
