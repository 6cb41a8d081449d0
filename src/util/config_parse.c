/*
 * Strict JSON text (config.h): cJSON's parse, with positions, a bounded file
 * read, and the checks cJSON leaves out.
 *
 * Notes:
 * - cJSON is more lenient than a machine description may be: it keeps
 *   duplicate keys (a lookup silently returns the first), so parsing walks the
 *   tree once and refuses them.  It also accepts leading zeros ("01") and
 *   numbers that overflow a double (1e400 becomes inf; the getters refuse
 *   non-finite values), and it skips every byte <= ' ' between tokens as
 *   blank, not only the four JSON blanks.
 * - Error positions come from the parse-end pointer of cJSON_ParseWithOpts(),
 *   the same pointer cJSON_GetErrorPtr() returns, read without going through
 *   cJSON's global.  cJSON reports where it stopped, which can be one token
 *   after the real mistake; a stop at the end of the input (a truncated file,
 *   but also {"a": 1,}) shows the text before the end instead.  Columns count
 *   UTF-8 characters from 1, a tab counts as one.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config_impl.h"
#include "tlbsim/util/error.h"
#include "tlbsim/util/stop.h"

/* Input files are hand-written descriptions of a few KiB; 16 MiB is a mistake. */
#define CONFIG_MAX_FILE_BYTES ((size_t)16 << 20)
/* How often a wait for input from a FIFO looks at the stop request. */
#define READ_POLL_MS 20
/* Characters of input shown after "invalid JSON near". */
#define SNIPPET_CHARS 20
/* Objects up to this size are checked for duplicate keys pairwise. */
#define DUPLICATE_SCAN_PAIRWISE 16

/* ----------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------- */

/* 1-based line and column (in UTF-8 characters) of byte @offset of @text. */
static void text_position(const char *text, size_t offset, unsigned *line, unsigned *column)
{
	*line = 1;
	*column = 1;
	for (size_t i = 0; i < offset && text[i] != '\0'; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\n') {
			(*line)++;
			*column = 1;
		} else if ((c & 0xc0) != 0x80) {
			(*column)++;
		}
	}
}

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Start of the last @chars characters of @text before @end, trailing blanks skipped. */
static const char *tail_start(const char *text, const char **end, size_t chars)
{
	const char *stop = *end;
	while (stop > text && is_json_space(stop[-1]))
		stop--;
	*end = stop;
	const char *p = stop;
	for (size_t n = 0; n < chars && p > text; n++) {
		p--;
		while (p > text && ((unsigned char)*p & 0xc0) == 0x80)
			p--;
	}
	return p;
}

/*
 * What hand-written JSON most often gets wrong, named where cJSON gives only a
 * stop: a comma before a closing bracket, a comma or colon missing, a single
 * quote, a comment.  A scan of the tokens up to @stop (strings skipped, a
 * stack of open brackets, in an object whether a key, ':', value or ','
 * comes next); returns the cause and sets *@at to where it is, or NULL.
 */
enum expect { EXPECT_VALUE, EXPECT_KEY, EXPECT_COLON, EXPECT_COMMA };

static const char *diagnose(const char *text, const char *stop, const char **at)
{
	char open[CJSON_NESTING_LIMIT + 1];
	unsigned depth = 0;
	enum expect want = EXPECT_VALUE;
	const char *comma = NULL; /* the last ',' seen, if nothing came after it */
	for (const char *p = text; *p; p++) {
		if (is_json_space(*p))
			continue;
		*at = p;
		if (*p == '/' && (p[1] == '/' || p[1] == '*'))
			return "JSON has no comments (a \"comment\" key holds notes)";
		if (*p == '\'')
			return "JSON strings take double quotes, not single ones";
		if ((*p == '}' || *p == ']') && comma)
			return "a comma before a closing bracket: JSON allows no trailing comma";
		if (*p == ',' && comma)
			return "two commas in a row: a value is missing between them";
		if (depth == 0 && want == EXPECT_COMMA)
			return "text after the end of the JSON value";
		bool value = *p == '"' || *p == '{' || *p == '[' || *p == '-' ||
			     g_ascii_isalnum(*p);
		if (value && want == EXPECT_COMMA)
			return "a ',' is missing before this value";
		if (value && want == EXPECT_COLON)
			return "a ':' is missing after the key before this value";
		if (p >= stop)
			return NULL;
		comma = *p == ',' ? p : NULL;
		if (*p == '{' || *p == '[') {
			if (depth == CJSON_NESTING_LIMIT)
				return NULL;
			open[depth++] = *p;
			want = *p == '{' ? EXPECT_KEY : EXPECT_VALUE;
		} else if (*p == '}' || *p == ']') {
			depth -= depth > 0;
			want = EXPECT_COMMA;
		} else if (*p == ',') {
			want = depth && open[depth - 1] == '{' ? EXPECT_KEY : EXPECT_VALUE;
		} else if (*p == ':') {
			want = EXPECT_VALUE;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
			if (!*p)
				return NULL;
			want = want == EXPECT_KEY ? EXPECT_COLON : EXPECT_COMMA;
		} else {
			while (p[1] && !is_json_space(p[1]) && !strchr(",:]}", p[1]))
				p++;
			want = EXPECT_COMMA;
		}
	}
	return NULL;
}

