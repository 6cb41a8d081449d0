/*
 * Tests of src/cli/output.c: where an output goes (a regular file through a
 * temporary file and a rename, a link's target, into a FIFO, never a
 * directory), appends that are all or nothing, errors that keep the errno
 * and name the file, and which two paths are one file.
 *
 * Each test works in a scratch directory of its own, made by .init and
 * removed by .fini.  Criterion runs each test in its own process, so the
 * file-size limits set here (to make writes fail with EFBIG, as a full disk
 * would with ENOSPC) end with the test.
 */
#define _POSIX_C_SOURCE 200809L /* symlink(), mkfifo() */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "support.h"
#include "tlbsim/cli/output.h"
#include "tlbsim/util/error.h"

static char *dir;

static void dir_make(void)
{
	dir = g_dir_make_tmp("tlbsim-test-output-XXXXXX", NULL);
	cr_assert_not_null(dir);
	cr_assert_eq(g_chdir(dir), 0);
}

static void dir_remove(void)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *name;
	while (d && (name = g_dir_read_name(d))) {
		char *path = g_build_filename(dir, name, NULL);
		g_unlink(path);
		g_free(path);
	}
	if (d)
		g_dir_close(d);
	g_rmdir(dir);
	g_free(dir);
}

TestSuite(output, .init = dir_make, .fini = dir_remove);

static char *contents(const char *name)
{
	char *text = NULL;
	cr_assert(g_file_get_contents(name, &text, NULL, NULL), "cannot read %s", name);
	return text;
}

