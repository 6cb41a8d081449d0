/*
 * Output files written all or nothing (see include/tlbsim/cli/output.h).
 *
 * Notes:
 * - Streams write through fopencookie() into the temporary file's descriptor
 *   so that the errno of the first failed write is kept: stdio keeps only an
 *   error flag, and by the time a writer checks it (the trace is checked at
 *   the end of the run) errno says something else.  After a failed write the
 *   stream writes nothing more: the file is incomplete anyway.
 * - A regular file's temporary copy is fsync()ed before the rename, so that
 *   an error a file system reports late (NFS, delayed allocation) is seen
 *   before the old file is replaced, and a crash leaves the old or the new
 *   file, not an empty one.
 * - Where a path leads is decided once, when the output is opened; a path
 *   that changes kind while the run goes on (a FIFO made in its place) is
 *   not noticed.
 */
#define _GNU_SOURCE /* fopencookie(), flock() */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tlbsim/cli/output.h"
#include "tlbsim/util/error.h"

struct output_file {
	char *path;      /* as given, for messages */
	char *target;    /* what the rename replaces: @path, or the file a link names */
	char *tmp;       /* the temporary file beside @target until renamed; NULL in place */
	bool in_place;   /* a device or a FIFO: written into at the commit */
	bool renamed;    /* output_commit() put @target in place */
	int fd;          /* the temporary file; -1 once closed */
	FILE *fp;        /* writes to @fd; NULL once finished */
	int write_errno; /* errno of the first failed write through @fp; 0: none */
};

/* "cannot write PATH: [DOING: ]REASON"; always false. */
static bool set_write_error(GError **error, const char *path, const char *doing, int errnum)
{
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s%s%s", path,
		    doing ? doing : "", doing ? ": " : "", g_strerror(errnum));
	return false;
}

bool output_write_fd(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* write(2) of a non-zero length does not return 0 */
			return false;
		}
		data += n;
		len -= (size_t)n;
	}
	return true;
}

static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
	struct output_file *f = cookie;
	if (f->write_errno)
		return 0;
	if (!output_write_fd(f->fd, buf, size)) {
		f->write_errno = errno;
		return 0; /* fopencookie(3): 0 on error; stdio sets the error flag */
	}
	return (ssize_t)size;
}

/* The temporary file is a regular file: the stream can seek in it (a
 * trace writes into space it reserved earlier). */
static int cookie_seek(void *cookie, off64_t *offset, int whence)
{
	struct output_file *f = cookie;
	off_t at = lseek(f->fd, (off_t)*offset, whence);
	if (at < 0)
		return -1;
	*offset = at;
	return 0;
}

/* Decide where the data for @path goes (see output.h). */
static struct output_file *output_new(const char *path, GError **error)
{
	struct stat st;
	bool exists = stat(path, &st) == 0;
	if (exists && S_ISDIR(st.st_mode)) {
		set_write_error(error, path, NULL, EISDIR);
		return NULL;
	}
	struct output_file *f = g_new0(struct output_file, 1);
	f->path = g_strdup(path);
	f->fd = -1;
	if (exists && !S_ISREG(st.st_mode)) {
		f->in_place = true;
		return f;
	}
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		char *real = realpath(path, NULL); /* NULL if dangling: the link is replaced */
		f->target = g_strdup(real);
		free(real);
	}
	if (!f->target)
		f->target = g_strdup(path);
	return f;
}

/* The temporary file: beside the target, or anonymous in $TMPDIR in place. */
static bool open_temporary(struct output_file *f, GError **error)
{
	char *dir = f->in_place ? g_strdup(g_get_tmp_dir()) : g_path_get_dirname(f->target);
	char *name = f->in_place ? g_build_filename(dir, "tlbsim-XXXXXX", NULL)
				 : g_strconcat(f->target, ".XXXXXX", NULL);
	f->fd = g_mkstemp_full(name, O_RDWR | O_CLOEXEC, 0666);
	if (f->fd < 0) {
		int err = errno;
		char *doing = g_strdup_printf("cannot create a temporary file in %s", dir);
		set_write_error(error, f->path, doing, err);
		g_free(doing);
		g_free(name);
		g_free(dir);
		return false;
	}
	g_free(dir);
	if (f->in_place) {
		unlink(name); /* gone with its descriptor, even after a crash */
		g_free(name);
	} else {
		f->tmp = name;
	}
	f->fp = fopencookie(f, "w",
			    (cookie_io_functions_t){.write = cookie_write, .seek = cookie_seek});
	if (!f->fp)
		return set_write_error(error, f->path, NULL, errno);
	return true;
}

struct output_file *output_open(const char *path, GError **error)
{
	struct output_file *f = output_new(path, error);
	if (f && !open_temporary(f, error)) {
		output_free(f);
		f = NULL;
	}
	return f;
}

FILE *output_stream(struct output_file *file)
{
	g_assert(file->fp);
	return file->fp;
}

