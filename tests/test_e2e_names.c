/*
 * Names: the --list-* listings and --version, and topologies, workloads
 * and policies given by bundled name, with or without .json, or by path.
 */
#include <math.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "e2e_support.h"
#include "tlbsim_commit.h"

#define HASWELL_PATH TLBSIM_SOURCE_DIR "/topologies/haswell-i7.json"

TestSuite(e2e_names, .init = tmp_dir_make, .fini = tmp_dir_remove);

/* @out has a line whose first word is @name. */
static bool lists(const char *out, const char *name)
{
	char *escaped = g_regex_escape_string(name, -1);
	char *pattern = g_strdup_printf("^%s( |$)", escaped);
	bool found = g_regex_match_simple(pattern, out, G_REGEX_MULTILINE, 0);
	g_free(pattern);
	g_free(escaped);
	return found;
}

static void expect_listing(const char *option, const char *const *names)
{
	struct run r;
	run_tlbsim(&r, option, NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.err);
	for (const char *const *n = names; *n; n++)
		cr_expect(lists(r.out, *n), "%s does not list %s:\n%s", option, *n, r.out);
	run_clear(&r);
}

Test(e2e_names, list_topologies)
{
	expect_listing("--list-topologies",
		       (const char *const[]){"haswell-i7", "haswell-i7-smt-thread", NULL});
}

Test(e2e_names, list_workloads)
{
	expect_listing("--list-workloads", (const char *const[]){"munmap16", "munmap", NULL});
}

Test(e2e_names, list_policies)
{
	expect_listing("--list-policies", (const char *const[]){"linux-4.5", "linux-4.5-smt-dedup",
								"linux-3.11", NULL});
}

/* --list-keys: the --set keys of the named inputs, each taken by --set. */
Test(e2e_names, list_keys)
{
	struct run r;
	run_tlbsim(&r, "-w", "munmap16", "--list-keys", NULL);
	expect_status(&r, 0);
	cr_expect_str_empty(r.err);
	cr_expect(lists(r.out, "workload.threads"), "%s", r.out);
	cr_expect(lists(r.out, "workload.file_size"), "%s", r.out);
	cr_expect_not(lists(r.out, "topology.sockets"), "no topology named:\n%s", r.out);
	run_clear(&r);

	run_tlbsim(&r, "-T", "haswell-i7", "--list-keys", NULL);
	expect_status(&r, 0);
	cr_expect(lists(r.out, "topology.sockets"), "%s", r.out);
	cr_expect(lists(r.out, "policy.single_page_flush_ceiling"), "the default policy:\n%s",
		  r.out);
	run_clear(&r);

	run_tlbsim(&r, "--list-keys", NULL);
	expect_status(&r, 2);
	cr_expect(strstr(r.err, "name at least one"), "%s", r.err);
	run_clear(&r);

	run_tlbsim(&r, "-w", "munmap61", "--list-keys", NULL);
	expect_status(&r, 2);
	cr_expect(strstr(r.err, "did you mean \"munmap16\""), "%s", r.err);
	run_clear(&r);
}

Test(e2e_names, version)
{
	struct run r;
	run_tlbsim(&r, "--version", NULL);
	expect_status(&r, 0);
	/* The commit: 7 hex digits (-dirty when the tree differs), "unknown" outside git. */
	cr_expect(
	    matches("^tlbsim [0-9]+\\.[0-9]+\\.[0-9]+ \\(([0-9a-f]{7}(-dirty)?|unknown)\\)\n$",
		    r.out),
	    "stdout: %s", r.out);
	cr_expect_str_eq(r.out, "tlbsim " TLBSIM_VERSION " (" TLBSIM_COMMIT ")\n");
	run_clear(&r);
}

