/*
 * Integer expressions of workload files (include/tlbsim/workload/expr.h).
 *
 * What it models: the small arithmetic language of workload files,
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := '-' unary | primary
 *   primary := INTEGER | '$' NAME | '(' expr ')'
 * INTEGER is decimal digits (leading zeros do not mean octal) with an optional
 * binary-size suffix K, M or G (x 1024, 1024^2, 1024^3), because workload files
 * say "1G" and "512K".  NAME is [A-Za-z_][A-Za-z0-9_]* and follows '$' with no
 * space in between; whitespace is allowed between all other tokens.
 * Precedence, left associativity and the truncation of '/' and '%' toward zero
 * are those of C.  Every int64 overflow and every division or modulo by zero is
 * an error; none is undefined behaviour.
 *
 * Simplifications:
 * - The parser emits a postfix program directly (recursive descent, no tree).
 *   expr_eval is a loop over it with a fixed-size stack in its own frame, so it
 *   never allocates; variables are looked up by name on every evaluation.
 * - Constant folding is a peephole on that program: an operator whose operands
 *   are both constants is replaced by its value.  Every subexpression is a
 *   contiguous run of the program and one that is not a leaf ends with its
 *   operator, so "the last op is a constant" means "the whole operand is a
 *   constant".  An expression without variables therefore folds to a single
 *   constant, unless one step fails ("1 / 0"): that step stays unfolded, the
 *   text parses, every expr_eval reports the error and expr_is_constant says
 *   false.
 * - Parentheses and unary minus nest at most EXPR_MAX_NESTING deep, which
 *   bounds both the parser's recursion and the evaluation stack.
 * - INT64_MIN has no literal (9223372036854775808 overflows); it is written
 *   "-9223372036854775807 - 1".  INT64_MIN % -1 is 0, its true value, although
 *   C leaves it undefined; INT64_MIN / -1 is an overflow error.
 * - Columns in messages are 1-based byte offsets into the text.
 *
 * Invariant: ops[] is a well-formed postfix program: running it never pops an
 * empty stack, never holds more than EXPR_STACK_SIZE values, and ends with
 * exactly one.  program_check_depth() asserts this when the expression is built.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "tlbsim/util/error.h"
#include "tlbsim/workload/expr.h"

/*
 * 32: real workload expressions are a handful of operators; 32 levels of
 * parentheses or unary minus is far beyond them while keeping the recursion
 * and the evaluation stack small.
 */
#define EXPR_MAX_NESTING 32
/*
 * While a '(' at nesting level p is parsed, each enclosing level holds at most
 * two pending values (the left operand of its '+'/'-' and of its '*'/'/'/'%');
 * the innermost level adds the value being pushed.  Unary minus adds none.
 */
#define EXPR_STACK_SIZE (2 * (EXPR_MAX_NESTING + 1) + 1)

enum expr_opcode {
	EXPR_OP_CONST, /* push arg */
	EXPR_OP_VAR,   /* push the value of vars[arg] */
	EXPR_OP_NEG,
	EXPR_OP_ADD,
	EXPR_OP_SUB,
	EXPR_OP_MUL,
	EXPR_OP_DIV,
	EXPR_OP_MOD,
};

static const char expr_op_symbol[] = {
	[EXPR_OP_NEG] = '-', [EXPR_OP_ADD] = '+', [EXPR_OP_SUB] = '-',
	[EXPR_OP_MUL] = '*', [EXPR_OP_DIV] = '/', [EXPR_OP_MOD] = '%',
};

struct expr_op {
	int64_t arg;     /* the constant, or the index into expr->vars */
	uint32_t column; /* of the operator or operand in expr->text, for messages */
	uint8_t code;    /* enum expr_opcode */
};

struct expr {
	char *text;
	struct expr_op *ops; /* postfix program, n_ops >= 1 */
	char **vars;         /* distinct names without '$', in order of first use */
	uint32_t n_ops;
	uint32_t n_vars;
};

