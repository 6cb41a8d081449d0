/*
 * Tests of src/workload/expr.c: precedence, suffixes, variables, every parse and
 * evaluation error, folding, and a property test that compares expr_eval with a
 * reference evaluator on random expressions (fixed seed, so failures replay).
 */
#include <inttypes.h>
#include <string.h>
#include <criterion/criterion.h>
#include "tlbsim/util/error.h"
#include "tlbsim/workload/expr.h"

/* ---- Helpers ---------------------------------------------------------------- */

struct var {
	const char *name;
	int64_t value;
};

/* Variables every helper sees; terminated by a NULL name. */
static const struct var default_vars[] = {
	{"a", 1},      {"b", 2},           {"x", 7},           {"zero", 0},
	{"neg", -3},   {"max", INT64_MAX}, {"min", INT64_MIN}, {"big", 1LL << 62},
	{"thread", 5}, {"_ok1", 1},        {NULL, 0},
};

static bool lookup_table(void *ctx, const char *name, int64_t *value)
{
	for (const struct var *v = ctx; v->name; v++) {
		if (strcmp(v->name, name) == 0) {
			*value = v->value;
			return true;
		}
	}
	return false;
}

static struct expr *parse_ok(const char *text)
{
	GError *error = NULL;
	struct expr *e = expr_parse(text, &error);

	cr_assert_not_null(e, "parse '%s': %s", text, error ? error->message : "?");
	cr_assert_null(error);
	return e;
}

static int64_t eval_ok(const char *text)
{
	struct expr *e = parse_ok(text);
	GError *error = NULL;
	int64_t v = 0;

	cr_assert(expr_eval(e, lookup_table, (void *)default_vars, &v, &error), "eval '%s': %s",
		  text, error ? error->message : "?");
	cr_assert_null(error);
	expr_free(e);
	return v;
}

static void assert_contains(const char *message, const char *needle)
{
	cr_assert(strstr(message, needle) != NULL, "message \"%s\" lacks \"%s\"", message, needle);
}

/* Parsing @text fails with a message containing @column and @what. */
static void expect_parse_error(const char *text, const char *column, const char *what)
{
	GError *error = NULL;
	struct expr *e = expr_parse(text, &error);

	cr_assert_null(e, "'%s' parsed", text);
	cr_assert_not_null(error);
	cr_assert(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE), "'%s': %s", text,
		  error->message);
	assert_contains(error->message, column);
	assert_contains(error->message, what);
	g_error_free(error);
}

/* @text parses but evaluating it fails with a message containing @what. */
static void expect_eval_error(const char *text, const char *what)
{
	struct expr *e = parse_ok(text);
	GError *error = NULL;
	int64_t v = 12345;

	cr_assert_not(expr_eval(e, lookup_table, (void *)default_vars, &v, &error),
		      "'%s' evaluated to %" PRId64, text, v);
	cr_assert(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID), "'%s': %s", text,
		  error->message);
	assert_contains(error->message, what);
	assert_contains(error->message, text); /* the message names the expression */
	g_error_free(error);
	expr_free(e);
}

/* ---- Arithmetic ------------------------------------------------------------- */

Test(expr, precedence_and_associativity)
{
	cr_assert_eq(eval_ok("10-2-3"), 5);
	cr_assert_eq(eval_ok("2+3*4"), 14);
	cr_assert_eq(eval_ok("2*3+4"), 10);
	cr_assert_eq(eval_ok("100/10/5"), 2);
	cr_assert_eq(eval_ok("100 % 7 % 3"), 2);
	cr_assert_eq(eval_ok("2*3%4"), 2);
	cr_assert_eq(eval_ok("-2*-3"), 6);
	cr_assert_eq(eval_ok("1--1"), 2);
	cr_assert_eq(eval_ok("---1"), -1);
	cr_assert_eq(eval_ok("-(2+3)*4"), -20);
	cr_assert_eq(eval_ok("4096"), 4096);
	cr_assert_eq(eval_ok("007"), 7);
}

