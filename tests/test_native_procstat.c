/*
 * Tests of src/native/procstat.c on recorded /proc text
 * (tests/data/native/): the TLB row lands at the CPUs the header names
 * (offline CPUs leave gaps), vmstat's nr_tlb_* items are found only all
 * together, and deltas subtract per CPU.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "native_data.h"
#include "tlbsim/native/procstat.h"

Test(native_procstat, tlb_row_per_cpu)
{
	struct procstat s;
	procstat_init(&s, 4);
	char *text = native_data("interrupts-4cpu.txt");
	GError *error = NULL;
	cr_assert(procstat_parse_interrupts(text, &s, &error));
	cr_assert(s.has_tlb_row);
	cr_assert_eq(s.tlb[0], 258);
	cr_assert_eq(s.tlb[1], 266);
	cr_assert_eq(s.tlb[2], 801);
	cr_assert_eq(s.tlb[3], 1808);
	g_free(text);
	procstat_clear(&s);
}

Test(native_procstat, offline_cpu_leaves_a_gap)
{
	struct procstat s;
	procstat_init(&s, 3);
	char *text = native_data("interrupts-offline.txt");
	cr_assert(procstat_parse_interrupts(text, &s, NULL));
	cr_assert_eq(s.tlb[0], 7);
	cr_assert_eq(s.tlb[1], 0);
	cr_assert_eq(s.tlb[2], 9);
	g_free(text);
	procstat_clear(&s);
}

Test(native_procstat, no_tlb_row_is_not_an_error)
{
	struct procstat s;
	procstat_init(&s, 2);
	cr_assert(procstat_parse_interrupts("   CPU0  CPU1\n LOC: 1 2 Local\n", &s, NULL));
	cr_assert_not(s.has_tlb_row);
	procstat_clear(&s);
}

Test(native_procstat, bad_header_and_short_row)
{
	struct procstat s;
	procstat_init(&s, 2);
	GError *error = NULL;
	cr_assert_not(procstat_parse_interrupts("  CPU0 banana\n", &s, &error));
	cr_assert(strstr(error->message, "\"banana\" is not CPUn"), "%s", error->message);
	g_clear_error(&error);
	cr_assert_not(procstat_parse_interrupts("  CPU0 CPU1\n TLB: 5\n", &s, &error));
	cr_assert(strstr(error->message, "TLB row has 1 counts, the header 2 CPUs"), "%s",
		  error->message);
	g_clear_error(&error);
	procstat_clear(&s);
}

Test(native_procstat, vmstat_items)
{
	struct procstat s;
	procstat_init(&s, 1);
	char *text = native_data("vmstat-debug-tlbflush.txt");
	procstat_parse_vmstat(text, &s);
	cr_assert(s.has_vmstat);
	cr_assert_eq(s.vmstat[0], 264);
	cr_assert_eq(s.vmstat[1], 1801);
	cr_assert_eq(s.vmstat[2], 12);
	/* nr_tlb_local_flush_one_kernel is another item, not a prefix match. */
	cr_assert_eq(s.vmstat[3], 2048);
	procstat_parse_vmstat("nr_free_pages 1\nnr_tlb_remote_flush 3\n", &s);
	cr_assert_not(s.has_vmstat, "a kernel without CONFIG_DEBUG_TLBFLUSH lacks them all");
	g_free(text);
	procstat_clear(&s);
}

Test(native_procstat, delta)
{
	struct procstat a, b, d;
	procstat_init(&a, 2);
	procstat_init(&b, 2);
	procstat_init(&d, 2);
	cr_assert(procstat_parse_interrupts(" CPU0 CPU1\n TLB: 10 20 TLB\n", &a, NULL));
	cr_assert(procstat_parse_interrupts(" CPU0 CPU1\n TLB: 15 26 TLB\n", &b, NULL));
	procstat_delta(&a, &b, &d);
	cr_assert(d.has_tlb_row);
	cr_assert_eq(d.tlb[0], 5);
	cr_assert_eq(d.tlb[1], 6);
	cr_assert_not(d.has_vmstat);
	procstat_clear(&a);
	procstat_clear(&b);
	procstat_clear(&d);
}