bool output_finish(struct output_file *f, GError **error)
{
	g_assert(f->fp);
	bool ok = fflush(f->fp) == 0 && !ferror(f->fp);
	int err = ok ? 0 : f->write_errno ? f->write_errno : errno;
	fclose(f->fp); /* the cookie stream only: @fd stays open */
	f->fp = NULL;
	if (f->in_place)
		return ok || set_write_error(error, f->path, NULL, err);
	if (ok && fsync(f->fd) != 0) {
		ok = false;
		err = errno;
	}
	if (close(f->fd) != 0 && ok) {
		ok = false;
		err = errno;
	}
	f->fd = -1;
	return ok || set_write_error(error, f->path, NULL, err);
}

/* Open a device or FIFO for writing into it; -1 with the error set. */
static int open_in_place(const char *path, GError **error)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		set_write_error(error, path, NULL, errno);
	return fd;
}

static bool close_in_place(int fd, const char *path, bool ok, GError **error)
{
	int err = errno;
	if (close(fd) != 0 && ok) {
		ok = false;
		err = errno;
	}
	return ok || set_write_error(error, path, NULL, err);
}

/* The temporary file's data into the device or FIFO. */
static bool copy_in_place(struct output_file *f, GError **error)
{
	int out = open_in_place(f->path, error);
	if (out < 0)
		return false;
	char buf[65536];
	off_t offset = 0;
	bool ok = true;
	for (;;) {
		ssize_t n = pread(f->fd, buf, sizeof(buf), offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(out);
			return set_write_error(error, f->path, "cannot read its temporary file",
					       err);
		}
		if (n == 0)
			break;
		offset += n;
		ok = output_write_fd(out, buf, (size_t)n);
		if (!ok)
			break;
	}
	return close_in_place(out, f->path, ok, error);
}

bool output_commit(struct output_file *f, GError **error)
{
	g_assert(!f->fp && !f->renamed);
	if (f->in_place)
		return copy_in_place(f, error);
	if (rename(f->tmp, f->target) != 0)
		return set_write_error(error, f->path, "cannot rename the temporary file over it",
				       errno);
	g_free(f->tmp);
	f->tmp = NULL;
	f->renamed = true;
	return true;
}

void output_revert(struct output_file *f)
{
	if (f->renamed)
		unlink(f->target);
	f->renamed = false;
}

void output_free(struct output_file *f)
{
	if (!f)
		return;
	if (f->fp)
		fclose(f->fp);
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp)
		unlink(f->tmp);
	g_free(f->tmp);
	g_free(f->target);
	g_free(f->path);
	g_free(f);
}

bool output_write(const char *path, const char *data, size_t len, GError **error)
{
	struct output_file *f = output_new(path, error);
	if (!f)
		return false;
	bool ok;
	if (f->in_place) {
		/* Straight from memory: no temporary file needed. */
		int fd = open_in_place(path, error);
		ok = fd >= 0 && close_in_place(fd, path, output_write_fd(fd, data, len), error);
	} else {
		ok = open_temporary(f, error);
		if (ok)
			fwrite(data, 1, len, f->fp);
		ok = ok && output_finish(f, error) && output_commit(f, error);
	}
	output_free(f);
	return ok;
}

bool output_append(const char *path, const char *header, const char *block, GError **error)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot append to %s: %s", path,
			    g_strerror(errno));
		return false;
	}
	int err = 0;
	struct stat st;
	bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	off_t size = -1;
	if (flock(fd, LOCK_EX) != 0)
		err = errno;
	else
		size = lseek(fd, 0, SEEK_END); /* -1 on a FIFO: no header */
	if (!err) {
		char *all = g_strconcat(size == 0 && header ? header : "", block, NULL);
		if (!output_write_fd(fd, all, strlen(all)) || (regular && fsync(fd) != 0))
			err = errno;
		g_free(all);
	}
	/* Still under the lock: nobody appended after us. */
	if (err && regular && size >= 0 && ftruncate(fd, size) == 0)
		fsync(fd);
	if (close(fd) != 0 && !err)
		err = errno;
	if (err)
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot append to %s: %s", path,
			    g_strerror(err));
	return !err;
}

/* @path made absolute without links, as far as it exists (g_free). */
static char *canonical_path(const char *path)
{
	char *real = realpath(path, NULL);
	if (!real) {
		char *dir = g_path_get_dirname(path);
		char *base = g_path_get_basename(path);
		char *real_dir = realpath(dir, NULL);
		char *out = real_dir ? g_build_filename(real_dir, base, NULL)
				     : g_canonicalize_filename(path, NULL);
		free(real_dir);
		g_free(base);
		g_free(dir);
		return out;
	}
	char *out = g_strdup(real);
	free(real);
	return out;
}

bool output_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	bool a_exists = stat(a, &sa) == 0, b_exists = stat(b, &sb) == 0;
	if (a_exists && b_exists)
		return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	if (a_exists || b_exists)
		return false;
	char *ca = canonical_path(a), *cb = canonical_path(b);
	bool same = strcmp(ca, cb) == 0;
	g_free(ca);
	g_free(cb);
	return same;
}
