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
 * - Waiting is never blind to a stop request (a signal): a FIFO is opened
 *   without blocking and tried again every WAIT_MS, data goes into a device,
 *   a FIFO or a pipe PIPE_BUF bytes at a time once poll() says there is room
 *   (so a write never blocks), and a lock is tried without blocking.  A
 *   signal that comes between a check and a blocking call would otherwise
 *   be seen only when the call returns, which for a FIFO nobody reads is
 *   never.
 * - The file a rename replaces keeps a second name (a hard link beside it,
 *   TMP.old) until every output of the commit is in place, so that a
 *   failure of a later one can put it back.  Where hard links are not
 *   possible, it is replaced without one.
 */
#define _GNU_SOURCE /* fopencookie(), flock() */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tlbsim/cli/output.h"
#include "tlbsim/util/error.h"

/* How long a wait for a FIFO's reader, room in a pipe or a lock lasts
 * before the stop request is looked at again. */
#define WAIT_MS 20

enum output_kind {
	OUTPUT_REPLACE, /* a regular file (or a new one): a temporary file renamed over it */
	OUTPUT_INTO,    /* a device, a FIFO, a socket or a descriptor: written into */
	OUTPUT_APPEND,  /* appended to under a lock (output_open_append()) */
};

struct output_file {
	char *path;      /* as given, for messages */
	enum output_kind kind;
	char *target;    /* REPLACE: what the rename replaces: @path, or the file a link names */
	char *tmp;       /* REPLACE: the temporary file beside @target until renamed */
	char *backup;    /* REPLACE: the replaced file's second name, until output_free() */
	bool renamed;    /* REPLACE: output_commit_all() put @target in place */
	int into_fd;     /* INTO: a descriptor to write into (borrowed); -1: open @path */
	char *header;    /* APPEND: written first if the file is empty; may be NULL */
	int append_fd;   /* APPEND: the file, locked, once appended to; -1 */
	off_t append_size; /* APPEND: its size before (-1: not a regular file) */
	bool created;    /* APPEND: this commit created the file */
	int fd;          /* the temporary file; -1 once closed */
	FILE *fp;        /* writes to @fd; NULL once finished */
	int write_errno; /* errno of the first failed write through @fp; 0: none */
};

/* "cannot write PATH: [DOING: ]REASON" ("cannot append to PATH: ..."); always false. */
static bool set_error(GError **error, const struct output_file *f, const char *doing,
		      int errnum)
{
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot %s %s: %s%s%s",
		    f->kind == OUTPUT_APPEND ? "append to" : "write", f->path, doing ? doing : "",
		    doing ? ": " : "", g_strerror(errnum));
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

/*
 * output_write_fd() into what may make a writer wait (a pipe, a FIFO, a
 * terminal), without ever blocking: PIPE_BUF bytes at a time, each once
 * poll() says there is room, so @stop is seen within WAIT_MS.  False with
 * errno set, ECANCELED for a stop.
 */
static bool write_waiting(int fd, const char *data, size_t len, const struct stop *stop)
{
	while (len > 0) {
		if (stop_requested(stop)) {
			errno = ECANCELED;
			return false;
		}
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int ready = poll(&p, 1, WAIT_MS);
		if (ready < 0 && errno != EINTR)
			return false;
		if (ready <= 0)
			continue;
		ssize_t n = write(fd, data, MIN(len, (size_t)PIPE_BUF));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
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

static struct output_file *output_alloc(const char *path, enum output_kind kind)
{
	struct output_file *f = g_new0(struct output_file, 1);
	f->path = g_strdup(path);
	f->kind = kind;
	f->fd = -1;
	f->into_fd = -1;
	f->append_fd = -1;
	return f;
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
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "cannot write %s: %s", path,
			    g_strerror(EISDIR));
		return NULL;
	}
	if (exists && !S_ISREG(st.st_mode))
		return output_alloc(path, OUTPUT_INTO);
	struct output_file *f = output_alloc(path, OUTPUT_REPLACE);
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		char *real = realpath(path, NULL); /* NULL if dangling: the link is replaced */
		f->target = g_strdup(real);
		free(real);
	}
	if (!f->target)
		f->target = g_strdup(path);
	return f;
}

/* The temporary file: beside the target, or anonymous in $TMPDIR for data
 * that is written into something or appended at the commit. */
static bool open_temporary(struct output_file *f, GError **error)
{
	bool beside = f->kind == OUTPUT_REPLACE;
	char *dir = beside ? g_path_get_dirname(f->target) : g_strdup(g_get_tmp_dir());
	char *name = beside ? g_strconcat(f->target, ".XXXXXX", NULL)
			    : g_build_filename(dir, "tlbsim-XXXXXX", NULL);
	f->fd = g_mkstemp_full(name, O_RDWR | O_CLOEXEC, 0666);
	if (f->fd < 0) {
		int err = errno;
		char *doing = g_strdup_printf("cannot create a temporary file in %s", dir);
		set_error(error, f, doing, err);
		g_free(doing);
		g_free(name);
		g_free(dir);
		return false;
	}
	g_free(dir);
	if (beside) {
		f->tmp = name;
	} else {
		unlink(name); /* gone with its descriptor, even after a crash */
		g_free(name);
	}
	f->fp = fopencookie(f, "w",
			    (cookie_io_functions_t){.write = cookie_write, .seek = cookie_seek});
	if (!f->fp)
		return set_error(error, f, NULL, errno);
	return true;
}