/* Later writes to files fail with EFBIG past @bytes, instead of a signal. */
static void limit_file_size(rlim_t bytes)
{
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit rl = {bytes, bytes};
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

Test(output, regular_file_replaced_whole)
{
	cr_assert(g_file_set_contents("out.csv", "old contents\n", -1, NULL));
	GError *error = NULL;
	cr_assert(output_write("out.csv", "new\n", 4, &error), "%s", error ? error->message : "");
	char *text = contents("out.csv");
	cr_expect_str_eq(text, "new\n");
	g_free(text);
	char *list = support_dir_listing(dir);
	cr_expect_str_eq(list, "out.csv", "a temporary file was left: %s", list);
	g_free(list);
}

Test(output, link_followed_and_kept)
{
	cr_assert(g_file_set_contents("real.json", "old\n", -1, NULL));
	cr_assert_eq(symlink("real.json", "link.json"), 0);
	struct output_file *f = output_open("link.json", NULL);
	cr_assert_not_null(f);
	fputs("{}\n", output_stream(f));
	cr_assert(output_finish(f, NULL));
	cr_assert(output_commit(f, NULL));
	output_free(f);
	struct stat st;
	cr_assert_eq(lstat("link.json", &st), 0);
	cr_expect(S_ISLNK(st.st_mode), "the link was replaced");
	char *text = contents("real.json");
	cr_expect_str_eq(text, "{}\n");
	g_free(text);
}

/* A stream for a FIFO waits in a temporary file: nothing before the commit. */
Test(output, fifo_written_into_at_commit)
{
	cr_assert_eq(mkfifo("fifo", 0600), 0);
	int reader = open("fifo", O_RDONLY | O_NONBLOCK);
	cr_assert_geq(reader, 0);
	struct output_file *f = output_open("fifo", NULL);
	cr_assert_not_null(f);
	fputs("t_ns,cpu\n", output_stream(f));
	cr_assert(output_finish(f, NULL));
	char buf[64] = {0};
	cr_expect_leq(read(reader, buf, sizeof(buf) - 1), 0, "written before the commit");
	cr_assert(output_commit(f, NULL));
	output_free(f);
	cr_expect_eq(read(reader, buf, sizeof(buf) - 1), 9);
	cr_expect_str_eq(buf, "t_ns,cpu\n");
	close(reader);
	struct stat st;
	cr_assert_eq(lstat("fifo", &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
}

Test(output, directory_refused)
{
	cr_assert_eq(g_mkdir("sub", 0700), 0);
	GError *error = NULL;
	cr_assert_null(output_open("sub", &error));
	cr_expect_str_eq(error->message, "cannot write sub: Is a directory");
	g_clear_error(&error);
	cr_assert_not(output_write("no-such-dir/x.csv", "x", 1, &error));
	cr_expect_str_eq(error->message,
			 "cannot write no-such-dir/x.csv: cannot create a temporary file in "
			 "no-such-dir: No such file or directory");
	g_error_free(error);
}

/* A failed write of a stream is reported with its own errno, at the finish,
 * and nothing is left. */
Test(output, failed_stream_keeps_the_errno)
{
	limit_file_size(100);
	struct output_file *f = output_open("t.json", NULL);
	cr_assert_not_null(f);
	for (int i = 0; i < 1000; i++)
		fputs("{\"name\":\"x\"},\n", output_stream(f));
	errno = ENOENT; /* what the calls since the failed write may have left */
	GError *error = NULL;
	cr_assert_not(output_finish(f, &error));
	cr_expect_str_eq(error->message, "cannot write t.json: File too large");
	g_error_free(error);
	output_free(f);
	char *list = support_dir_listing(dir);
	cr_expect_str_eq(list, "", "left behind: %s", list);
	g_free(list);
}

Test(output, revert_removes_what_the_commit_renamed)
{
	struct output_file *f = output_open("p.csv", NULL);
	cr_assert_not_null(f);
	cr_assert(output_finish(f, NULL) && output_commit(f, NULL));
	cr_expect(g_file_test("p.csv", G_FILE_TEST_EXISTS));
	output_revert(f);
	cr_expect_not(g_file_test("p.csv", G_FILE_TEST_EXISTS));
	output_free(f);
}

Test(output, append_header_only_when_empty)
{
	cr_assert(output_append("all.csv", "h\n", "1\n", NULL));
	cr_assert(output_append("all.csv", "h\n", "2\n", NULL));
	cr_assert(output_append("all.csv", NULL, "3\n", NULL));
	char *text = contents("all.csv");
	cr_expect_str_eq(text, "h\n1\n2\n3\n");
	g_free(text);
}

/* Cut short part-way (the limit stands for a full disk): truncated back. */
Test(output, failed_append_truncates_back)
{
	cr_assert(output_append("all.csv", "header\n", "row 1\n", NULL));
	limit_file_size(20);
	GError *error = NULL;
	cr_assert_not(output_append("all.csv", "header\n", "a row longer than the limit\n",
				    &error));
	cr_expect_str_eq(error->message, "cannot append to all.csv: File too large");
	g_error_free(error);
	char *text = contents("all.csv");
	cr_expect_str_eq(text, "header\nrow 1\n", "half a row was left");
	g_free(text);
}

Test(output, same_file)
{
	cr_assert(g_file_set_contents("a.csv", "", -1, NULL));
	cr_assert_eq(symlink("a.csv", "l.csv"), 0);
	cr_assert_eq(link("a.csv", "h.csv"), 0);
	cr_assert_eq(g_mkdir("sub", 0700), 0);
	cr_expect(output_same_file("a.csv", "./a.csv"));
	cr_expect(output_same_file("a.csv", "l.csv"), "through a link");
	cr_expect(output_same_file("a.csv", "h.csv"), "a hard link");
	cr_expect(output_same_file("new.csv", "sub/../new.csv"), "neither exists");
	cr_expect_not(output_same_file("a.csv", "new.csv"));
	cr_expect_not(output_same_file("new.csv", "other.csv"));
	/* One device or FIFO may take several outputs, one after the other. */
	cr_expect_not(output_same_file("/dev/null", "/dev/null"));
	g_rmdir("sub");
}

/* ---- Committing outputs together (issue 26) ------------------------------ */

/* Remove @prefix's temporary file ("b.csv.XXXXXX"): its rename then fails. */
static void remove_temporary(const char *prefix)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *name;
	int removed = 0;
	while ((name = g_dir_read_name(d)))
		if (g_str_has_prefix(name, prefix) && strlen(name) == strlen(prefix) + 6)
			removed += g_unlink(name) == 0;
	g_dir_close(d);
	cr_assert_eq(removed, 1);
}

static struct output_file *finished(struct output_file *f, const char *data)
{
	cr_assert_not_null(f);
	fputs(data, output_stream(f));
	cr_assert(output_finish(f, NULL));
	return f;
}

static void expect_contents(const char *name, const char *expected)
{
	char *text = contents(name);
	cr_expect_str_eq(text, expected, "%s", name);
	g_free(text);
}

/*
 * The second rename fails: the first file is put back as it was (it was
 * removed, with what it held, before), and so is the file an append
 * created.
 */
Test(output, failed_rename_puts_back_what_was_replaced)
{
	cr_assert(g_file_set_contents("a.csv", "old a\n", -1, NULL));
	cr_assert(g_file_set_contents("b.csv", "old b\n", -1, NULL));
	struct output_file *files[] = {
		finished(output_open("a.csv", NULL), "new a\n"),
		finished(output_open_append("new.csv", "h\n", NULL), "row\n"),
		finished(output_open("b.csv", NULL), "new b\n"),
	};
	remove_temporary("b.csv.");
	GError *error = NULL;
	cr_assert_not(output_commit_all(files, G_N_ELEMENTS(files), NULL, &error));
	cr_expect_str_eq(error->message, "cannot write b.csv: cannot rename the temporary file "
					 "over it: No such file or directory");
	g_clear_error(&error);
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++)
		output_free(files[i]);
	expect_contents("a.csv", "old a\n");
	expect_contents("b.csv", "old b\n");
	char *list = support_dir_listing(dir);
	cr_expect_str_eq(list, "a.csv b.csv", "left behind: %s", list);
	g_free(list);
}

/* Committed: the new files, and no second name of the old ones left. */
Test(output, commit_replaces_and_appends_together)
{
	cr_assert(g_file_set_contents("a.csv", "old a\n", -1, NULL));
	cr_assert(g_file_set_contents("all.csv", "h\nrow 1\n", -1, NULL));
	struct output_file *files[] = {
		finished(output_open("a.csv", NULL), "new a\n"),
		finished(output_open_append("all.csv", "h\n", NULL), "row 2\n"),
		NULL,
	};
	GError *error = NULL;
	cr_assert(output_commit_all(files, G_N_ELEMENTS(files), NULL, &error), "%s",
		  error ? error->message : "");
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++)
		output_free(files[i]);
	expect_contents("a.csv", "new a\n");
	expect_contents("all.csv", "h\nrow 1\nrow 2\n");
	char *list = support_dir_listing(dir);
	cr_expect_str_eq(list, "a.csv all.csv", "left behind: %s", list);
	g_free(list);
}