Test(expr, truncating_division_like_c)
{
	cr_assert_eq(eval_ok("7/2"), 3);
	cr_assert_eq(eval_ok("-7/2"), -3);
	cr_assert_eq(eval_ok("7/-2"), -3);
	cr_assert_eq(eval_ok("-7%3"), -1);
	cr_assert_eq(eval_ok("7%-3"), 1);
	cr_assert_eq(eval_ok("-7%-3"), -1);
	cr_assert_eq(eval_ok("$x / 2"), 3);
	cr_assert_eq(eval_ok("-$x % 3"), -1);
}

Test(expr, nested_parentheses)
{
	cr_assert_eq(eval_ok("((2))"), 2);
	cr_assert_eq(eval_ok("(1+2)*(3+4)"), 21);
	cr_assert_eq(eval_ok("((1+2)*(3-(4-5)))%5"), 2);
	cr_assert_eq(eval_ok("2*(3*(4*(5+1)))"), 144);
	cr_assert_eq(eval_ok("($thread * 7 + 1) % 4"), 0);
}

Test(expr, size_suffixes)
{
	cr_assert_eq(eval_ok("1K"), 1024);
	cr_assert_eq(eval_ok("512K"), 512 * 1024);
	cr_assert_eq(eval_ok("3M"), 3 * 1024 * 1024);
	cr_assert_eq(eval_ok("1G"), 1024 * 1024 * 1024);
	cr_assert_eq(eval_ok("1G/4K"), 262144);
	cr_assert_eq(eval_ok("0G"), 0);
	cr_assert_eq(eval_ok("8589934591G"), INT64_MAX - (1024 * 1024 * 1024 - 1));
}

Test(expr, whitespace)
{
	cr_assert_eq(eval_ok(" \t1\n+\r2 "), 3);
	cr_assert_eq(eval_ok("( $a+ $b )*  $x"), 21);
	cr_assert_eq(eval_ok("- 5"), -5);
	cr_assert_eq(eval_ok("  42  "), 42);
}

Test(expr, int64_limits_without_overflow)
{
	cr_assert_eq(eval_ok("9223372036854775807"), INT64_MAX);
	cr_assert_eq(eval_ok("-9223372036854775807 - 1"), INT64_MIN);
	cr_assert_eq(eval_ok("$min + $max"), -1);
	cr_assert_eq(eval_ok("$min / 1"), INT64_MIN);
	cr_assert_eq(eval_ok("$max / -1"), -INT64_MAX);
	cr_assert_eq(eval_ok("$big + ($big - 1)"), INT64_MAX);
	/* The true remainder; INT64_MIN % -1 is undefined in C and traps on x86. */
	cr_assert_eq(eval_ok("$min % -1"), 0);
	cr_assert_eq(eval_ok("(-9223372036854775807 - 1) % -1"), 0);
}

/* ---- Variables -------------------------------------------------------------- */

Test(expr, variables)
{
	cr_assert_eq(eval_ok("$a + $b * $x"), 15);
	cr_assert_eq(eval_ok("$neg * $neg"), 9);
	cr_assert_eq(eval_ok("$_ok1 - 1 + $a"), 1);
}

static bool lookup_counter(void *ctx, const char *name, int64_t *value)
{
	int *calls = ctx;

	cr_assert_str_eq(name, "i");
	*value = ++*calls;
	return true;
}

Test(expr, variables_resolved_on_every_eval)
{
	struct expr *e = parse_ok("$i * 10");
	int calls = 0;
	int64_t v;

	cr_assert(expr_eval(e, lookup_counter, &calls, &v, NULL));
	cr_assert_eq(v, 10);
	cr_assert(expr_eval(e, lookup_counter, &calls, &v, NULL));
	cr_assert_eq(v, 20);
	cr_assert_eq(calls, 2);
	expr_free(e);
}

