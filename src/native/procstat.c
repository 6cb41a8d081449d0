/*
 * /proc/interrupts and /proc/vmstat, parsed.  The files' formats are the
 * kernel's show_interrupts() / arch_show_interrupts() (a header of "CPUn"
 * names, then rows "NAME: count count ... description") and vmstat_show()
 * ("name value" lines).
 */
#include <stdlib.h>
#include <string.h>
#include "tlbsim/native/procstat.h"
#include "tlbsim/util/error.h"

const char *const procstat_vmstat_names[PROCSTAT_NR_VMSTAT] = {
    "nr_tlb_remote_flush",
    "nr_tlb_remote_flush_received",
    "nr_tlb_local_flush_all",
    "nr_tlb_local_flush_one",
};

void procstat_init(struct procstat *s, unsigned nr_cpus)
{
	memset(s, 0, sizeof(*s));
	s->nr_cpus = nr_cpus;
	s->tlb = g_new0(uint64_t, nr_cpus);
}

void procstat_clear(struct procstat *s)
{
	g_free(s->tlb);
	s->tlb = NULL;
}

/* The CPU numbers the header line names, in column order. */
static GArray *header_cpus(const char *line, GError **error)
{
	GArray *cpus = g_array_new(FALSE, FALSE, sizeof(unsigned));
	char **words = g_strsplit_set(line, " \t", -1);
	for (char **w = words; *w; w++) {
		if (!**w)
			continue;
		char *end = NULL;
		unsigned long cpu = strncmp(*w, "CPU", 3) == 0 ? strtoul(*w + 3, &end, 10) : 0;
		if (!end || *end || end == *w + 3) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
				    "/proc/interrupts: header word \"%s\" is not CPUn", *w);
			g_array_free(cpus, TRUE);
			cpus = NULL;
			break;
		}
		unsigned value = (unsigned)cpu;
		g_array_append_val(cpus, value);
	}
	g_strfreev(words);
	return cpus;
}

/* The counts of row @line ("TLB:  1  2  TLB shootdowns"), one per header CPU. */
static bool parse_tlb_row(const char *line, const GArray *cpus, struct procstat *s, GError **error)
{
	const char *p = strchr(line, ':') + 1;
	for (unsigned i = 0; i < cpus->len; i++) {
		char *end = NULL;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p) {
			g_set_error(error, TLBSIM_ERROR, TLBSIM_ERROR_PARSE,
				    "/proc/interrupts: TLB row has %u counts, the header %u CPUs",
				    i, cpus->len);
			return false;
		}
		unsigned cpu = g_array_index(cpus, unsigned, i);
		if (cpu < s->nr_cpus)
			s->tlb[cpu] = v;
		p = end;
	}
	s->has_tlb_row = true;
	return true;
}

bool procstat_parse_interrupts(const char *text, struct procstat *s, GError **error)
{
	char **lines = g_strsplit(text, "\n", -1);
	GArray *cpus = lines[0] ? header_cpus(lines[0], error) : NULL;
	bool ok = cpus != NULL;
	s->has_tlb_row = false;
	for (char **l = lines + 1; ok && lines[0] && *l; l++) {
		const char *name = *l + strspn(*l, " ");
		if (g_str_has_prefix(name, "TLB:"))
			ok = parse_tlb_row(name, cpus, s, error);
	}
	if (cpus)
		g_array_free(cpus, TRUE);
	g_strfreev(lines);
	return ok;
}

void procstat_parse_vmstat(const char *text, struct procstat *s)
{
	unsigned found = 0;
	char **lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		for (unsigned i = 0; i < PROCSTAT_NR_VMSTAT; i++) {
			size_t len = strlen(procstat_vmstat_names[i]);
			if (strncmp(*l, procstat_vmstat_names[i], len) == 0 && (*l)[len] == ' ') {
				s->vmstat[i] = g_ascii_strtoull(*l + len + 1, NULL, 10);
				found |= 1u << i;
			}
		}
	}
	g_strfreev(lines);
	s->has_vmstat = found == (1u << PROCSTAT_NR_VMSTAT) - 1;
}

bool procstat_read(struct procstat *s, GError **error)
{
	char *text = NULL;
	bool ok = true;
	if (g_file_get_contents("/proc/interrupts", &text, NULL, NULL))
		ok = procstat_parse_interrupts(text, s, error);
	g_free(text);
	text = NULL;
	if (g_file_get_contents("/proc/vmstat", &text, NULL, NULL))
		procstat_parse_vmstat(text, s);
	g_free(text);
	return ok;
}

void procstat_delta(const struct procstat *before, const struct procstat *after,
		    struct procstat *delta)
{
	g_assert(delta->nr_cpus == before->nr_cpus && after->nr_cpus == before->nr_cpus);
	delta->has_tlb_row = before->has_tlb_row && after->has_tlb_row;
	for (unsigned c = 0; c < delta->nr_cpus; c++)
		delta->tlb[c] = after->tlb[c] - before->tlb[c];
	delta->has_vmstat = before->has_vmstat && after->has_vmstat;
	for (unsigned i = 0; i < PROCSTAT_NR_VMSTAT; i++)
		delta->vmstat[i] = after->vmstat[i] - before->vmstat[i];
}
