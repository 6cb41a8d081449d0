#ifndef TLBSIM_OUTPUT_H
#define TLBSIM_OUTPUT_H
/*
 * Output files written all or nothing: the CSV (-o), the per-CPU CSV, the
 * trace and the time series all go through here, so that each treats a
 * device, a FIFO or a symbolic link the same way:
 *
 * - a regular file (or a new one) is written to a temporary file in its
 *   directory and renamed over it at the end;
 * - a symbolic link is followed: the file it names is replaced, the link
 *   stays (a dangling link is itself replaced);
 * - a device, a FIFO or a socket (-o /dev/stdout, a pipe) is written into,
 *   never replaced: a rename over it would replace the node itself, and as
 *   root "-o /dev/null" would make /dev/null a regular file.  A stream meant
 *   for one waits in an anonymous temporary file in $TMPDIR until the commit;
 * - a directory is refused;
 * - with output_open_append(), a file is appended to under an exclusive
 *   flock().
 *
 * Several outputs are committed together (output_commit_all()): all of them
 * or none, as far as the file system allows.
 *
 * Every message names the file as the user gave it, and the errno of the
 * call that failed ("cannot write t.json: No space left on device").
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <glib.h>
#include "tlbsim/util/stop.h"

struct output_file;

/**
 * output_open() - start writing @path (see above); nothing is visible at
 * @path before the commit.  Errors (TLBSIM_ERROR_IO): @path is a
 * directory, no temporary file can be made.  The struct keeps a copy of @path.
 */
struct output_file *output_open(const char *path, GError **error);
/* Start writing into the open descriptor @fd (borrowed; standard output),
 * called @name in messages ("the CSV to standard output"). */
struct output_file *output_open_fd(int fd, const char *name, GError **error);
/*
 * output_open_append() - start appending to @path (created if missing),
 * preceded by @header (may be NULL) if the file is empty when the commit
 * takes its lock: concurrent runs appending to one CSV never interleave or
 * duplicate the header.  Messages say "cannot append to PATH".
 */
struct output_file *output_open_append(const char *path, const char *header, GError **error);
/* The stream to write to; valid until output_finish(). */
FILE *output_stream(struct output_file *file);
/**
 * output_finish() - flush the stream and make its data durable (fsync);
 * false with the errno of the first write that failed.  Call once.
 */
bool output_finish(struct output_file *file, GError **error);

/**
 * output_commit_all() - put the finished outputs of @files (NULL entries
 * skipped) in place, all or none.
 * @stop: polled while waiting (a FIFO's reader, a full pipe, another run's
 *        lock); may be NULL.
 *
 * In three steps, from what cannot be taken back to what can:
 * 1. the data goes into the devices, FIFOs and descriptors, each opened
 *    now and waited for as long as it takes (unless @stop);
 * 2. the appends, each under its lock, held until output_free();
 * 3. @stop is looked at a last time, and the regular files are renamed into
 *    place, each replaced file keeping a second name until output_free().
 * If any step fails (or @stop comes), what steps 2 and 3 did is taken
 * back: the appended files are truncated back (removed if this commit
 * created them), the replaced files put back.  Data written into a device
 * or a FIFO cannot be taken back.  Errors: TLBSIM_ERROR_IO naming the
 * file, or stop_check()'s.
 */
bool output_commit_all(struct output_file *const *files, size_t n, const struct stop *stop,
		       GError **error);
/* output_commit_all() of @file alone, without a stop. */
bool output_commit(struct output_file *file, GError **error);
/*
 * After a successful commit: take it back as a failed output_commit_all()
 * does (the replaced file put back, or the new one removed; an append
 * truncated back).  Data written into a device or a FIFO cannot be taken
 * back.
 */
void output_revert(struct output_file *file);
/* Discards what was not committed, the replaced files' second names, and
 * an append's lock; NULL is a no-op. */
void output_free(struct output_file *file);

/* @len bytes of @data to @path: output_open(), write, finish, commit. */
bool output_write(const char *path, const char *data, size_t len, GError **error);
/* @block to @path: output_open_append(), write, finish, commit.  All or
 * nothing: if a write or the fsync fails (a full disk), the file is
 * truncated back to its size before (removed if it was created), and the
 * error carries the errno. */
bool output_append(const char *path, const char *header, const char *block, GError **error);

/* write(2) all of @data to @fd, again after EINTR; false with errno set. */
bool output_write_fd(int fd, const char *data, size_t len);

/*
 * Do @a and @b name the same regular file (also through links or other
 * spellings), or, when neither exists yet, the same path?  Two names of one
 * device or FIFO are not the same file here: outputs are written into it in
 * turn, and none is lost.
 */
bool output_same_file(const char *a, const char *b);

#endif