static void set_parse_error(GError **error, const char *text, const char *name, const char *stop)
{
	size_t offset = (size_t)(stop - text);
	unsigned line, column;
	GString *snippet = g_string_new(NULL);
	const char *at = NULL;
	const char *cause = diagnose(text, stop, &at);

	if (cause) {
		text_position(text, (size_t)(at - text), &line, &column);
		config_append_escaped(snippet, at, NULL, SNIPPET_CHARS, false);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: invalid JSON near '%s': %s", name, line, column,
			    snippet->str, cause);
		g_string_free(snippet, TRUE);
		return;
	}
	text_position(text, offset, &line, &column);
	if (*stop != '\0') {
		config_append_escaped(snippet, stop, NULL, SNIPPET_CHARS, false);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: invalid JSON near '%s'", name, line, column, snippet->str);
	} else {
		const char *end = stop;
		const char *start = tail_start(text, &end, SNIPPET_CHARS);
		config_append_escaped(snippet, start, end, SNIPPET_CHARS, false);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: invalid JSON at the end of the input, after '%s'", name,
			    line, column, snippet->str);
	}
	g_string_free(snippet, TRUE);
}

/* Duplicate key of object @json, or NULL. */
static const char *find_duplicate_key(const cJSON *json)
{
	const char *found = NULL;

	if (cJSON_GetArraySize(json) <= DUPLICATE_SCAN_PAIRWISE) {
		for (const cJSON *a = json->child; a != NULL && found == NULL; a = a->next)
			for (const cJSON *b = json->child; b != a; b = b->next)
				if (strcmp(a->string, b->string) == 0) {
					found = a->string;
					break;
				}
		return found;
	}
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (const cJSON *a = json->child; a != NULL; a = a->next) {
		if (!g_hash_table_add(seen, a->string)) {
			found = a->string;
			break;
		}
	}
	g_hash_table_destroy(seen);
	return found;
}


/*
 * The way from the node config_check_duplicates() started at down to the
 * node it is at: the walk formats no JSON path unless it finds a duplicate.
 */
struct walk_step {
	const struct walk_step *up; /* NULL: the start */
	const cJSON *item;          /* a member (named item->string) or an element */
	int index;                  /* the element's index; -1 for a member */
};

static struct config_node walk_node(const struct config_node *start, const struct walk_step *at)
{
	if (at == NULL)
		return *start;
	struct config_node up = walk_node(start, at->up);
	return at->index < 0 ? config_node_member(&up, at->item, at->item->string)
			     : config_node_element(&up, at->item, at->index);
}

static bool check_below(const cJSON *json, const struct config_node *start,
			const struct walk_step *at, GError **error)
{
	if (cJSON_IsObject(json)) {
		const char *dup = find_duplicate_key(json);
		if (dup != NULL) {
			GString *key = g_string_new(NULL);
			config_append_quoted(key, dup);
			struct config_node node = walk_node(start, at);
			config_set_error(error, &node, "duplicate key %s", key->str);
			g_string_free(key, TRUE);
			return false;
		}
	}
	if (cJSON_IsObject(json) || cJSON_IsArray(json)) {
		int index = 0;
		for (const cJSON *item = json->child; item != NULL; item = item->next, index++) {
			struct walk_step step = {at, item, cJSON_IsObject(json) ? -1 : index};
			if (!check_below(item, start, &step, error))
				return false;
		}
	}
	return true;
}

/*
 * Refuse duplicate keys anywhere below @node.  Recursion depth is bounded by
 * cJSON's nesting limit (CJSON_NESTING_LIMIT, 1000).
 */
bool config_check_duplicates(const struct config_node *node, GError **error)
{
	return check_below(node->json, node, NULL, error);
}

/*
 * Where @text (valid JSON) escapes a NUL inside a string, or NULL: cJSON
 * decodes "\u0000" into a C string that ends there, so the rest of the
 * string would vanish unnoticed.
 */
static const char *find_escaped_nul(const char *text)
{
	bool in_string = false;
	for (const char *p = text; *p != '\0'; p++) {
		if (*p == '"') {
			in_string = !in_string;
		} else if (in_string && *p == '\\') {
			if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0)
				return p;
			p++; /* the escaped character: never a closing quote */
		}
	}
	return NULL;
}

