#ifndef TLBSIM_TESTS_E2E_SUPPORT_H
#define TLBSIM_TESTS_E2E_SUPPORT_H
/*
 * Helpers shared by the end-to-end tests (tests/test_e2e_*.c), which run the
 * tlbsim program as a user runs it (src/cli/: main.c, report.c, output.c, and
 * sweep.c through "tlbsim sweep"), with g_spawn_sync in a fresh temporary
 * directory, and check its exit status, stdout, stderr and output files.
 *
 * Notes:
 * - Most runs use tests/data/e2e-small.json, munmap16's harness scaled down
 *   (4 readers, 128 munmaps of 8 pages, 4 MiB, 1 ms tail): a run takes tens of
 *   milliseconds.  munmap16 itself (several seconds) runs exactly once.
 * - The CSV written here never needs quoting (names have no comma or quote),
 *   so a row is split on ','; table_parse() asserts there is no '"'.
 * - Counts asserted exactly (128 munmaps, 7 receivers per flush...) follow
 *   from the workload and topology files; each says where it comes from.
 *
 * Every suite is declared with .init = tmp_dir_make, .fini = tmp_dir_remove,
 * so that each test runs in a scratch directory of its own.  The helpers
 * assert with Criterion: a failed check fails the calling test.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <glib.h>

#ifndef TLBSIM_BINARY
#error "TLBSIM_BINARY must be the absolute path of the tlbsim program"
#endif
#ifndef TLBSIM_SOURCE_DIR
#error "TLBSIM_SOURCE_DIR must be the absolute path of the source tree"
#endif
#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif

#define SMALL TLBSIM_TEST_DATA "/e2e-small.json"
#define ACCESS_ONLY TLBSIM_TEST_DATA "/e2e-access-only.json"
#define TOUCH_MUNMAP TLBSIM_TEST_DATA "/e2e-smt-touch-munmap.json"
#define TOUCH_MADVISE TLBSIM_TEST_DATA "/e2e-smt-touch-madvise.json"
#define TINY TLBSIM_TEST_DATA "/tiny-2cpu.json"

/* e2e-small: file_size / 4096 / pages_per_munmap = 4 MiB / 4 KiB / 8. */
#define SMALL_MUNMAPS 128

/* The harness's own summary line (munmap16's and e2e-small's "summary"). */
#define HARNESS_SUMMARY                                                                            \
	"^munmap use [0-9]+ms [0-9]+ns/time, memory access uses [0-9]+ times/thread/ms, "          \
	"cost [0-9]+ns/time$"

/* --------------------------------------------------------------------------
 * The scratch directory
 * ------------------------------------------------------------------------ */

/*
 * The test's scratch directory, made by .init and removed by .fini (which
 * Criterion runs even after a failed assertion).  Each test runs in its own
 * process, so this is per test, not shared.
 */
extern char *tmp_dir;

/**
 * tmp_dir_make() - Make the test's scratch directory (a suite's .init).
 *
 * Sets tmp_dir to a new directory under the system's temporary directory.
 * Asserts that it could be made.
 */
void tmp_dir_make(void);

/**
 * tmp_dir_remove() - Remove the scratch directory and everything the test
 * wrote in it (a suite's .fini).
 *
 * Removes the tree under tmp_dir (if any) and resets tmp_dir to NULL.
 * Asserts nothing: it runs after failed tests too.
 */
void tmp_dir_remove(void);

/**
 * tmp_path() - The path of a file in the scratch directory.
 * @name: a name relative to tmp_dir.
 *
 * Return: the path, to g_free().  Asserts nothing; the file need not exist.
 */
char *tmp_path(const char *name);

/**
 * read_tmp() - The contents of a file in the scratch directory.
 * @name: a name relative to tmp_dir.
 *
 * Return: the contents, to g_free().  Asserts that the file exists and
 * could be read.
 */
char *read_tmp(const char *name);

/**
 * write_tmp() - Write a file in the scratch directory.
 * @name: a name relative to tmp_dir; an existing file is replaced.
 * @text: the contents, NUL-terminated.
 *
 * Asserts that the file could be written.
 */
void write_tmp(const char *name, const char *text);

/**
 * expect_tmp_listing() - Check what the scratch directory holds.
 * @expected: the names, sorted and joined with spaces ("" for none).
 *
 * Expects (a non-fatal check) the listing to be @expected: a test uses it
 * to show that no temporary or partial file was left behind.
 */