Test(expr, unknown_variable)
{
	expect_eval_error("$a + $nope", "unknown variable '$nope'");
	expect_eval_error("$a + $nope", "column 6");

	struct expr *e = parse_ok("1 + $a");
	GError *error = NULL;
	int64_t v;

	/* No lookup function: no variable is defined. */
	cr_assert_not(expr_eval(e, NULL, NULL, &v, &error));
	cr_assert(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID));
	assert_contains(error->message, "unknown variable '$a'");
	g_error_free(error);
	expr_free(e);
}

/* ---- Evaluation errors ------------------------------------------------------ */

Test(expr, division_by_zero)
{
	expect_eval_error("$x / 0", "division by zero");
	expect_eval_error("$x / 0", "column 4");
	expect_eval_error("$x % $zero", "modulo by zero");
	expect_eval_error("$x / ($a - 1)", "division by zero");
	expect_eval_error("1 / 0", "division by zero");
	expect_eval_error("1 % (2 - 2)", "modulo by zero");
	expect_eval_error("0 / 0 + $a", "division by zero");
}

Test(expr, overflow)
{
	expect_eval_error("$max + 1", "int64 overflow in '+'");
	expect_eval_error("$min - 1", "int64 overflow in '-'");
	expect_eval_error("$max * 2", "int64 overflow in '*'");
	expect_eval_error("$big * 2", "(4611686018427387904 * 2)");
	expect_eval_error("$min * -1", "int64 overflow in '*'");
	expect_eval_error("$min / -1", "int64 overflow in '/'");
	expect_eval_error("-$min", "int64 overflow in unary '-'");
	expect_eval_error("-$min", "column 1");
	expect_eval_error("9223372036854775807 + 1", "int64 overflow in '+'");
	expect_eval_error("-(-9223372036854775807 - 1)", "unary '-'");
	expect_eval_error("(-9223372036854775807 - 1) / -1", "int64 overflow in '/'");
	expect_eval_error("4G * 1G * 4G", "column 9: int64 overflow in '*'");
}

Test(expr, first_error_wins)
{
	/* Left operand first, like the reference evaluator of the property test. */
	expect_eval_error("(1 / 0) + ($max + 1)", "division by zero");
	expect_eval_error("($max + 1) + 1 / 0", "overflow");
}

/* ---- Parse errors ----------------------------------------------------------- */

/* The whole message, for the forms the header documents. */
static void expect_parse_message(const char *text, const char *message)
{
	GError *error = NULL;

	cr_assert_null(expr_parse(text, &error), "'%s' parsed", text);
	cr_assert_str_eq(error->message, message);
	g_error_free(error);
}

Test(expr, parse_error_messages)
{
	expect_parse_message("1 + 2 * * 3",
			     "column 9: expected a number, '$name' or '(' but found '*'");
	expect_parse_message("10 * (2 + 3", "column 12: expected ')' before end of expression");
	expect_parse_message("4096x", "column 5: unexpected 'x' after expression");
	expect_parse_message("1 + $", "column 6: expected a variable name after '$' "
				      "before end of expression");
	expect_parse_message("99999999999999999999",
			     "column 1: number '99999999999999999999' does not fit in a signed "
			     "64-bit integer");
}

Test(expr, eval_error_message)
{
	struct expr *e = parse_ok("$x / ($a - 1)");
	GError *error = NULL;
	int64_t v;

	cr_assert_not(expr_eval(e, lookup_table, (void *)default_vars, &v, &error));
	cr_assert_str_eq(error->message,
			 "column 4: division by zero (7 / 0) in expression '$x / ($a - 1)'");
	g_error_free(error);
	expr_free(e);
}

Test(expr, parse_error_expected_operand)
{
	const char *operand = "expected a number, '$name' or '('";

	expect_parse_error("1 + 2 * * 3", "column 9:", operand);
	expect_parse_error("1 + 2 * * 3", "column 9:", "but found '*'");
	expect_parse_error("$a * (*", "column 7:", "but found '*'");
	expect_parse_error("2 + 3 *", "column 8:", operand);
	expect_parse_error("2 + 3 *", "column 8:", "before end of expression");
	expect_parse_error(")", "column 1:", "but found ')'");
	expect_parse_error("+1", "column 1:", "but found '+'");
	expect_parse_error("1 + @", "column 5:", "but found '@'");
	expect_parse_error("1 + \xc3\xa9", "column 5:", "but found byte 0xc3");
	expect_parse_error("2 * abc", "column 5:", "but found 'abc'");
	expect_parse_error("1 + abcdefghijklmnopqrstuvwxyz", "column 5:",
			   "but found 'abcdefghijklmnopqrstuvwx...'");
	expect_parse_error("()", "column 2:", "but found ')'");
}

