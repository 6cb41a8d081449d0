/*
 * tlb:tlb_flush through tracefs.  The event's format (v6.1,
 * include/trace/events/tlb.h) is "pages:%ld reason:%s (%d)"; the reason's
 * number is parsed, not its text, whose case changed between kernels
 * ("remote ipi send" in 6.1, "remote IPI send" later).  pages is -1 for
 * TLB_FLUSH_ALL.  Loss is checked with the per-CPU ring buffers' own
 * counters before and after, so a busy machine fails loudly rather than
 * undercounting.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tlbsim/native/tracefs.h"
#include "tlbsim/util/error.h"

const char *const tracefs_reason_columns[TRACEFS_NR_REASONS] = {
    "tlb_flush_task_switch",  /* TLB_FLUSH_ON_TASK_SWITCH */
    "tlb_remote_shootdown",   /* TLB_REMOTE_SHOOTDOWN */
    "tlb_local_shootdown",    /* TLB_LOCAL_SHOOTDOWN */
    "tlb_local_mm_shootdown", /* TLB_LOCAL_MM_SHOOTDOWN */
    "tlb_remote_send_ipi",    /* TLB_REMOTE_SEND_IPI */
    "tlb_remote_wrong_cpu",   /* TLB_REMOTE_WRONG_CPU (v6.2+) */
};

const char *const tracefs_reason_full_columns[TRACEFS_NR_REASONS] = {
    "tlb_flush_task_switch_full",  "tlb_remote_shootdown_full", "tlb_local_shootdown_full",
    "tlb_local_mm_shootdown_full", "tlb_remote_send_ipi_full",  "tlb_remote_wrong_cpu_full",
};

void tracefs_counts_init(struct tracefs_counts *c, unsigned nr_cpus)
{
	memset(c, 0, sizeof(*c));
	c->nr_cpus = nr_cpus;
	c->cpu = g_new0(struct tracefs_cpu, nr_cpus);
}

void tracefs_counts_clear(struct tracefs_counts *c)
{
	g_free(c->cpu);
	c->cpu = NULL;
}

static void count_event(struct tracefs_cpu *c, unsigned reason, bool full)
{
	c->events++;
	c->reason[reason]++;
	c->full[reason] += full;
}

/* One "... [003] d..1. 123.4: tlb_flush: pages:-1 reason:x (1)" line. */
static bool parse_line(const char *line, unsigned lineno, struct tracefs_counts *c, GError **error)
{
	const char *event = strstr(line, " tlb_flush: ");
	const char *bracket = event ? g_strrstr_len(line, event - line, "[") : NULL;
	const char *pages = event ? strstr(event, "pages:") : NULL;
	const char *paren = event ? strrchr(event, '(') : NULL;
	char *end_cpu = NULL, *end_pages = NULL, *end_reason = NULL;
	unsigned long cpu = bracket ? strtoul(bracket + 1, &end_cpu, 10) : 0;
	long long npages = pages ? strtoll(pages + 6, &end_pages, 10) : 0;
	unsigned long reason = paren ? strtoul(paren + 1, &end_reason, 10) : 0;
	const char *why = NULL;
	if (!bracket || !end_cpu || *end_cpu != ']' || !pages || end_pages == pages + 6 || !paren ||
	    !end_reason || *end_reason != ')')
		why = "expected \"[CPU] ... tlb_flush: pages:N reason:TEXT (N)\"";
	else if (reason >= TRACEFS_NR_REASONS)
		why = "a reason number tlbsim-native does not know";
	else if (cpu >= c->nr_cpus)
		why = "a CPU beyond the machine's";
	if (why) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE, "trace line %u: %s: %s",
			    lineno, why, line);
		return false;
	}
	count_event(&c->cpu[cpu], (unsigned)reason, npages == -1);
	count_event(&c->total, (unsigned)reason, npages == -1);
	return true;
}