struct parser {
	const char *text;
	const char *pos;
	GArray *ops;     /* of struct expr_op */
	GPtrArray *vars; /* of char *, owned */
	int nesting;
	GError **error;
};

/* Apply a binary operator; false on division by zero or overflow. */
static bool apply_binary(enum expr_opcode code, int64_t a, int64_t b, int64_t *r)
{
	switch (code) {
	case EXPR_OP_ADD:
		return !__builtin_add_overflow(a, b, r);
	case EXPR_OP_SUB:
		return !__builtin_sub_overflow(a, b, r);
	case EXPR_OP_MUL:
		return !__builtin_mul_overflow(a, b, r);
	case EXPR_OP_DIV:
		if (b == 0 || (a == INT64_MIN && b == -1))
			return false;
		*r = a / b;
		return true;
	case EXPR_OP_MOD:
		if (b == 0)
			return false;
		/* The true remainder is 0; a % b itself traps on x86. */
		*r = b == -1 ? 0 : a % b;
		return true;
	default:
		g_assert_not_reached();
	}
}

/* ---- Parser ---------------------------------------------------------------- */

static size_t parser_column(const struct parser *ps, const char *at)
{
	return (size_t)(at - ps->text) + 1;
}

static void skip_space(struct parser *ps)
{
	while (g_ascii_isspace(*ps->pos))
		ps->pos++;
}

static bool is_name_char(char c)
{
	return g_ascii_isalnum(c) || c == '_';
}

/* Quote the token starting at @at for a message: '*', '12abc', '$x', byte 0xc3. */
static void describe_token(const char *at, char *buf, size_t size)
{
	size_t len = 1;

	if (!g_ascii_isprint(*at)) {
		snprintf(buf, size, "byte 0x%02x", (unsigned char)*at);
		return;
	}
	if (*at == '$' || is_name_char(*at))
		while (is_name_char(at[len]))
			len++;
	if (len > 24)
		snprintf(buf, size, "'%.24s...'", at);
	else
		snprintf(buf, size, "'%.*s'", (int)len, at);
}

/* "column N: expected WHAT but found 'X'" or "... before end of expression". */
static bool fail_expected(struct parser *ps, const char *at, const char *what)
{
	char found[40];

	if (*at == '\0') {
		g_set_error(ps->error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "column %zu: expected %s before end of expression",
			    parser_column(ps, at), what);
		return false;
	}
	describe_token(at, found, sizeof(found));
	g_set_error(ps->error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
		    "column %zu: expected %s but found %s", parser_column(ps, at), what, found);
	return false;
}

static void emit(struct parser *ps, enum expr_opcode code, int64_t arg, const char *at)
{
	struct expr_op op = {.arg = arg, .column = (uint32_t)parser_column(ps, at), .code = code};

	g_array_append_val(ps->ops, op);
}

/* Emit a binary operator, folding it when both operands are constants. */
static void emit_binary(struct parser *ps, enum expr_opcode code, const char *at)
{
	struct expr_op *ops = &g_array_index(ps->ops, struct expr_op, 0);
	guint n = ps->ops->len;
	int64_t r;

	if (n >= 2 && ops[n - 2].code == EXPR_OP_CONST && ops[n - 1].code == EXPR_OP_CONST &&
	    apply_binary(code, ops[n - 2].arg, ops[n - 1].arg, &r)) {
		ops[n - 2].arg = r;
		g_array_set_size(ps->ops, n - 1);
		return;
	}
	emit(ps, code, 0, at);
}

static void emit_neg(struct parser *ps, const char *at)
{
	struct expr_op *ops = &g_array_index(ps->ops, struct expr_op, 0);
	guint n = ps->ops->len;
	int64_t r;

	if (ops[n - 1].code == EXPR_OP_CONST && !__builtin_sub_overflow(0, ops[n - 1].arg, &r)) {
		ops[n - 1].arg = r;
		return;
	}
	emit(ps, EXPR_OP_NEG, 0, at);
}