Test(expr, parse_error_missing_paren)
{
	expect_parse_error("10 * (2 + 3", "column 12:", "expected ')' before end of expression");
	expect_parse_error("(1 2)", "column 4:", "expected ')' but found '2'");
	expect_parse_error("((1)", "column 5:", "expected ')' before end of expression");
}

Test(expr, parse_error_trailing_garbage)
{
	expect_parse_error("4096x", "column 5:", "unexpected 'x' after expression");
	expect_parse_error("(1))", "column 4:", "unexpected ')' after expression");
	expect_parse_error("1 2", "column 3:", "unexpected '2' after expression");
	expect_parse_error("4KB", "column 3:", "unexpected 'B' after expression");
	expect_parse_error("4 K", "column 3:", "unexpected 'K' after expression");
	expect_parse_error("4k", "column 2:", "unexpected 'k' after expression");
	expect_parse_error("$a $b", "column 4:", "unexpected '$b' after expression");
}

Test(expr, parse_error_empty)
{
	expect_parse_error("", "column 1:", "empty expression");
	expect_parse_error("   ", "column 4:", "empty expression");
}

Test(expr, parse_error_bad_variable)
{
	const char *name = "expected a variable name after '$'";

	expect_parse_error("$", "column 2:", name);
	expect_parse_error("$", "column 2:", "before end of expression");
	expect_parse_error("1 + $1", "column 6:", name);
	expect_parse_error("1 + $1", "column 6:", "but found '1'");
	expect_parse_error("$ a", "column 2:", "but found ' '");
}

Test(expr, parse_error_literal_overflow)
{
	expect_parse_error("9223372036854775808", "column 1:", "does not fit");
	expect_parse_error("1 + 99999999999999999999", "column 5:", "'99999999999999999999' does not");
	expect_parse_error("8589934592G", "column 1:", "number '8589934592G' does not fit");
	expect_parse_error("-9223372036854775808", "column 2:", "does not fit");
}

/* "(((...(1)...)))" or "---...-1" with @levels of nesting. */
static char *nested(int levels, bool parens)
{
	GString *s = g_string_new(NULL);

	for (int i = 0; i < levels; i++)
		g_string_append_c(s, parens ? '(' : '-');
	g_string_append_c(s, '1');
	for (int i = 0; parens && i < levels; i++)
		g_string_append_c(s, ')');
	return g_string_free(s, FALSE);
}

Test(expr, nesting_limit)
{
	char *ok = nested(32, true), *deep = nested(33, true);
	char *ok_neg = nested(32, false), *deep_neg = nested(33, false);

	cr_assert_eq(eval_ok(ok), 1);
	cr_assert_eq(eval_ok(ok_neg), 1);
	expect_parse_error(deep, "column 33:", "nested deeper than 32");
	expect_parse_error(deep_neg, "column 33:", "nested deeper than 32");
	g_free(ok);
	g_free(deep);
	g_free(ok_neg);
	g_free(deep_neg);
}

/*
 * The deepest evaluation stack: each of 32 levels "$a+$a*(" leaves two values
 * pending, and the innermost "$a+$a*$a" needs three more.  With $a = 1 every
 * level adds one: 2 + 32.
 */
Test(expr, deepest_stack)
{
	GString *s = g_string_new(NULL);

	for (int i = 0; i < 32; i++)
		g_string_append(s, "$a+$a*(");
	g_string_append(s, "$a+$a*$a");
	for (int i = 0; i < 32; i++)
		g_string_append_c(s, ')');
	cr_assert_eq(eval_ok(s->str), 34);
	g_string_free(s, TRUE);
}

