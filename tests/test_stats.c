/*
 * Tests of src/util/stats.c: Student's t quantiles against R's qt(0.975, df).
 */
#include <criterion/criterion.h>
#include "tlbsim/util/stats.h"

Test(stats, t_quantiles)
{
	cr_expect_float_eq(stats_t975(1), 12.7062047362, 1e-9);
	cr_expect_float_eq(stats_t975(9), 2.2621571628, 1e-9);
	cr_expect_float_eq(stats_t975(30), 2.0422724563, 1e-9);
	/* Beyond the table: R's qt(0.975, df) to 1e-6. */
	cr_expect_float_eq(stats_t975(31), 2.0395134464, 1e-6);
	cr_expect_float_eq(stats_t975(60), 2.0002978220, 1e-6);
	cr_expect_float_eq(stats_t975(120), 1.9799304051, 1e-6);
	cr_expect_float_eq(stats_t975(1000000), 1.9599664, 1e-6);
	/* Decreasing in df, across the table's end. */
	for (unsigned df = 1; df < 200; df++)
		cr_expect_gt(stats_t975(df), stats_t975(df + 1), "df %u", df);
}