/* An append that fails to a file it created removes it: no empty file. */
Test(output, failed_append_to_a_new_file_removes_it)
{
	limit_file_size(4);
	GError *error = NULL;
	cr_assert_not(output_append("new.csv", "a header\n", "1\n", &error));
	cr_expect_str_eq(error->message, "cannot append to new.csv: File too large");
	g_error_free(error);
	char *list = support_dir_listing(dir);
	cr_expect_str_eq(list, "", "left behind: %s", list);
	g_free(list);
}

/*
 * A FIFO nobody reads is waited for only until a stop: the commit fails with
 * the stop's error, and the FIFO and the regular file are as they were.
 */
Test(output, stop_ends_the_wait_for_a_reader)
{
	cr_assert_eq(mkfifo("fifo", 0600), 0);
	cr_assert(g_file_set_contents("a.csv", "old a\n", -1, NULL));
	struct output_file *files[] = {
		finished(output_open("a.csv", NULL), "new a\n"),
		finished(output_open("fifo", NULL), "data\n"),
	};
	atomic_int cancel = 0;
	struct stop stop = stop_from_now(&cancel, 0);
	atomic_store(&cancel, 1);
	GError *error = NULL;
	cr_assert_not(output_commit_all(files, G_N_ELEMENTS(files), &stop, &error));
	cr_expect(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INTERRUPTED), "%s",
		  error->message);
	g_clear_error(&error);
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++)
		output_free(files[i]);
	expect_contents("a.csv", "old a\n");
	struct stat st;
	cr_assert_eq(lstat("fifo", &st), 0);
	cr_expect(S_ISFIFO(st.st_mode));
}
