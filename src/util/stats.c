/*
 * Statistics shared by the layers that state intervals (see
 * include/tlbsim/util/stats.h).
 */
#include <glib.h>
#include "tlbsim/util/stats.h"

/* t(0.975, df) for df = 1..30 (R's qt(0.975, df), 10 decimals). */
static const double t975_table[30] = {
	12.7062047362, 4.3026527297, 3.1824463053, 2.7764451052, 2.5705818356, 2.4469118511,
	2.3646242516,  2.3060041352, 2.2621571628, 2.2281388520, 2.2009851601, 2.1788128297,
	2.1603686565,  2.1447866879, 2.1314495456, 2.1199052992, 2.1098155778, 2.1009220402,
	2.0930240544,  2.0859634473, 2.0796138447, 2.0738730679, 2.0686576104, 2.0638985616,
	2.0595385528,  2.0555294386, 2.0518305165, 2.0484071418, 2.0452296421, 2.0422724563,
};

double stats_t975(unsigned df)
{
	g_assert(df >= 1);
	if (df <= G_N_ELEMENTS(t975_table))
		return t975_table[df - 1];
	/* Cornish-Fisher expansion of t around the normal quantile z; the
	 * terms up to 1/df^4 are within 1e-7 of the exact value from df 31. */
	const double z = 1.959963984540054, n = df;
	double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
	return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
	       (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n) +
	       (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * n * n * n * n);
}