static struct output_file *output_start(struct output_file *f, GError **error)
{
	if (f && !open_temporary(f, error)) {
		output_free(f);
		f = NULL;
	}
	return f;
}

struct output_file *output_open(const char *path, GError **error)
{
	return output_start(output_new(path, error), error);
}

struct output_file *output_open_fd(int fd, const char *name, GError **error)
{
	struct output_file *f = output_alloc(name, OUTPUT_INTO);
	f->into_fd = fd;
	return output_start(f, error);
}

struct output_file *output_open_append(const char *path, const char *header, GError **error)
{
	struct output_file *f = output_alloc(path, OUTPUT_APPEND);
	f->header = g_strdup(header);
	f->append_size = -1;
	return output_start(f, error);
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
	if (f->kind != OUTPUT_REPLACE) /* read again at the commit */
		return ok || set_error(error, f, NULL, err);
	if (ok && fsync(f->fd) != 0) {
		ok = false;
		err = errno;
	}
	if (close(f->fd) != 0 && ok) {
		ok = false;
		err = errno;
	}
	f->fd = -1;
	return ok || set_error(error, f, NULL, err);
}

/* Wait WAIT_MS (for a reader, for a lock), unless @stop: false then. */
static bool pause_unless_stopped(const struct stop *stop)
{
	if (stop_requested(stop))
		return false;
	g_usleep(WAIT_MS * 1000);
	return true;
}

/* The error for @errnum, ECANCELED meaning @stop's; always false. */
static bool set_failure(GError **error, const struct output_file *f, const struct stop *stop,
			const char *doing, int errnum)
{
	if (errnum == ECANCELED && stop_requested(stop)) {
		stop_set_error(stop, error);
		return false;
	}
	return set_error(error, f, doing, errnum);
}

/*
 * Open @f's path for writing (@flags added), waiting for a FIFO's reader as
 * long as @stop allows: -1 with errno set, ECANCELED for a stop.  The
 * descriptor is blocking; writes go through write_waiting() anyway.
 */
static int open_waiting(const struct output_file *f, int flags, const struct stop *stop)
{
	for (;;) {
		int fd = open(f->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | flags, 0666);
		if (fd >= 0) {
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
			return fd;
		}
		int err = errno;
		struct stat st;
		/* ENXIO: a FIFO nobody has open for reading (yet). */
		bool no_reader = err == ENXIO && stat(f->path, &st) == 0 && S_ISFIFO(st.st_mode);
		if (err != EINTR && !no_reader) {
			errno = err;
			return -1;
		}
		if (!pause_unless_stopped(stop)) {
			errno = ECANCELED;
			return -1;
		}
	}
}

/* @prefix (may be NULL), then the temporary file's data, into @out. */
static bool copy_temporary(const struct output_file *f, int out, const char *prefix,
			   const struct stop *stop, GError **error)
{
	if (prefix && !write_waiting(out, prefix, strlen(prefix), stop))
		return set_failure(error, f, stop, NULL, errno);
	char buf[65536];
	off_t offset = 0;
	for (;;) {
		ssize_t n = pread(f->fd, buf, sizeof(buf), offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return set_error(error, f, "cannot read its temporary file", errno);
		if (n == 0)
			return true;
		offset += n;
		if (!write_waiting(out, buf, (size_t)n, stop))
			return set_failure(error, f, stop, NULL, errno);
	}
}

/* INTO: the data into the device, FIFO or descriptor. */
static bool commit_into(struct output_file *f, const struct stop *stop, GError **error)
{
	int out = f->into_fd >= 0 ? f->into_fd : open_waiting(f, 0, stop);
	if (out < 0)
		return set_failure(error, f, stop, NULL, errno);
	bool ok = copy_temporary(f, out, NULL, stop, error);
	if (f->into_fd < 0 && close(out) != 0 && ok)
		ok = set_error(error, f, NULL, errno);
	return ok;
}

/*
 * APPEND, step one: f->append_fd open on the file at f->path and locked,
 * the file created (O_EXCL, f->created) if there is none.  A file that a
 * failed append removed (below) while we waited for its lock is not the
 * one at the path any more: open again.
 */
static bool append_open_locked(struct output_file *f, const struct stop *stop, GError **error)
{
	for (;;) {
		f->created = false;
		int fd = open_waiting(f, 0, stop);
		if (fd < 0 && errno == ENOENT) {
			fd = open_waiting(f, O_CREAT | O_EXCL, stop);
			f->created = fd >= 0;
			if (fd < 0 && errno == EEXIST)
				continue; /* another run created it first */
		}
		if (fd < 0)
			return set_failure(error, f, stop, NULL, errno);
		while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			int err = errno;
			if (err == EWOULDBLOCK || err == EINTR) {
				if (pause_unless_stopped(stop))
					continue;
				err = ECANCELED;
			}
			/* Even one this run created: another run holds the lock. */
			close(fd);
			return set_failure(error, f, stop, NULL, err);
		}
		struct stat held, named;
		if (fstat(fd, &held) == 0 && S_ISREG(held.st_mode) &&
		    (stat(f->path, &named) != 0 || named.st_dev != held.st_dev ||
		     named.st_ino != held.st_ino)) {
			close(fd);
			continue;
		}
		f->append_fd = fd;
		f->append_size = S_ISREG(held.st_mode) ? lseek(fd, 0, SEEK_END) : -1;
		return true;
	}
}