/* ---- Folding, text, variables list ------------------------------------------ */

Test(expr, is_constant)
{
	struct expr *e = parse_ok("2 * (3 + 4) - 1G / 1M");
	int64_t v = 0;

	cr_assert(expr_is_constant(e, &v));
	cr_assert_eq(v, 14 - 1024);
	cr_assert(expr_is_constant(e, NULL));
	expr_free(e);

	e = parse_ok("$a * 0");
	cr_assert_not(expr_is_constant(e, &v));
	expr_free(e);

	/* A constant step that fails is kept for expr_eval to report. */
	e = parse_ok("1 / 0");
	cr_assert_not(expr_is_constant(e, &v));
	expr_free(e);
	e = parse_ok("-(-9223372036854775807 - 1)");
	cr_assert_not(expr_is_constant(e, &v));
	expr_free(e);
}

Test(expr, text_is_the_source)
{
	struct expr *e = parse_ok("  ($thread * 7 + 1) % $cpus ");

	cr_assert_str_eq(expr_text(e), "  ($thread * 7 + 1) % $cpus ");
	expr_free(e);
	e = parse_ok("2*3");
	cr_assert_str_eq(expr_text(e), "2*3");
	expr_free(e);
}

static void collect_name(void *ctx, const char *name)
{
	GString *s = ctx;

	g_string_append_printf(s, "%s,", name);
}

static void assert_variables(const char *text, const char *expected)
{
	struct expr *e = parse_ok(text);
	GString *s = g_string_new(NULL);

	expr_foreach_variable(e, collect_name, s);
	cr_assert_str_eq(s->str, expected, "variables of '%s'", text);
	g_string_free(s, TRUE);
	expr_free(e);
}

Test(expr, foreach_variable_order_and_dedup)
{
	assert_variables("$b + $a * $b - ($c + $a)", "b,a,c,");
	assert_variables("$file_pages / $pages_per_munmap", "file_pages,pages_per_munmap,");
	assert_variables("$x + $xy + $x_ + $x", "x,xy,x_,");
	assert_variables("1 + 2", "");
}

Test(expr, constant)
{
	struct expr *e = expr_constant(-5);
	int64_t v = 0;
	GString *s = g_string_new(NULL);

	cr_assert_str_eq(expr_text(e), "-5");
	cr_assert(expr_is_constant(e, &v));
	cr_assert_eq(v, -5);
	v = 0;
	cr_assert(expr_eval(e, NULL, NULL, &v, NULL));
	cr_assert_eq(v, -5);
	expr_foreach_variable(e, collect_name, s);
	cr_assert_str_eq(s->str, "");
	g_string_free(s, TRUE);
	expr_free(e);

	e = expr_constant(INT64_MIN);
	cr_assert_str_eq(expr_text(e), "-9223372036854775808");
	cr_assert(expr_eval(e, NULL, NULL, &v, NULL));
	cr_assert_eq(v, INT64_MIN);
	expr_free(e);

	e = expr_constant(4096);
	cr_assert_str_eq(expr_text(e), "4096");
	expr_free(e);
	expr_free(NULL);
}

/* ---- Property test: random expressions vs a reference evaluator ------------- */

__extension__ typedef __int128 i128;

enum node_kind { NODE_LIT, NODE_VAR, NODE_NEG, NODE_ADD, NODE_SUB, NODE_MUL, NODE_DIV, NODE_MOD };

enum ref_result { REF_OK, REF_DIV_ZERO, REF_OVERFLOW };

#define N_RANDOM_VARS 5

struct node {
	enum node_kind kind;
	int64_t base; /* literal digits, or the variable index */
	int shift;    /* literal suffix: 0, 10, 20 or 30 */
	struct node *l, *r;
};

struct gen {
	uint64_t state;
	struct node nodes[256];
	int n_nodes;
	bool has_var;
};