Test(e2e_names, bare_name_json_suffix_and_path_are_equivalent)
{
	struct run a, b, c, d;
	run_tlbsim(&a, "-q", "-T", "haswell-i7", "-w", SMALL, "-p", "linux-4.5", NULL);
	run_tlbsim(&b, "-q", "-T", "haswell-i7.json", "-w", SMALL, "-p", "linux-4.5.json", NULL);
	run_tlbsim(&c, "-q", "-T", HASWELL_PATH, "-w", SMALL, "-p",
		   TLBSIM_SOURCE_DIR "/policies/linux-4.5.json", NULL);
	/* The default policy is linux-4.5. */
	run_tlbsim(&d, "-q", "-T", "haswell-i7", "-w", SMALL, NULL);
	expect_status(&a, 0);
	expect_status(&b, 0);
	expect_status(&c, 0);
	expect_status(&d, 0);
	cr_expect_str_eq(b.out, a.out);
	cr_expect_str_eq(c.out, a.out);
	cr_expect_str_eq(d.out, a.out);
	run_clear(&a);
	run_clear(&b);
	run_clear(&c);
	run_clear(&d);
}

/* A relative path is taken from the working directory; the CSV names the
 * run by the file's "name" field, not by how it was given. */
Test(e2e_names, relative_path)
{
	char *text = NULL;
	cr_assert(g_file_get_contents(SMALL, &text, NULL, NULL));
	char *copy = tmp_path("copy.json");
	cr_assert(g_file_set_contents(copy, text, -1, NULL));
	struct run a, b;
	run_tlbsim(&a, "-q", "-T", "haswell-i7", "-w", SMALL, NULL);
	run_tlbsim(&b, "-q", "-T", "haswell-i7", "-w", "./copy.json", NULL);
	expect_status(&a, 0);
	expect_status(&b, 0);
	cr_expect_str_eq(b.out, a.out);
	g_free(copy);
	g_free(text);
	run_clear(&a);
	run_clear(&b);
}

Test(e2e_names, workload_by_bundled_name_with_set)
{
	/* munmap.json as -t 2 -n 8 on an 8 MiB file: 8 MiB / 4 KiB / 8 munmaps. */
	struct table t;
	run_row(&t, "haswell-i7", "munmap", "linux-4.5", "1", "--set=workload.threads=2",
		"--set=workload.file_size=\"8M\"", "--set=workload.tail_ms=1", NULL);
	cr_expect_str_eq(table_get(&t, 0, "workload"), "munmap");
	cr_expect_eq(table_u64(&t, 0, "threads"), 2);
	cr_expect_eq(table_u64(&t, 0, "op_count"), 8 * 1024 / 4 / 8);
	table_clear(&t);
}

/*
 * munmap.json's tail: tail_us defaults to tail_ms x 1000 (same run), and sets
 * tails that are not whole milliseconds: the phase is the munmaps plus the
 * tail, so 500 us more tail is exactly 500 us more phase.
 */
Test(e2e_names, munmap_tail_in_microseconds)
{
	struct run ms, us, half;
#define TAIL_RUN(r, tail)                                                                  \
	run_tlbsim(&(r), "-q", "-T", "haswell-i7", "-w", "munmap", "-p", "linux-4.5",          \
		   "--set=workload.threads=2", "--set=workload.file_size=\"2M\"", tail, NULL)
	TAIL_RUN(ms, "--set=workload.tail_ms=2");
	TAIL_RUN(us, "--set=workload.tail_us=2000");
	TAIL_RUN(half, "--set=workload.tail_us=2500");
#undef TAIL_RUN
	expect_status(&ms, 0);
	expect_status(&us, 0);
	expect_status(&half, 0);
	cr_expect_str_eq(us.out, ms.out);
	struct table a, b;
	table_parse(&a, ms.out);
	table_parse(&b, half.out);
	double longer = g_ascii_strtod(table_get(&b, 0, "phase_ns"), NULL) -
			g_ascii_strtod(table_get(&a, 0, "phase_ns"), NULL);
	cr_expect_eq(llround(longer * 1000), 500000000, "phase %.3f ns longer", longer);
	table_clear(&a);
	table_clear(&b);
	run_clear(&ms);
	run_clear(&us);
	run_clear(&half);
}