/* APPEND taken back, still under the lock: nobody appended after us. */
static void append_revert(struct output_file *f)
{
	if (f->append_fd < 0 || f->append_size < 0)
		return;
	if (f->created && f->append_size == 0) {
		unlink(f->path); /* runs waiting for the lock see it is gone */
		f->created = false;
	}
	if (ftruncate(f->append_fd, f->append_size) == 0)
		fsync(f->append_fd);
}

static bool commit_append(struct output_file *f, const struct stop *stop, GError **error)
{
	if (!append_open_locked(f, stop, error))
		return false;
	const char *header = f->append_size == 0 ? f->header : NULL;
	bool ok = copy_temporary(f, f->append_fd, header, stop, error);
	if (ok && f->append_size >= 0 && fsync(f->append_fd) != 0)
		ok = set_error(error, f, NULL, errno);
	if (!ok)
		append_revert(f);
	return ok;
}

/* REPLACE: the old file (if any) keeps a second name, the new one takes its place. */
static bool commit_replace(struct output_file *f, GError **error)
{
	char *backup = g_strconcat(f->tmp, ".old", NULL);
	if (link(f->target, backup) == 0)
		f->backup = backup;
	else
		g_free(backup); /* no old file; or no hard links here: replaced for good */
	if (rename(f->tmp, f->target) != 0) {
		int err = errno;
		if (f->backup)
			unlink(f->backup);
		g_clear_pointer(&f->backup, g_free);
		return set_error(error, f, "cannot rename the temporary file over it", err);
	}
	g_free(f->tmp);
	f->tmp = NULL;
	f->renamed = true;
	return true;
}

bool output_commit_all(struct output_file *const *files, size_t n, const struct stop *stop,
		       GError **error)
{
	for (size_t i = 0; i < n; i++)
		g_assert(!files[i] || !files[i]->fp);
	for (size_t i = 0; i < n; i++)
		if (files[i] && files[i]->kind == OUTPUT_INTO &&
		    !commit_into(files[i], stop, error))
			return false;
	bool ok = true;
	for (size_t i = 0; ok && i < n; i++)
		if (files[i] && files[i]->kind == OUTPUT_APPEND)
			ok = commit_append(files[i], stop, error);
	/* The renames take no time: the last chance to stop. */
	ok = ok && stop_check(stop, error);
	for (size_t i = 0; ok && i < n; i++)
		if (files[i] && files[i]->kind == OUTPUT_REPLACE)
			ok = commit_replace(files[i], error);
	if (!ok)
		for (size_t i = 0; i < n; i++)
			if (files[i])
				output_revert(files[i]);
	return ok;
}

bool output_commit(struct output_file *file, GError **error)
{
	return output_commit_all(&file, 1, NULL, error);
}

void output_revert(struct output_file *f)
{
	if (f->kind == OUTPUT_APPEND)
		append_revert(f);
	if (!f->renamed)
		return;
	if (f->backup && rename(f->backup, f->target) == 0)
		g_clear_pointer(&f->backup, g_free);
	else
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
	if (f->append_fd >= 0)
		close(f->append_fd); /* and so unlock */
	if (f->tmp)
		unlink(f->tmp);
	if (f->backup)
		unlink(f->backup);
	g_free(f->backup);
	g_free(f->tmp);
	g_free(f->target);
	g_free(f->header);
	g_free(f->path);
	g_free(f);
}

/* @len bytes of @data into @f, finished and committed alone. */
static bool write_one(struct output_file *f, const char *data, size_t len, GError **error)
{
	if (!f)
		return false;
	fwrite(data, 1, len, output_stream(f));
	bool ok = output_finish(f, error) && output_commit(f, error);
	output_free(f);
	return ok;
}

bool output_write(const char *path, const char *data, size_t len, GError **error)
{
	return write_one(output_open(path, error), data, len, error);
}

bool output_append(const char *path, const char *header, const char *block, GError **error)
{
	return write_one(output_open_append(path, header, error), block, strlen(block), error);
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
