#ifndef TLBSIM_EXPR_H
#define TLBSIM_EXPR_H
/*
 * Integer expressions in workload files: "$file_pages / $pages_per_munmap",
 * "($thread * 7 + 1) % $cpus", "4096".  Signed 64-bit arithmetic with
 * + - * / % unary minus and parentheses, variables written $name.  Overflow and
 * division by zero are errors, never undefined behaviour.  Parsing is done once;
 * evaluation is cheap and happens at run time because loop counters and the
 * thread index are variables.
 *
 * Numbers are decimal and may carry a binary-size suffix, because workload
 * files say "1G" and "512K": K = 1024, M = 1024^2, G = 1024^3 ("1G / 4K" is
 * 262144).  Precedence and truncating '/' and '%' are those of C.  A number that
 * does not fit in int64 is a parse error.  An expression without variables is
 * folded at parse time (see expr_is_constant).
 */
#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

struct expr;

/* Resolve variable @name; return false if unknown. */
typedef bool (*expr_lookup_fn)(void *ctx, const char *name, int64_t *value);

/*
 * Parse @text.  Errors are TLBSIM_ERROR_PARSE with the 1-based column and what
 * was expected: "column 7: expected a number, '$name' or '(' but found '*'".
 */
struct expr *expr_parse(const char *text, GError **error);
/* An expression that is just a constant. */
struct expr *expr_constant(int64_t value);
void expr_free(struct expr *expr);

bool expr_is_constant(const struct expr *expr, int64_t *value);
/* Calls @fn(ctx, name) for each distinct variable, in order of first use. */
void expr_foreach_variable(const struct expr *expr, void (*fn)(void *ctx, const char *name),
			   void *ctx);

/* Errors: unknown variable, overflow, division by zero (TLBSIM_ERROR_INVALID). */
bool expr_eval(const struct expr *expr, expr_lookup_fn lookup, void *ctx, int64_t *out,
	       GError **error);

/* The source text it was parsed from (or the constant printed). */
const char *expr_text(const struct expr *expr);

#endif
