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
 * - a directory is refused.
 *
 * Every message names the file as the user gave it, and the errno of the
 * call that failed ("cannot write t.json: No space left on device").
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <glib.h>

struct output_file;

/**
 * output_open() - start writing @path (see above); nothing is visible at
 * @path before output_commit().  Errors (TLBSIM_ERROR_IO): @path is a
 * directory, no temporary file can be made.  The struct keeps a copy of @path.
 */
struct output_file *output_open(const char *path, GError **error);
/* The stream to write to; valid until output_finish(). */
FILE *output_stream(struct output_file *file);
/**
 * output_finish() - flush the stream and make its data durable (fsync);
 * false with the errno of the first write that failed.  Call once.
 */
bool output_finish(struct output_file *file, GError **error);
/* Put the finished data at the path: rename, or copy into a device or FIFO. */
bool output_commit(struct output_file *file, GError **error);
/*
 * After output_commit(): remove the file the rename put in place, so that a
 * run whose other outputs failed leaves none (the old contents are gone).
 * Data written into a device or a FIFO cannot be taken back.
 */
void output_revert(struct output_file *file);
/* Discards what was not committed; NULL is a no-op. */
void output_free(struct output_file *file);

/* @len bytes of @data to @path: output_open(), write, finish, commit. */
bool output_write(const char *path, const char *data, size_t len, GError **error);

/**
 * output_append() - append @block to @path (created if missing) under an
 * exclusive flock(), preceded by @header (may be NULL) if the file is empty:
 * concurrent runs appending to one CSV never interleave or duplicate the
 * header.  All or nothing: if a write or the fsync fails (a full disk), the
 * file is truncated back to its size before, and the error carries the errno.
 */
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