/* Enter one level of parentheses or unary minus at @at. */
static bool enter_nesting(struct parser *ps, const char *at)
{
	if (++ps->nesting <= EXPR_MAX_NESTING)
		return true;
	g_set_error(ps->error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
		    "column %zu: expression nested deeper than %d levels of '(' and unary '-'",
		    parser_column(ps, at), EXPR_MAX_NESTING);
	return false;
}

/* Multiplier exponent of a size suffix: K = 2^10, M = 2^20, G = 2^30, else 0. */
static int suffix_shift(char c)
{
	switch (c) {
	case 'K':
		return 10;
	case 'M':
		return 20;
	case 'G':
		return 30;
	default:
		return 0;
	}
}

static bool parse_number(struct parser *ps)
{
	const char *start = ps->pos;
	bool overflow = false;
	int64_t v = 0;
	int shift;

	for (; g_ascii_isdigit(*ps->pos); ps->pos++) {
		overflow |= __builtin_mul_overflow(v, 10, &v);
		overflow |= __builtin_add_overflow(v, *ps->pos - '0', &v);
	}
	shift = suffix_shift(*ps->pos);
	if (shift) {
		overflow |= __builtin_mul_overflow(v, (int64_t)1 << shift, &v);
		ps->pos++;
	}
	if (overflow) {
		g_set_error(ps->error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "column %zu: number '%.*s' does not fit in a signed 64-bit integer",
			    parser_column(ps, start), (int)(ps->pos - start), start);
		return false;
	}
	emit(ps, EXPR_OP_CONST, v, start);
	return true;
}

/* Index of variable @name (@len bytes) in ps->vars, added if new. */
static guint intern_variable(struct parser *ps, const char *name, size_t len)
{
	for (guint i = 0; i < ps->vars->len; i++) {
		const char *v = g_ptr_array_index(ps->vars, i);

		if (strlen(v) == len && memcmp(v, name, len) == 0)
			return i;
	}
	g_ptr_array_add(ps->vars, g_strndup(name, len));
	return ps->vars->len - 1;
}

static bool parse_variable(struct parser *ps)
{
	const char *dollar = ps->pos;
	const char *name = dollar + 1;
	size_t len = 0;

	if (!g_ascii_isalpha(*name) && *name != '_')
		return fail_expected(ps, name, "a variable name after '$'");
	while (is_name_char(name[len]))
		len++;
	ps->pos = name + len;
	emit(ps, EXPR_OP_VAR, intern_variable(ps, name, len), dollar);
	return true;
}

static bool parse_expr(struct parser *ps);

static bool parse_primary(struct parser *ps)
{
	const char *open;

	skip_space(ps);
	if (g_ascii_isdigit(*ps->pos))
		return parse_number(ps);
	if (*ps->pos == '$')
		return parse_variable(ps);
	if (*ps->pos != '(')
		return fail_expected(ps, ps->pos, "a number, '$name' or '('");
	open = ps->pos++;
	if (!enter_nesting(ps, open) || !parse_expr(ps))
		return false;
	skip_space(ps);
	if (*ps->pos != ')')
		return fail_expected(ps, ps->pos, "')'");
	ps->pos++;
	ps->nesting--;
	return true;
}

static bool parse_unary(struct parser *ps)
{
	const char *minus;

	skip_space(ps);
	if (*ps->pos != '-')
		return parse_primary(ps);
	minus = ps->pos++;
	if (!enter_nesting(ps, minus) || !parse_unary(ps))
		return false;
	ps->nesting--;
	emit_neg(ps, minus);
	return true;
}

