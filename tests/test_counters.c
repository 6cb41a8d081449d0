/*
 * Tests of src/machine/counters.c: the name table, counters_add() and counters_get()
 * agree with the X-macro in include/tlbsim/machine/counters.h, field by field.  The
 * expectations are expanded from COUNTERS_FOREACH here, independently of
 * counters.c, so a counter added to the list is covered without editing
 * this file.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/machine/counters.h"

#define COUNT_ONE(name) +1
static const unsigned nr_declared = 0 COUNTERS_FOREACH(COUNT_ONE);
#undef COUNT_ONE

#define NAME_OF(name) #name,
static const char *const declared_names[] = {COUNTERS_FOREACH(NAME_OF)};
#undef NAME_OF

/* Field @i (declaration order) of @c, by name, not by memory layout. */
static uint64_t *field_by_index(struct counters *c, unsigned i)
{
	unsigned k = 0;
#define FIELD_AT(name)                                                                             \
	if (k++ == i)                                                                              \
		return &c->name;
	COUNTERS_FOREACH(FIELD_AT)
#undef FIELD_AT
	cr_assert_fail("no counter %u", i);
	return NULL;
}

Test(counters, count_matches_declaration)
{
	cr_expect_eq(counters_count(), nr_declared);
	cr_expect_eq(G_N_ELEMENTS(declared_names), nr_declared);
	cr_expect_gt(nr_declared, 20);
}

Test(counters, names_in_declaration_order)
{
	unsigned n = 0;

	while (counters_names[n])
		n++;
	cr_assert_eq(n, nr_declared, "counters_names has %u entries before NULL", n);
	for (unsigned i = 0; i < nr_declared; i++)
		cr_expect_str_eq(counters_names[i], declared_names[i], "index %u", i);
	/* A few anchors a CSV reader relies on. */
	cr_expect_str_eq(counters_names[0], "accesses");
	cr_expect_str_eq(counters_names[1], "tlb_lookups");
	cr_expect_str_eq(counters_names[nr_declared - 1], "pti_user_flush_all");
}

Test(counters, names_are_unique_identifiers)
{
	for (unsigned i = 0; i < nr_declared; i++) {
		const char *name = counters_names[i];
		cr_expect_gt(strlen(name), 0);
		cr_expect_eq(strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_"), strlen(name),
			     "%s", name);
		for (unsigned j = 0; j < i; j++)
			cr_expect_str_neq(name, counters_names[j]);
	}
}

Test(counters, get_reads_each_field_by_index)
{
	struct counters c;

	memset(&c, 0, sizeof(c));
	for (unsigned i = 0; i < nr_declared; i++)
		*field_by_index(&c, i) = UINT64_C(1000) + 37 * i;
	for (unsigned i = 0; i < nr_declared; i++)
		cr_expect_eq(counters_get(&c, i), UINT64_C(1000) + 37 * i, "%s", counters_names[i]);

	/* Named spot checks. */
	cr_expect_eq(counters_get(&c, 0), c.accesses);
	cr_expect_eq(counters_get(&c, nr_declared - 1), c.pti_user_flush_all);
}

Test(counters, add_adds_every_field)
{
	struct counters dst, src;

	memset(&dst, 0, sizeof(dst));
	memset(&src, 0, sizeof(src));
	for (unsigned i = 0; i < nr_declared; i++) {
		*field_by_index(&dst, i) = UINT64_C(100) * (i + 1);
		*field_by_index(&src, i) = i + 1;
	}
	/* Large values do not interfere with neighbours. */
	*field_by_index(&dst, 3) = UINT64_MAX - 10;

	counters_add(&dst, &src);
	for (unsigned i = 0; i < nr_declared; i++) {
		uint64_t want = i == 3 ? UINT64_MAX - 10 + 4 : UINT64_C(101) * (i + 1);
		cr_expect_eq(*field_by_index(&dst, i), want, "%s", counters_names[i]);
		cr_expect_eq(*field_by_index(&src, i), i + 1, "src %s changed", counters_names[i]);
	}

	/* Adding zero changes nothing; adding to itself doubles. */
	struct counters zero, before = dst;
	memset(&zero, 0, sizeof(zero));
	counters_add(&dst, &zero);
	cr_expect_eq(memcmp(&dst, &before, sizeof(dst)), 0);
	counters_add(&src, &src);
	for (unsigned i = 0; i < nr_declared; i++)
		cr_expect_eq(*field_by_index(&src, i), 2 * (i + 1), "%s", counters_names[i]);
}

/* Summing per-CPU structs the way sim.c does gives the field-wise totals. */
Test(counters, totals_of_many)
{
	struct counters per_cpu[5], total;

	memset(&total, 0, sizeof(total));
	for (unsigned c = 0; c < 5; c++) {
		memset(&per_cpu[c], 0, sizeof(per_cpu[c]));
		for (unsigned i = 0; i < nr_declared; i++)
			*field_by_index(&per_cpu[c], i) = c * 1000 + i;
		counters_add(&total, &per_cpu[c]);
	}
	for (unsigned i = 0; i < nr_declared; i++)
		cr_expect_eq(counters_get(&total, i), (0 + 1 + 2 + 3 + 4) * 1000 + 5 * i, "%s",
			     counters_names[i]);
}

/* counters_add_delta() adds what each field grew by, every field. */
Test(counters, add_delta_adds_each_fields_growth)
{
	struct counters dst, now, then;

	memset(&dst, 0, sizeof(dst));
	memset(&now, 0, sizeof(now));
	memset(&then, 0, sizeof(then));
	for (unsigned i = 0; i < nr_declared; i++) {
		*field_by_index(&dst, i) = i;
		*field_by_index(&then, i) = 10 * i;
		*field_by_index(&now, i) = 10 * i + 7;
	}
	counters_add_delta(&dst, &now, &then);
	for (unsigned i = 0; i < nr_declared; i++)
		cr_expect_eq(counters_get(&dst, i), i + 7, "%s", counters_names[i]);
}
