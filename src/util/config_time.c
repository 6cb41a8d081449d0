/*
 * Times in cycles written with a unit (config_get_cycles(), config.h).
 *
 * Notes:
 * - Grammar: [0-9]+ ("." [0-9]+)? " "? ("cycles" | "ns" | "us" | "ms").  No
 *   sign, no exponent, no other spacing: the text is a quantity for a
 *   human, and anything odd is more likely a typo than a wish.
 * - Exact: the digits become an integer mantissa m with f fraction digits,
 *   so a time of m / 10^f ns is m * khz / 10^(f + 6) cycles, computed in
 *   128 bits.  At most 19 significant digits (m < 10^19) and 19 fraction
 *   digits keep every product and divisor below 2^90; no real time needs
 *   more, and any 19-digit time is far above every key's limit.
 * - Rounding: to the nearest cycle, a half up (remainder * 2 >= divisor).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "config_impl.h"
#include "tlbsim/util/error.h"

__extension__ typedef unsigned __int128 u128;

#define MAX_TIME_DIGITS 19

/* Units, and the power of ten that turns "value * kHz" into cycles. */
static const char *const unit_names[] = {"cycles", "ns", "us", "ms", NULL};
static const unsigned unit_khz_exp[] = {0, 6, 3, 0};
enum { UNIT_CYCLES = 0 };

/* A parsed time: mantissa / 10^frac in unit_names[unit]. */
struct time_text {
	uint64_t mantissa;
	unsigned frac;
	int unit;
};

enum time_parse { TIME_OK, TIME_SYNTAX, TIME_UNIT, TIME_DIGITS };

/*
 * The digits at *@p (moved past them) into @t's mantissa, counting the
 * significant ones in *@digits and, for a @fraction, every one in t->frac;
 * false when there are none.
 */
static bool take_digits(const char **p, struct time_text *t, unsigned *digits, bool fraction)
{
	const char *start = *p;
	for (; **p >= '0' && **p <= '9'; (*p)++) {
		if (t->mantissa == 0 && **p == '0') {
			t->frac += fraction;
			continue;
		}
		if (++*digits > MAX_TIME_DIGITS)
			continue;
		t->mantissa = t->mantissa * 10 + (uint64_t)(**p - '0');
		t->frac += fraction;
	}
	return *p > start;
}

/* Parse @s; on TIME_UNIT, *unit_text is where the unit starts. */
static enum time_parse parse_time(const char *s, struct time_text *t, const char **unit_text)
{
	const char *p = s;
	unsigned digits = 0;

	*t = (struct time_text){0};
	if (!take_digits(&p, t, &digits, false))
		return TIME_SYNTAX;
	if (*p == '.') {
		p++;
		if (!take_digits(&p, t, &digits, true))
			return TIME_SYNTAX;
	}
	if (digits > MAX_TIME_DIGITS || t->frac > MAX_TIME_DIGITS)
		return TIME_DIGITS;
	if (*p == ' ')
		p++;
	*unit_text = p;
	for (int i = 0; unit_names[i] != NULL; i++) {
		if (strcmp(p, unit_names[i]) == 0) {
			t->unit = i;
			return TIME_OK;
		}
	}
	return *p == '\0' || *p == ' ' ? TIME_SYNTAX : TIME_UNIT;
}

static u128 pow10_u128(unsigned n)
{
	u128 v = 1;
	while (n-- > 0)
		v *= 10;
	return v;
}

static void format_u128(char *buf, size_t size, u128 v)
{
	char digits[48];
	size_t n = 0;
	do {
		digits[n++] = (char)('0' + (unsigned)(v % 10));
		v /= 10;
	} while (v != 0);
	size_t i = 0;
	for (; i < n && i + 1 < size; i++)
		buf[i] = digits[n - 1 - i];
	buf[i] = '\0';
}

/* "3400 MHz", "1848 MHz", "2500.5 MHz". */
static void format_mhz(char *buf, size_t size, uint64_t khz)
{
	int len = snprintf(buf, size, "%" PRIu64 ".%03" PRIu64, khz / 1000, khz % 1000);
	while (len > 0 && buf[len - 1] == '0')
		buf[--len] = '\0';
	if (len > 0 && buf[len - 1] == '.')
		buf[--len] = '\0';
	g_strlcat(buf, " MHz", size);
}