/* splitmix64: small, fixed-seed, the same on every platform. */
static uint64_t rnd(struct gen *g)
{
	uint64_t z = (g->state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int rnd_below(struct gen *g, int n)
{
	return (int)(rnd(g) % (uint64_t)n);
}

/* Mostly small values so most expressions evaluate; some near the limits. */
static int64_t random_value(struct gen *g)
{
	switch (rnd_below(g, 10)) {
	case 0:
		return INT64_MAX - rnd_below(g, 3);
	case 1:
		return (int64_t)(rnd(g) >> (1 + rnd_below(g, 63)));
	case 2:
		return 1LL << (31 + rnd_below(g, 3));
	default:
		return rnd_below(g, 21);
	}
}

static struct node *random_node(struct gen *g, int depth)
{
	struct node *n = &g->nodes[g->n_nodes++];
	int pick = rnd_below(g, depth <= 0 ? 4 : 12);

	*n = (struct node){.kind = NODE_LIT};
	if (pick < 3) {
		n->base = random_value(g);
		if (n->base < 1000000 && rnd_below(g, 4) == 0)
			n->shift = 10 * (1 + rnd_below(g, 3));
		if (n->shift && (n->base > (INT64_MAX >> n->shift)))
			n->shift = 0;
	} else if (pick == 3) {
		n->kind = NODE_VAR;
		n->base = rnd_below(g, N_RANDOM_VARS);
		g->has_var = true;
	} else if (pick == 4) {
		n->kind = NODE_NEG;
		n->l = random_node(g, depth - 1);
	} else {
		n->kind = NODE_ADD + rnd_below(g, 5);
		n->l = random_node(g, depth - 1);
		n->r = random_node(g, depth - 1);
	}
	return n;
}

static int precedence(const struct node *n)
{
	switch (n->kind) {
	case NODE_ADD:
	case NODE_SUB:
		return 1;
	case NODE_MUL:
	case NODE_DIV:
	case NODE_MOD:
		return 2;
	default:
		return 3; /* leaves and unary minus bind tighter than any binary operator */
	}
}

static void maybe_space(struct gen *g, GString *s)
{
	static const char *const spaces[] = {" ", "  ", "\t", "\n"};

	if (rnd_below(g, 3) == 0)
		g_string_append(s, spaces[rnd_below(g, 4)]);
}

static void render(struct gen *g, const struct node *n, bool parens, GString *s);

/* Render @child of @parent, with parentheses where precedence needs them or at random. */
static void render_child(struct gen *g, const struct node *parent, const struct node *child,
			 bool right, GString *s)
{
	bool need;

	if (parent->kind == NODE_NEG)
		need = precedence(child) < 3;
	else if (right)
		need = precedence(child) <= precedence(parent);
	else
		need = precedence(child) < precedence(parent);
	render(g, child, need || rnd_below(g, 8) == 0, s);
}

static void render(struct gen *g, const struct node *n, bool parens, GString *s)
{
	static const char ops[] = "+-*/%";

	maybe_space(g, s);
	if (parens) {
		g_string_append_c(s, '(');
		maybe_space(g, s);
	}
	if (n->kind == NODE_LIT) {
		g_string_append_printf(s, "%" PRId64, n->base);
		if (n->shift)
			g_string_append_c(s, "KMG"[n->shift / 10 - 1]);
	} else if (n->kind == NODE_VAR) {
		g_string_append_printf(s, "$v%d", (int)n->base);
	} else if (n->kind == NODE_NEG) {
		g_string_append_c(s, '-');
		render_child(g, n, n->l, false, s);
	} else {
		render_child(g, n, n->l, false, s);
		maybe_space(g, s);
		g_string_append_c(s, ops[n->kind - NODE_ADD]);
		render_child(g, n, n->r, true, s);
	}
	maybe_space(g, s);
	if (parens)
		g_string_append_c(s, ')');
}

static enum ref_result checked(i128 v, int64_t *out)
{
	if (v < INT64_MIN || v > INT64_MAX)
		return REF_OVERFLOW;
	*out = (int64_t)v;
	return REF_OK;
}

/* Exact arithmetic in 128 bits, then a range check; left operand first. */
static enum ref_result ref_eval(const struct node *n, const int64_t *vars, int64_t *out)
{
	enum ref_result res;
	int64_t a, b;

	if (n->kind == NODE_LIT)
		return checked((i128)n->base << n->shift, out);
	if (n->kind == NODE_VAR)
		return checked(vars[n->base], out);
	if ((res = ref_eval(n->l, vars, &a)) != REF_OK)
		return res;
	if (n->kind == NODE_NEG)
		return checked(-(i128)a, out);
	if ((res = ref_eval(n->r, vars, &b)) != REF_OK)
		return res;
	switch (n->kind) {
	case NODE_ADD:
		return checked((i128)a + b, out);
	case NODE_SUB:
		return checked((i128)a - b, out);
	case NODE_MUL:
		return checked((i128)a * b, out);
	case NODE_DIV:
		return b == 0 ? REF_DIV_ZERO : checked((i128)a / b, out);
	case NODE_MOD:
		return b == 0 ? REF_DIV_ZERO : checked((i128)a % b, out);
	default:
		cr_assert_fail("bad node kind %d", n->kind);
	}
	return REF_OK;
}

static bool lookup_random(void *ctx, const char *name, int64_t *value)
{
	const int64_t *vars = ctx;

	cr_assert(name[0] == 'v' && name[1] >= '0' && name[1] < '0' + N_RANDOM_VARS && !name[2]);
	*value = vars[name[1] - '0'];
	return true;
}

/* Compare expr_eval and expr_is_constant with the reference on one expression. */
static void check_one(const struct node *root, const char *text, bool has_var, const int64_t *vars,
		      int *n_ok)
{
	struct expr *e = parse_ok(text);
	int64_t want = 0, got = 0, folded = 0;
	enum ref_result res = ref_eval(root, vars, &want);
	GError *error = NULL;
	bool ok = expr_eval(e, lookup_random, (void *)vars, &got, &error);

	cr_assert_str_eq(expr_text(e), text);
	if (res == REF_OK) {
		cr_assert(ok, "'%s': %s", text, error ? error->message : "?");
		cr_assert_eq(got, want, "'%s' = %" PRId64 ", want %" PRId64, text, got, want);
		++*n_ok;
	} else {
		cr_assert_not(ok, "'%s' = %" PRId64 ", want an error", text, got);
		cr_assert(g_error_matches(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID));
		assert_contains(error->message, res == REF_DIV_ZERO ? "by zero" : "overflow");
		g_error_free(error);
	}
	cr_assert_eq(expr_is_constant(e, &folded), !has_var && res == REF_OK, "'%s'", text);
	if (!has_var && res == REF_OK)
		cr_assert_eq(folded, want, "'%s'", text);
	expr_free(e);
}

Test(expr, random_expressions_match_reference)
{
	struct gen *g = g_new0(struct gen, 1);
	int n_ok = 0, n_const = 0;
	const int n = 20000;

	g->state = 20240611;
	for (int i = 0; i < n; i++) {
		int64_t vars[N_RANDOM_VARS];
		GString *s = g_string_new(NULL);
		struct node *root;

		g->n_nodes = 0;
		g->has_var = false;
		root = random_node(g, 1 + rnd_below(g, 6));
		for (int v = 0; v < N_RANDOM_VARS; v++)
			vars[v] = rnd_below(g, 2) ? random_value(g) : -random_value(g);
		if (rnd_below(g, 50) == 0)
			vars[rnd_below(g, N_RANDOM_VARS)] = INT64_MIN;
		render(g, root, false, s);
		check_one(root, s->str, g->has_var, vars, &n_ok);
		n_const += !g->has_var;
		g_string_free(s, TRUE);
	}
	/* The generator must exercise both outcomes and both kinds of expression. */
	cr_assert_gt(n_ok, n / 2);
	cr_assert_lt(n_ok, n - n / 50);
	cr_assert_gt(n_const, n / 10);
	g_free(g);
}
