#ifndef TLBSIM_TESTS_CASES_H
#define TLBSIM_TESTS_CASES_H
/*
 * A two-CPU case shared by the flush-path tests: cpu 0 runs @op_json (one op
 * on region "victim", @pages pages, populated) after 100 000 cycles, while cpu
 * 1 keeps reading the victim's pages (so it runs the mm, holds entries for
 * them, and is never lazy) until @after cycles after the op.  g_free the
 * result.
 */
#include <glib.h>

static inline char *two_cpu_case_after(unsigned pages, const char *op_json, unsigned after)
{
	char *then = after ? g_strdup_printf(", {\"op\": \"compute\", \"cycles\": %u}", after)
			   : g_strdup("");
	char *w = g_strdup_printf(
		"{\"name\": \"two-cpu\","
		" \"regions\": [{\"name\": \"victim\", \"size\": %u, \"populate\": \"all\"}],"
		" \"tasks\": ["
		"  {\"name\": \"initiator\", \"cpu\": 0, \"program\": ["
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"compute\", \"cycles\": 100000},"
		"    %s%s,"
		"    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		"  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		"    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		"    {\"op\": \"access\", \"region\": \"victim\", \"pattern\": \"sequential\","
		"     \"pages\": %u, \"while_flag\": \"run\", \"cycles\": 10}]}]}",
		pages * 4096, op_json, then, pages < 8 ? pages : 8);
	g_free(then);
	return w;
}

static inline char *two_cpu_case(unsigned pages, const char *op_json)
{
	return two_cpu_case_after(pages, op_json, 0);
}

#define PAGEOUT_OP "{\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"pageout\"}"
#define DONTNEED_OP "{\"op\": \"madvise\", \"region\": \"victim\", \"advice\": \"dontneed\"}"
#define MPROTECT_OP "{\"op\": \"mprotect\", \"region\": \"victim\", \"prot\": \"read\"}"

#endif