/* The nesting depth of valid-so-far @text at @stop, strings skipped. */
static unsigned depth_at(const char *text, const char *stop)
{
	unsigned depth = 0;
	bool in_string = false;
	for (const char *p = text; p < stop && *p != '\0'; p++) {
		if (in_string) {
			if (*p == '\\' && p[1] != '\0')
				p++;
			else if (*p == '"')
				in_string = false;
		} else if (*p == '"') {
			in_string = true;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if ((*p == '}' || *p == ']') && depth > 0) {
			depth--;
		}
	}
	return depth;
}

/*
 * Refuse @text if it is not UTF-8, at the first bad byte.  cJSON copies
 * string bytes as they are, and a name that is not UTF-8 would make the
 * JSON trace (and messages) invalid; its escapes (\uXXXX) always decode to
 * UTF-8, and it refuses unpaired surrogates.
 */
static bool check_utf8(const char *text, const char *name, GError **error)
{
	const char *end = NULL;
	if (g_utf8_validate(text, -1, &end))
		return true;
	unsigned line, column;
	text_position(text, (size_t)(end - text), &line, &column);
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
		    "%s:%u:%u: not UTF-8 (byte 0x%02x): names and strings must be UTF-8 text", name,
		    line, column, (unsigned char)*end);
	return false;
}

/* cJSON parses take turns: cJSON keeps the position of a failed parse in a
 * global, and a parse abandoned by a stop (below) may still be running. */
static GMutex cjson_turn;

cJSON *config_cjson_parse(const char *text, const char **end)
{
	g_mutex_lock(&cjson_turn);
	cJSON *json = cJSON_ParseWithOpts(text, end, true);
	g_mutex_unlock(&cjson_turn);
	return json;
}

/* Parse @text (@what: "file" or "input", for the empty-input message). */
static cJSON *parse_text(const char *text, const char *name, const char *what, GError **error)
{
	const char *p = text;
	if (!check_utf8(text, name, error))
		return NULL;
	while (is_json_space(*p))
		p++;
	if (*p == '\0') {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s: empty %s, expected a JSON value", name, what);
		return NULL;
	}

	const char *stop = NULL;
	cJSON *json = config_cjson_parse(text, &stop);
	if (json == NULL) {
		stop = stop != NULL ? stop : text;
		if (depth_at(text, stop) >= CJSON_NESTING_LIMIT) {
			unsigned line, column;
			text_position(text, (size_t)(stop - text), &line, &column);
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
				    "%s:%u:%u: JSON nested deeper than %d levels", name, line, column,
				    CJSON_NESTING_LIMIT);
			return NULL;
		}
		set_parse_error(error, text, name, stop);
		return NULL;
	}
	const char *nul = find_escaped_nul(text);
	if (nul != NULL) {
		unsigned line, column;
		text_position(text, (size_t)(nul - text), &line, &column);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: \\u0000 in a string: a NUL character cannot be part of a "
			    "name or value", name, line, column);
		cJSON_Delete(json);
		return NULL;
	}

	struct config_node root = config_root(json, name);
	if (!config_check_duplicates(&root, error)) {
		cJSON_Delete(json);
		return NULL;
	}
	return json;
}

cJSON *config_parse_string(const char *text, const char *name, GError **error)
{
	g_assert(text != NULL && name != NULL);
	return parse_text(text, name, "input", error);
}

static void set_io_error(GError **error, const char *path, const char *doing, int errnum)
{
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO, "%s: cannot %s: %s", path, doing,
		    g_strerror(errnum));
}

/*
 * Read all of @path, refusing more than CONFIG_MAX_FILE_BYTES: regular files
 * by their size before reading, anything else (a pipe) while reading.
 * Returns a NUL-terminated buffer (g_free) and its length.
 */
/*
 * Wait until @fd (a FIFO, a pipe, a terminal: what may make a reader wait)
 * has data or has reached its end, looking at @stop every READ_POLL_MS;
 * false with stop_check()'s error.  A FIFO opened before any writer shows
 * neither until one comes.
 */
static bool wait_readable(int fd, const struct stop *stop, GError **error)
{
	for (;;) {
		if (!stop_check(stop, error))
			return false;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int ready = poll(&p, 1, stop ? READ_POLL_MS : -1);
		if (ready > 0 || (ready < 0 && errno != EINTR))
			return true; /* a poll() error: read() says what it is */
	}
}