bool tracefs_parse(const char *text, struct tracefs_counts *c, GError **error)
{
	char **lines = g_strsplit(text, "\n", -1);
	bool ok = true;
	for (unsigned i = 0; ok && lines[i]; i++) {
		if (lines[i][0] == '#')
			continue;
		if (strstr(lines[i], "[LOST ")) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
				    "trace line %u: the ring buffer lost events (%s): raise "
				    "--trace-buffer-kb",
				    i + 1, lines[i]);
			ok = false;
		} else if (strstr(lines[i], " tlb_flush: ")) {
			ok = parse_line(lines[i], i + 1, c, error);
		}
	}
	g_strfreev(lines);
	return ok;
}

static uint64_t stat_value(const char *text, const char *key)
{
	const char *at = text;
	size_t len = strlen(key);
	while ((at = strstr(at, key)) && at != text && at[-1] != '\n')
		at += len;
	return at ? g_ascii_strtoull(at + len, NULL, 10) : 0;
}

uint64_t tracefs_parse_lost(const char *text)
{
	return stat_value(text, "overrun: ") + stat_value(text, "dropped events: ");
}

/* ---- a session ------------------------------------------------------------ */

struct tracefs {
	char *top;      /* the tracefs mount */
	char *dir;      /* this session's instance in it, NULL until made */
	int lock_fd;    /* held while the session lasts, -1 if none */
	bool mounted;   /* by us */
	unsigned nr_cpus;
	unsigned buffer_kb;
	uint64_t *lost_before; /* [nr_cpus] */
};

static char *path_of(const struct tracefs *t, const char *file)
{
	return g_build_filename(t->dir, file, NULL);
}

static char *read_value(const struct tracefs *t, const char *file)
{
	char *path = path_of(t, file), *text = NULL;
	if (!g_file_get_contents(path, &text, NULL, NULL))
		text = g_strdup("");
	g_free(path);
	return g_strstrip(text);
}

/* Write @value to tracefs @file (O_TRUNC: writing "" to "trace" clears it). */
static bool write_value(const struct tracefs *t, const char *file, const char *value,
			GError **error)
{
	char *path = path_of(t, file);
	int fd = open(path, O_WRONLY | O_TRUNC);
	size_t len = strlen(value);
	bool ok = fd >= 0 && (len == 0 || write(fd, value, len) == (ssize_t)len);
	int err = errno;
	if (fd >= 0)
		close(fd);
	if (!ok)
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: cannot write \"%s\": %s",
			    path, value, g_strerror(err));
	g_free(path);
	return ok;
}

static bool usable(const char *dir)
{
	char *enable = g_build_filename(dir, "events/tlb/tlb_flush/enable", NULL);
	bool ok = access(enable, W_OK) == 0;
	g_free(enable);
	return ok;
}

/* The tracefs folder, mounting it when no usable one is found and we are root. */
static bool find_top(struct tracefs *t, GError **error)
{
	static const char *const dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	for (unsigned i = 0; i < G_N_ELEMENTS(dirs); i++) {
		if (usable(dirs[i])) {
			t->top = g_strdup(dirs[i]);
			return true;
		}
	}
	struct stat st;
	if (geteuid() == 0 && stat(dirs[0], &st) == 0 &&
	    mount("tracefs", dirs[0], "tracefs", 0, NULL) == 0) {
		t->mounted = true;
		t->top = g_strdup(dirs[0]);
		if (usable(dirs[0]))
			return true;
	}
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
		    "no writable tlb:tlb_flush event in /sys/kernel/tracing or "
		    "/sys/kernel/debug/tracing (tracefs needs root and a kernel with "
		    "CONFIG_TRACEPOINTS)");
	return false;
}

/*
 * Each session records into an instance of its own (instances/NAME: its own
 * buffer, tracing_on and event enables), so the machine's own tracing and
 * another session's are left alone.  The event still fires for every
 * process on the machine: two traced runs at once would count each other's
 * flushes, so the second waits for the first.
 */