/* Cycles of @t at @clock_khz, rounded to nearest, a half up. */
static u128 time_cycles(const struct time_text *t, uint64_t clock_khz)
{
	u128 product = t->mantissa;
	if (t->unit != UNIT_CYCLES)
		product *= clock_khz;
	u128 divisor = pow10_u128(t->frac + (t->unit != UNIT_CYCLES ? unit_khz_exp[t->unit] : 0));
	u128 q = product / divisor, r = product % divisor;
	return r * 2 >= divisor ? q + 1 : q;
}

static void set_time_error(GError **error, const struct config_node *number, uint64_t min,
			   uint64_t max, const char *what)
{
	GString *got = g_string_new(NULL);
	config_append_quoted(got, number->json->valuestring);
	config_set_error(error, number,
			 "%s: expected an integer in [%" PRIu64 ", %" PRIu64
			 "] (cycles) or a time string such as \"350ns\" (digits, an optional "
			 "fraction, then cycles, ns, us or ms), got %s",
			 what, min, max, got->str);
	g_string_free(got, TRUE);
}

/* The string form of config_get_cycles(). */
static bool read_time(const struct config_node *number, uint64_t min, uint64_t max,
		      uint64_t clock_khz, uint64_t *out, GError **error)
{
	const char *s = number->json->valuestring, *unit = s;
	struct time_text t;

	switch (parse_time(s, &t, &unit)) {
	case TIME_SYNTAX: {
		const char *what = "not a time";
		if (s[0] == '-')
			what = "a time cannot be negative";
		else if (unit > s && *unit == '\0')
			what = "no unit";
		set_time_error(error, number, min, max, what);
		return false;
	}
	case TIME_UNIT: {
		const char *hint = config_suggest(unit, unit_names);
		GString *got = g_string_new(NULL);
		config_append_quoted(got, unit);
		config_set_error(error, number,
				 "unknown unit %s: expected cycles, ns, us or ms%s%s%s", got->str,
				 hint != NULL ? " (did you mean \"" : "", hint != NULL ? hint : "",
				 hint != NULL ? "\"?)" : "");
		g_string_free(got, TRUE);
		return false;
	}
	case TIME_DIGITS:
		set_time_error(error, number, min, max, "more than 19 significant digits");
		return false;
	case TIME_OK:
		break;
	}
	if (t.unit == UNIT_CYCLES && t.mantissa % pow10_u128(t.frac) != 0) {
		set_time_error(error, number, min, max, "a number of cycles is whole");
		return false;
	}
	u128 cycles = time_cycles(&t, clock_khz);
	if (cycles >= min && cycles <= max) {
		*out = (uint64_t)cycles;
		return true;
	}
	char text[48], clock[40] = "";
	format_u128(text, sizeof(text), cycles);
	if (t.unit != UNIT_CYCLES) {
		g_strlcpy(clock, " at ", sizeof(clock));
		format_mhz(clock + 4, sizeof(clock) - 4, clock_khz);
	}
	GString *got = g_string_new(NULL);
	config_append_quoted(got, s);
	if (cycles > max)
		config_set_error(error, number,
				 "%s = %s cycles%s: above the limit of %" PRIu64 " cycles",
				 got->str, text, clock, max);
	else
		config_set_error(error, number,
				 "%s = %s cycles%s: below the minimum of %" PRIu64 " cycles",
				 got->str, text, clock, min);
	g_string_free(got, TRUE);
	return false;
}

bool config_get_cycles(const struct config_node *node, const char *key, bool required, uint64_t min,
		       uint64_t max, uint64_t clock_khz, uint64_t *out, GError **error)
{
	struct config_node number;

	g_assert(clock_khz > 0);
	enum config_lookup found = config_lookup(node, key, required, true, &number, error);
	if (found != LOOKUP_FOUND)
		return found == LOOKUP_ABSENT;
	if (!cJSON_IsString(number.json))
		return config_get_u64(node, key, required, min, max, out, error);
	return read_time(&number, min, max, clock_khz, out, error);
}