/* Binary operators by precedence level: level 0 binds loosest. */
static const struct {
	char op[4];
	enum expr_opcode code[3];
} binary_levels[] = {
	{"+-", {EXPR_OP_ADD, EXPR_OP_SUB}},
	{"*/%", {EXPR_OP_MUL, EXPR_OP_DIV, EXPR_OP_MOD}},
};

static bool parse_binary(struct parser *ps, unsigned level);

/* An operand of @level: the next tighter level, or a unary expression. */
static bool parse_operand(struct parser *ps, unsigned level)
{
	if (level + 1 < G_N_ELEMENTS(binary_levels))
		return parse_binary(ps, level + 1);
	return parse_unary(ps);
}

/* Left-associative operators of @level and tighter. */
static bool parse_binary(struct parser *ps, unsigned level)
{
	if (!parse_operand(ps, level))
		return false;
	for (;;) {
		skip_space(ps);
		const char *at = ps->pos;
		const char *hit = *at ? strchr(binary_levels[level].op, *at) : NULL;
		if (!hit)
			return true;
		enum expr_opcode code = binary_levels[level].code[hit - binary_levels[level].op];
		ps->pos++;
		if (!parse_operand(ps, level))
			return false;
		emit_binary(ps, code, at);
	}
}

static bool parse_expr(struct parser *ps)
{
	return parse_binary(ps, 0);
}

/* The whole text: one expression, nothing after it. */
static bool parse_all(struct parser *ps)
{
	char found[40];

	if (strlen(ps->text) >= UINT32_MAX) {
		g_set_error(ps->error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "expression longer than %" PRIu32 " bytes", UINT32_MAX - 1);
		return false;
	}
	skip_space(ps);
	if (*ps->pos == '\0') {
		g_set_error(ps->error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
			    "column %zu: empty expression, expected a number, '$name' or '('",
			    parser_column(ps, ps->pos));
		return false;
	}
	if (!parse_expr(ps))
		return false;
	skip_space(ps);
	if (*ps->pos == '\0')
		return true;
	describe_token(ps->pos, found, sizeof(found));
	g_set_error(ps->error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
		    "column %zu: unexpected %s after expression", parser_column(ps, ps->pos),
		    found);
	return false;
}

/* Assert the invariant: the program leaves one value and fits the eval stack. */
static void program_check_depth(const struct expr *expr)
{
	uint32_t depth = 0;

	for (uint32_t i = 0; i < expr->n_ops; i++) {
		const struct expr_op *op = &expr->ops[i];

		if (op->code == EXPR_OP_CONST || op->code == EXPR_OP_VAR) {
			depth++;
			g_assert(depth <= EXPR_STACK_SIZE);
		} else if (op->code != EXPR_OP_NEG) {
			g_assert(depth >= 2);
			depth--;
		} else {
			g_assert(depth >= 1);
		}
	}
	g_assert(depth == 1);
}

struct expr *expr_parse(const char *text, GError **error)
{
	struct parser ps = {.text = text, .pos = text, .error = error};
	struct expr *expr;

	g_assert(text != NULL);
	ps.ops = g_array_new(FALSE, FALSE, sizeof(struct expr_op));
	ps.vars = g_ptr_array_new_with_free_func(g_free);
	if (!parse_all(&ps))
		goto out_free_parser;

	expr = g_new0(struct expr, 1);
	expr->text = g_strdup(text);
	expr->n_ops = ps.ops->len;
	expr->ops = (struct expr_op *)g_array_free(ps.ops, FALSE);
	expr->n_vars = ps.vars->len;
	/* Without free_segment the element free function is not called. */
	expr->vars = (char **)g_ptr_array_free(ps.vars, FALSE);
	program_check_depth(expr);
	return expr;

out_free_parser:
	g_array_free(ps.ops, TRUE);
	g_ptr_array_free(ps.vars, TRUE);
	return NULL;
}

struct expr *expr_constant(int64_t value)
{
	struct expr *expr = g_new0(struct expr, 1);