static char *read_bounded(const char *path, const struct stop *stop, size_t *length,
			  GError **error)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0, cap;

	/* Without waiting for a FIFO's writer: wait_readable() does. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		set_io_error(error, path, "open", errno);
		return NULL;
	}
	if (fstat(fd, &st) != 0) {
		set_io_error(error, path, "stat", errno);
		goto out_close;
	}
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > CONFIG_MAX_FILE_BYTES) {
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
			    "%s: file is %ju bytes, more than the %zu MiB an input file may have",
			    path, (uintmax_t)st.st_size, CONFIG_MAX_FILE_BYTES >> 20);
		goto out_close;
	}

	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
	buf = g_malloc(cap + 1);
	for (;;) {
		if (len == cap) {
			cap = MIN(cap * 2, CONFIG_MAX_FILE_BYTES + 1);
			buf = g_realloc(buf, cap + 1);
		}
		if (!S_ISREG(st.st_mode) && !wait_readable(fd, stop, error))
			goto out_free_buf;
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			set_io_error(error, path, "read", errno);
			goto out_free_buf;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_MAX_FILE_BYTES) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_IO,
				    "%s: more than the %zu MiB an input file may have", path,
				    CONFIG_MAX_FILE_BYTES >> 20);
			goto out_free_buf;
		}
	}
	buf[len] = '\0';
	close(fd);
	*length = len;
	return buf;

out_free_buf:
	g_free(buf);
out_close:
	close(fd);
	return NULL;
}

/*
 * A parse that a stop may abandon: cJSON's parse cannot be interrupted, and
 * takes about a second for a 16 MiB file.  It runs on a thread of its own
 * while the caller polls the stop; an abandoned parse finishes in the
 * background and frees what it made.
 */
struct parse_job {
	char *text;
	char *name;
	cJSON *json;
	GError *error;
	GMutex lock; /* with @done: the hand-over of the result */
	GCond done;
	bool finished;  /* the thread has set @json or @error */
	bool abandoned; /* the caller has gone: the thread frees the job */
};

/* Files from this size on are parsed on a thread of their own (tens of ms). */
#define PARSE_ON_A_THREAD ((size_t)1 << 20)
/* How often the caller of a parse on a thread looks at the stop request. */
#define PARSE_POLL_US 10000

static void parse_job_free(struct parse_job *job)
{
	cJSON_Delete(job->json);
	g_clear_error(&job->error);
	g_free(job->text);
	g_free(job->name);
	g_mutex_clear(&job->lock);
	g_cond_clear(&job->done);
	g_free(job);
}

static cJSON *parse_file_text(const char *text, const char *name, GError **error)
{
	return parse_text(text, name, "file", error);
}

static gpointer parse_job_run(gpointer data)
{
	struct parse_job *job = data;
	job->json = parse_file_text(job->text, job->name, &job->error);
	g_mutex_lock(&job->lock);
	job->finished = true;
	bool abandoned = job->abandoned;
	g_cond_signal(&job->done);
	g_mutex_unlock(&job->lock);
	if (abandoned)
		parse_job_free(job);
	return NULL;
}

/* parse_text() of @text (taken over) on a thread, waiting as long as @stop allows. */
static cJSON *parse_waiting(char *text, const char *name, const struct stop *stop,
			    GError **error)
{
	struct parse_job *job = g_new0(struct parse_job, 1);
	job->text = text;
	job->name = g_strdup(name);
	g_mutex_init(&job->lock);
	g_cond_init(&job->done);
	GThread *thread = g_thread_try_new("tlbsim-parse", parse_job_run, job, NULL);
	if (!thread) { /* no thread to be had: parse here */
		job->json = parse_file_text(text, name, &job->error);
		job->finished = true;
	}
	g_mutex_lock(&job->lock);
	while (!job->finished && !stop_requested(stop))
		g_cond_wait_until(&job->done, &job->lock, g_get_monotonic_time() + PARSE_POLL_US);
	bool finished = job->finished;
	job->abandoned = !finished;
	g_mutex_unlock(&job->lock);
	if (thread)
		g_thread_unref(thread); /* detached: an abandoned parse ends on its own */
	if (!finished) {
		stop_set_error(stop, error);
		return NULL;
	}
	cJSON *json = job->json;
	job->json = NULL;
	if (job->error)
		g_propagate_error(error, g_steal_pointer(&job->error));
	parse_job_free(job);
	return json;
}

cJSON *config_load_file(const char *path, const struct stop *stop, GError **error)
{
	size_t len;

	g_assert(path != NULL);
	char *text = read_bounded(path, stop, &len, error);
	if (text == NULL)
		return NULL;

	size_t nul = strlen(text);
	if (nul != len) {
		unsigned line, column;
		text_position(text, nul, &line, &column);
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "%s:%u:%u: NUL byte in the file (not a text file?)", path, line,
			    column);
		g_free(text);
		return NULL;
	}
	cJSON *json;
	if (stop && len >= PARSE_ON_A_THREAD) {
		json = parse_waiting(text, path, stop, error);
	} else {
		json = parse_file_text(text, path, error);
		g_free(text);
	}
	if (json && !stop_check(stop, error)) {
		cJSON_Delete(json);
		json = NULL;
	}
	return json;
}