#define TRACEFS_LOCK "/tmp/tlbsim-native-tracefs.lock"

static int lock_tracing(void)
{
	int fd = open(TRACEFS_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

struct tracefs *tracefs_open(unsigned nr_cpus, unsigned buffer_kb, GError **error)
{
	struct tracefs *t = g_new0(struct tracefs, 1);
	t->lock_fd = -1;
	t->nr_cpus = nr_cpus;
	t->buffer_kb = buffer_kb;
	if (!find_top(t, error)) {
		tracefs_close(t);
		return NULL;
	}
	t->lock_fd = lock_tracing();
	char *name = g_strdup_printf("instances/tlbsim-native-%ld", (long)getpid());
	char *dir = g_build_filename(t->top, name, NULL);
	g_free(name);
	if (mkdir(dir, 0700) != 0) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
			    "%s: cannot make a tracing instance: %s", dir, g_strerror(errno));
		g_free(dir);
		tracefs_close(t);
		return NULL;
	}
	t->dir = dir;
	t->lost_before = g_new0(uint64_t, nr_cpus);
	return t;
}

static uint64_t lost_on(const struct tracefs *t, unsigned cpu)
{
	char *file = g_strdup_printf("per_cpu/cpu%u/stats", cpu);
	char *text = read_value(t, file);
	uint64_t lost = tracefs_parse_lost(text);
	g_free(text);
	g_free(file);
	return lost;
}

/*
 * Enabling or disabling the event patches its static key: x86 text_poke()
 * switches to a temporary mm and back for each site, which the event itself
 * traces as flushes on task switch (about 100).  So the event is switched
 * only while recording is off, and the buffer cleared after it.
 */
bool tracefs_start(struct tracefs *t, GError **error)
{
	char *kb = g_strdup_printf("%u", t->buffer_kb);
	bool ok = write_value(t, "tracing_on", "0", error) &&
		  write_value(t, "events/tlb/tlb_flush/enable", "1", error) &&
		  write_value(t, "buffer_size_kb", kb, error) && write_value(t, "trace", "", error);
	g_free(kb);
	for (unsigned c = 0; ok && c < t->nr_cpus; c++)
		t->lost_before[c] = lost_on(t, c);
	return ok && write_value(t, "tracing_on", "1", error);
}

bool tracefs_stop(struct tracefs *t, struct tracefs_counts *c, GError **error)
{
	if (!write_value(t, "tracing_on", "0", error) ||
	    !write_value(t, "events/tlb/tlb_flush/enable", "0", error))
		return false;
	for (unsigned cpu = 0; cpu < t->nr_cpus; cpu++) {
		uint64_t lost = lost_on(t, cpu) - t->lost_before[cpu];
		if (lost) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
				    "%s: CPU %u's ring buffer lost %" G_GUINT64_FORMAT
				    " events (overrun or dropped): raise --trace-buffer-kb "
				    "(now %u)",
				    t->dir, cpu, lost, t->buffer_kb);
			return false;
		}
	}
	char *path = path_of(t, "trace"), *text = NULL;
	GError *read_error = NULL;
	bool ok = g_file_get_contents(path, &text, NULL, &read_error);
	if (!ok) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s", read_error->message);
		g_error_free(read_error);
	}
	ok = ok && tracefs_parse(text, c, error);
	g_free(text);
	g_free(path);
	return ok;
}

void tracefs_close(struct tracefs *t)
{
	if (!t)
		return;
	/* The instance goes with its buffer; best effort. */
	if (t->dir)
		rmdir(t->dir);
	if (t->mounted)
		umount(t->top);
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	g_free(t->top);
	g_free(t->dir);
	g_free(t->lost_before);
	g_free(t);
}

const char *tracefs_dir(const struct tracefs *t)
{
	return t->dir;
}