void expect_tmp_listing(const char *expected);

/* --------------------------------------------------------------------------
 * Running the program
 * ------------------------------------------------------------------------ */

struct run {
	int status; /* exit status; -1 if the program did not exit normally */
	char *out;
	char *err;
};

/**
 * run_clear() - Free a run's captured stdout and stderr and zero it.
 * @r: a run filled by run_tlbsim*().
 */
void run_clear(struct run *r);

/* What the child gets before exec: a file-size limit (bytes; 0: none), with
 * SIGXFSZ ignored so that a write past it fails with EFBIG; a limit on its
 * data (RLIMIT_DATA, bytes: heap and private memory; 0: none), so that a
 * malloc past it fails; stdout on a device that is always full. */
struct child_limits {
	rlim_t file_size;
	rlim_t data_size;
	bool stdout_full;
};

/**
 * run_tlbsim_limited() - Run tlbsim in the scratch directory under limits.
 * @r: filled with the exit status, stdout and stderr; run_clear() it.
 * @limits: what the child gets before exec (NULL: nothing).
 * @args: the program's arguments (without argv[0]), NULL-terminated.
 *
 * TLBSIM_DATADIR is removed from the child's environment, so that bare
 * names resolve in this source tree.  Waits for the program to end.
 * Asserts that the program could be started; its exit status is not
 * checked (expect_status()).
 */
void run_tlbsim_limited(struct run *r, const struct child_limits *limits, const char *const *args);

/**
 * run_tlbsim_argv() - run_tlbsim_limited() without limits.
 * @r: filled with the exit status, stdout and stderr; run_clear() it.
 * @args: the program's arguments (without argv[0]), NULL-terminated.
 */
void run_tlbsim_argv(struct run *r, const char *const *args);

/**
 * run_tlbsim_sets() - run_tlbsim_argv() of @args followed by "--set=S" for
 * each S of @sets.
 * @args, @sets: NULL-terminated.
 */
void run_tlbsim_sets(struct run *r, const char *const *args, const char *const *sets);

/**
 * run_tlbsim() - run_tlbsim_argv() with the arguments as a variadic list.
 * @r: filled with the exit status, stdout and stderr; run_clear() it.
 * @arg: the first argument, then the others, up to a NULL.
 *
 * A NULL argument ends the list, so callers may pass optional arguments as
 * NULL at its end (run_row()).
 */
G_GNUC_NULL_TERMINATED void run_tlbsim(struct run *r, const char *arg, ...);

/**
 * expect_status() - Check a run's exit status.
 * @r: the run.
 * @status: the expected exit status.
 *
 * Asserts (fatal) that the run exited with @status; the failure message
 * shows the run's stderr, which says why.
 */
void expect_status(const struct run *r, int status);

/**
 * expect_input_error() - Check that a run was refused for its input.
 * @r: the run.
 * @...: strings the message must hold, up to a NULL.
 *
 * Asserts exit status 2, and expects no CSV on stdout (not even a header)
 * and one message on stderr, starting with "tlbsim: ", holding every string
 * of the list.
 */
G_GNUC_NULL_TERMINATED void expect_input_error(const struct run *r, ...);

/* --------------------------------------------------------------------------
 * A run in the background, to signal while it goes on
 * ------------------------------------------------------------------------ */

struct child {
	GPid pid;
	int err_fd; /* its stderr, read by child_wait() */
	int status; /* after child_wait(): the exit status; -1 if a signal ended it */
	char *err;  /* after child_wait(): what it wrote on stderr */
};

/**
 * child_start() - Start tlbsim in the scratch directory without waiting.
 * @c: filled in; child_wait() it.
 * @env: "NAME=VALUE" entries added to the child's environment,
 *       NULL-terminated; may be NULL.
 * @args: the program's arguments (without argv[0]), NULL-terminated.
 *
 * As run_tlbsim_argv(): TLBSIM_DATADIR removed, stdout discarded.
 */
void child_start(struct child *c, const char *const *env, const char *const *args);

/**
 * child_rss_kb() - The child's resident memory now, in KiB.
 * @c: a started child.
 *
 * Return: what /proc says, or -1 once it has exited.
 */
long child_rss_kb(const struct child *c);

/**
 * child_wait_rss() - Wait until the child's resident memory reaches @kb.
 * @c: a started child.
 * @kb: the resident size in KiB.
 * @timeout: seconds to wait at most.
 *
 * Return: false if the child exited first or @timeout passed.
 */