	expr->text = g_strdup_printf("%" PRId64, value);
	expr->ops = g_new0(struct expr_op, 1);
	expr->ops[0] = (struct expr_op){.arg = value, .column = 1, .code = EXPR_OP_CONST};
	expr->n_ops = 1;
	return expr;
}

void expr_free(struct expr *expr)
{
	if (!expr)
		return;
	for (uint32_t i = 0; i < expr->n_vars; i++)
		g_free(expr->vars[i]);
	g_free(expr->vars);
	g_free(expr->ops);
	g_free(expr->text);
	g_free(expr);
}

/* @value may be NULL. */
bool expr_is_constant(const struct expr *expr, int64_t *value)
{
	if (expr->n_ops != 1 || expr->ops[0].code != EXPR_OP_CONST)
		return false;
	if (value)
		*value = expr->ops[0].arg;
	return true;
}

void expr_foreach_variable(const struct expr *expr, void (*fn)(void *ctx, const char *name),
			   void *ctx)
{
	for (uint32_t i = 0; i < expr->n_vars; i++)
		fn(ctx, expr->vars[i]);
}

const char *expr_text(const struct expr *expr)
{
	return expr->text;
}

/* ---- Evaluation ------------------------------------------------------------ */

static bool fail_binary(const struct expr *expr, const struct expr_op *op, int64_t a, int64_t b,
			GError **error)
{
	char sym = expr_op_symbol[op->code];

	if (b == 0 && (op->code == EXPR_OP_DIV || op->code == EXPR_OP_MOD))
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "column %" PRIu32 ": %s by zero (%" PRId64 " %c 0) in expression '%s'",
			    op->column, op->code == EXPR_OP_DIV ? "division" : "modulo", a, sym,
			    expr->text);
	else
		g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "column %" PRIu32 ": int64 overflow in '%c' (%" PRId64 " %c %" PRId64
			    ") in expression '%s'",
			    op->column, sym, a, sym, b, expr->text);
	return false;
}

static bool fail_neg(const struct expr *expr, const struct expr_op *op, int64_t a, GError **error)
{
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
		    "column %" PRIu32 ": int64 overflow in unary '-' (-(%" PRId64
		    ")) in expression '%s'",
		    op->column, a, expr->text);
	return false;
}

/* A NULL @lookup means no variable is defined. */
static bool lookup_variable(const struct expr *expr, const struct expr_op *op,
			    expr_lookup_fn lookup, void *ctx, int64_t *value, GError **error)
{
	const char *name = expr->vars[op->arg];

	if (lookup && lookup(ctx, name, value))
		return true;
	g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
		    "column %" PRIu32 ": unknown variable '$%s' in expression '%s'", op->column,
		    name, expr->text);
	return false;
}

bool expr_eval(const struct expr *expr, expr_lookup_fn lookup, void *ctx, int64_t *out,
	       GError **error)
{
	int64_t stack[EXPR_STACK_SIZE];
	uint32_t sp = 0;

	for (uint32_t i = 0; i < expr->n_ops; i++) {
		const struct expr_op *op = &expr->ops[i];
		int64_t r;

		switch (op->code) {
		case EXPR_OP_CONST:
			stack[sp++] = op->arg;
			break;
		case EXPR_OP_VAR:
			if (!lookup_variable(expr, op, lookup, ctx, &stack[sp], error))
				return false;
			sp++;
			break;
		case EXPR_OP_NEG:
			if (__builtin_sub_overflow(0, stack[sp - 1], &r))
				return fail_neg(expr, op, stack[sp - 1], error);
			stack[sp - 1] = r;
			break;
		default:
			sp--;
			if (!apply_binary(op->code, stack[sp - 1], stack[sp], &r))
				return fail_binary(expr, op, stack[sp - 1], stack[sp], error);
			stack[sp - 1] = r;
			break;
		}
	}
	*out = stack[0];
	return true;
}
