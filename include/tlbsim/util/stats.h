#ifndef TLBSIM_STATS_H
#define TLBSIM_STATS_H
/*
 * Statistics shared by the layers that state intervals: replicate
 * summaries (cli/summarize.c) and sampled mode's estimates (sim/sample.c).
 */

/**
 * stats_t975() - the 0.975 quantile of Student's t with @df degrees of
 * freedom (@df >= 1): the factor of a two-sided 95% interval.  A table for
 * df <= 30, above it the Cornish-Fisher expansion (error below 1e-7).  Only
 * +, * and / on constants: the same bits on every IEEE-754 machine.
 */
double stats_t975(unsigned df);

#endif