bool child_wait_rss(const struct child *c, long kb, double timeout);

/**
 * child_wait() - Reap the child, reading its stderr.
 * @c: a started child; its status and err are set.
 * @timeout: seconds to wait at most; then the child is killed (SIGKILL).
 *
 * Return: false if the child had to be killed.
 */
bool child_wait(struct child *c, double timeout);

/* Free what child_wait() read. */
void child_clear(struct child *c);

/**
 * children_max_rss_kb() - The largest resident size any reaped child of
 * this test reached, in KiB (getrusage(RUSAGE_CHILDREN)).
 */
long children_max_rss_kb(void);

/* --------------------------------------------------------------------------
 * CSV
 * ------------------------------------------------------------------------ */

struct table {
	char **header;
	GPtrArray *rows; /* char ** each */
	unsigned nr_fields;
};

/**
 * table_parse() - Parse CSV text into a table.
 * @t: the table to fill; table_clear() it.
 * @text: a header line and zero or more rows, each ending with '\n'.
 *
 * Asserts that @text ends with a newline, holds no quoted field, has a
 * header line, and that every row has as many fields as the header.
 */
void table_parse(struct table *t, const char *text);

/**
 * table_clear() - Free a table and zero it.
 * @t: a table filled by table_parse().
 */
void table_clear(struct table *t);

/**
 * table_column() - The index of a column.
 * @t: the table.
 * @name: the column's name in the header.
 *
 * Return: the column's index, or -1 if the header has no such column.
 */
int table_column(const struct table *t, const char *name);

/**
 * table_get() - A field of a table, as text.
 * @t: the table.
 * @row: the row's index, 0 for the first row after the header.
 * @name: the column's name.
 *
 * Return: the field, owned by @t.  Asserts that the column and the row exist.
 */
const char *table_get(const struct table *t, unsigned row, const char *name);

/**
 * table_u64() - A field of a table, as an unsigned decimal integer.
 * @t: the table.
 * @row: the row's index.
 * @name: the column's name.
 *
 * Return: the field's value.  Asserts that the column and the row exist and
 * that the field is a decimal integer that fits 64 bits.
 */
uint64_t table_u64(const struct table *t, unsigned row, const char *name);

/**
 * expected_header() - The run CSV's header, as report_columns() describes it.
 *
 * Return: the header line without its newline, to g_free().
 */
char *expected_header(void);

/**
 * run_row() - Run tlbsim -q and parse its CSV of one row.
 * @t: the table to fill; table_clear() it.
 * @topology: the -T argument.
 * @workload: the -w argument.
 * @policy: the -p argument.
 * @seed: the --seed argument.
 * @...: more arguments, NULL-terminated.
 *
 * Asserts exit status 0 and a CSV of a header and exactly one row.
 */
void run_row(struct table *t, const char *topology, const char *workload, const char *policy,
	     const char *seed, ...) G_GNUC_NULL_TERMINATED;

/**
 * run_small() - run_row() of e2e-small with seed 1.
 * @t: the table to fill; table_clear() it.
 * @topology: the -T argument.
 * @policy: the -p argument.
 */
void run_small(struct table *t, const char *topology, const char *policy);

/**
 * matches() - Whether a string matches a regular expression.
 * @pattern: a GLib (PCRE) regular expression.
 * @s: the string.
 *
 * Return: true if @pattern matches somewhere in @s (anchor it to match all).
 */
bool matches(const char *pattern, const char *s);

/**
 * expect_field_formats() - Check the format of every field of a run CSV.
 * @t: a table of the run CSV (report.c), any number of rows.
 *
 * Expects the fixed-point columns (put_milli() in report.c) to have three
 * decimals, the name columns to be names, host_seconds to be empty or have
 * six decimals, and any other column to be a count (an unsigned integer),
 * which is what a new counter column will be.
 */
void expect_field_formats(const struct table *t);

/**
 * expect_identities() - Check the counter identities (README "Counters").
 * @t: a table of the run CSV; row 0 is checked.
 * @what: names the run in failure messages.
 *
 * Expects tlb_lookups == tlb_hits + tlb_misses == accesses, page_walks >=
 * tlb_misses, stlb_hits <= tlb_hits, ipis_sent == ipis_received, and that
 * the tlb:tlb_flush reasons' columns add up to tlb_flush_events (each
 * reason's _full column at most the reason's).
 */
void expect_identities(const struct table *t, const char *what);

#endif
