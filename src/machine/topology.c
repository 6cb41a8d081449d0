/*
 * Machine descriptions (topologies/<name>.json): parse, validate, and the
 * CPU numbering and distance helpers.
 *
 * The file (every number may be plain or {"value": N, "source": "..."}; a time
 * in cycles -- "*_cycles" and every member of "costs" -- may also be a string
 * with a unit, "350ns", converted at clock_ghz: get_cost()):
 *   { "name", "description", "sockets", "cores_per_socket", "threads_per_core",
 *     "clock_ghz", "hw_asids", "page_walkers", "smt_invalidation": "core" | "thread",
 *     "cpuid": {"tlb_lld_4k", "tlb_lli_4k", "tlb_flushall_shift"},
 *     "flush_hw": {"arch": "x86" | "arm64" | "riscv",
 *                  "remote": "ipi" | "sbi" | "broadcast", "invlpgb_count_max",
 *                  "rar_payloads", "coherent_tlbs", "tlb_directory_entries",
 *                  "full_flush_only", "pwc_entries"},
 *     "tlbs": [{"name", "level", "entries", "ways", "page_sizes": ["4K", ...],
 *               "per_core", "replacement": "lru" | "tree_plru", "hit_cycles"}, ...],
 *     "caches": {"line_bytes", "memory_cycles", "resident_cycles",
 *                "levels": [{"name", "size_kib", "ways", "shared_by": "core" | "socket",
 *                            "hit_cycles"}, ...]},
 *     "costs": {"page_walk", "invlpg", "flush_all", "invpcid_addr", "cr3_switch", "ipi_send",
 *               "ipi_latency": {"smt", "socket", "remote"}, "irq_entry", "irq_exit",
 *               "line_transfer": {"self", "smt", "socket", "remote"},
 *               "context_switch", "syscall", "page_fault", "vma_op", "pte_op", "lru_page",
 *               "broadcast_issue", "broadcast_sync", "sbi_call", "rar_service",
 *               "tlb_snoop", "directory_lookup", "lsq_drain"} }
 *
 * Notes:
 * - Every key is required: a machine is described completely or refused, so
 *   no experiment runs on a silent default.  "remote" latencies are required
 *   on one socket too (they are then unused).  The only optional key is
 *   "comment" (a string or an array of strings, ignored), allowed in every
 *   object of the file except a {"value", "source"} number.
 * - Each object's keys are checked before its fields are read, so a typo is
 *   reported as a typo with a suggestion, not as a missing key.
 * - Parse -> validate -> return: range checks happen as each field is read,
 *   cross-field checks (total CPUs, unique names, a level-1 4K structure)
 *   after; whoever builds a machine from the result never sees invalid input.
 * - per_core with threads_per_core == 1 is accepted: the structure is then
 *   simply per CPU.
 * - "caches": "levels" may be empty (no data cache modelled: a walk costs
 *   "page_walk" whatever its loads); "line_bytes", "memory_cycles" and
 *   "resident_cycles" are required anyway.  "resident_cycles" (the load
 *   latency "page_walk" already includes) may not exceed "memory_cycles".  A
 *   level shared by a socket is given to each core as an equal share (its
 *   size / cores_per_socket, rounded down to whole sets), so that cores stay
 *   independent between events, which run-ahead relies on (interp.c): one
 *   core cannot take more of an L3 than its share.  Hit latencies must not
 *   fall from one level to the next, nor memory below the last level.
 * Invariant: a returned topology satisfies every check below; the numbering
 * helpers assert their CPU arguments are < topology_nr_cpus().
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include "tlbsim/machine/topology.h"
#include "tlbsim/util/config.h"
#include "tlbsim/util/error.h"

/*
 * Sanity bounds: larger values are typos, not machines.  4096 CPUs is the
 * NR_CPUS of common x86-64 distribution kernels, and keeps the 16-bit TLB
 * entry owner (struct tlb_entry) far from overflow.
 */
#define MAX_SOCKETS 64
#define MAX_CORES_PER_SOCKET 1024
#define MAX_THREADS_PER_CORE 8
#define MAX_CPUS 4096
#define CLOCK_GHZ_MIN 0.1
#define CLOCK_GHZ_MAX 10.0
/* 16-bit ASIDs (arm64's largest); x86 PCIDs are 12 bits (4096). */
#define MAX_HW_ASIDS 65536
/* Zen 4 has 6 page-miss handlers per core; 16 leaves room without allowing typos. */
#define MAX_PAGE_WALKERS 16
/* Matches MACHINE_MAX_TLBS; no real core has more than a handful per CPU. */
#define MAX_TLBS 16
#define MAX_TLB_ENTRIES 65536
/* Entries of every structure of every CPU together: 2^25 entries of
 * struct tlb_entry are about 1 GiB of host memory, checked before allocating. */
#define MAX_TOTAL_TLB_ENTRIES (UINT64_C(1) << 25)
/* One second at 1 GHz: any single cost above it is a unit mistake. */
#define MAX_COST_CYCLES 1000000000u
/* tlb_flushall_shift: -1 disables range flushes; 3.x kernels used up to 6. */
#define FLUSHALL_SHIFT_MIN (-1)
#define FLUSHALL_SHIFT_MAX 16
/* Data caches: the levels a real hierarchy has, and sizes that are not typos. */
#define MAX_CACHE_LEVELS 4
#define MIN_CACHE_LINE_BYTES 16
#define MAX_CACHE_LINE_BYTES 256
#define MAX_CACHE_KIB (1u << 20)
#define MAX_CACHE_WAYS 64
/* Lines of every core's caches together: 8 bytes of host memory each. */
#define MAX_TOTAL_CACHE_LINES (UINT64_C(1) << 26)
/* CPUID 0x80000008 EDX[15:0] + 1: a 16-bit field. */
#define MAX_INVLPGB_COUNT 65536
#define MAX_RAR_PAYLOADS 256
/* A shared TLB directory (DiDi): 2^24 entries, far beyond any proposal's. */
#define MAX_DIRECTORY_ENTRIES (1u << 24)

static const char *const top_keys[] = {
    "name",
    "description",
    "sockets",
    "cores_per_socket",
    "threads_per_core",
    "clock_ghz",
    "hw_asids",
    "page_walkers",
    "smt_invalidation",
    "cpuid",
    "flush_hw",
    "tlbs",
    "caches",
    "costs",
    "comment",
    "$schema", /* the editor's: docs/schema/topology.schema.json */
    NULL,
};
static const char *const cpuid_keys[] = {"tlb_lld_4k", "tlb_lli_4k", "tlb_flushall_shift",
					 "comment", NULL};
static const char *const flush_hw_keys[] = {
    "arch", "remote", "invlpgb_count_max", "rar_payloads", "coherent_tlbs",
    "tlb_directory_entries", "full_flush_only", "pwc_entries",
    "comment", NULL};
static const char *const arch_names[] = {
    [ARCH_X86] = "x86",
    [ARCH_ARM64] = "arm64",
    [ARCH_RISCV] = "riscv",
    NULL,
};
static const char *const remote_flush_names[] = {
    [REMOTE_FLUSH_IPI] = "ipi",
    [REMOTE_FLUSH_SBI] = "sbi",
    [REMOTE_FLUSH_BROADCAST] = "broadcast",
    NULL,
};
static const char *const tlb_keys[] = {"name",	  "level",	"entries",    "ways",
				       "page_sizes", "per_core",	"replacement", "hit_cycles",
				       "comment",    NULL};
static const char *const tlb_replacement_names[] = {
    [TLB_REPLACE_LRU] = "lru",
    [TLB_REPLACE_TREE_PLRU] = "tree_plru",
    NULL,
};
static const char *const caches_keys[] = {"line_bytes", "levels", "memory_cycles",
					  "resident_cycles", "comment", NULL};
static const char *const cache_level_keys[] = {"name",	     "size_kib",   "ways", "shared_by",
					       "hit_cycles", "comment", NULL};
static const char *const cache_sharing_names[] = {
    [CACHE_SHARED_BY_CORE] = "core",
    [CACHE_SHARED_BY_SOCKET] = "socket",
    NULL,
};
static const char *const smt_names[] = {
    [SMT_INVALIDATE_CORE] = "core",
    [SMT_INVALIDATE_THREAD] = "thread",
    NULL,
};

/* Keys of "ipi_latency" and "line_transfer", indexed by distance. */
static const char *const distance_keys[NR_DISTANCES] = {
    [DIST_SELF] = "self",
    [DIST_SMT] = "smt",
    [DIST_SOCKET] = "socket",
    [DIST_REMOTE] = "remote",
};

/* The scalar members of "costs": a cost is added here and nowhere else. */
static const struct cost_field {
	const char *key;
	size_t offset;
} scalar_costs[] = {
    {"page_walk", offsetof(struct topology_costs, page_walk)},
    {"invlpg", offsetof(struct topology_costs, invlpg)},
    {"flush_all", offsetof(struct topology_costs, flush_all)},
    {"invpcid_addr", offsetof(struct topology_costs, invpcid_addr)},
    {"cr3_switch", offsetof(struct topology_costs, cr3_switch)},
    {"ipi_send", offsetof(struct topology_costs, ipi_send)},
    {"irq_entry", offsetof(struct topology_costs, irq_entry)},
    {"irq_exit", offsetof(struct topology_costs, irq_exit)},
    {"context_switch", offsetof(struct topology_costs, context_switch)},
    {"syscall", offsetof(struct topology_costs, syscall)},
    {"page_fault", offsetof(struct topology_costs, page_fault)},
    {"vma_op", offsetof(struct topology_costs, vma_op)},
    {"pte_op", offsetof(struct topology_costs, pte_op)},
    {"lru_page", offsetof(struct topology_costs, lru_page)},
    {"broadcast_issue", offsetof(struct topology_costs, broadcast_issue)},
    {"broadcast_sync", offsetof(struct topology_costs, broadcast_sync)},
    {"sbi_call", offsetof(struct topology_costs, sbi_call)},
    {"rar_service", offsetof(struct topology_costs, rar_service)},
    {"tlb_snoop", offsetof(struct topology_costs, tlb_snoop)},
    {"directory_lookup", offsetof(struct topology_costs, directory_lookup)},
    {"lsq_drain", offsetof(struct topology_costs, lsq_drain)},
};

/* Per-distance members of "costs"; ipi_latency has no "self" (unused, 0). */
static const struct distance_field {
	const char *key;
	size_t offset;
	enum topology_distance first;
} distance_costs[] = {
    {"ipi_latency", offsetof(struct topology_costs, ipi_latency), DIST_SMT},
    {"line_transfer", offsetof(struct topology_costs, line_transfer), DIST_SELF},
};

/* ----------------------------------------------------------------------------
 * Small readers
 * ------------------------------------------------------------------------- */

static bool get_unsigned(const struct config_node *node, const char *key, unsigned min,
			 unsigned max, unsigned *out, GError **error)
{
	uint64_t v;
	if (!config_get_u64(node, key, true, min, max, &v, error))
		return false;
	*out = (unsigned)v;
	return true;
}

/* A required member that must be an object with only @allowed keys. */
static bool get_section(const struct config_node *node, const char *key, const char *const *allowed,
			struct config_node *section, GError **error)
{
	*section = config_child(node, key);
	if (section->json == NULL) {
		config_set_error(error, node, "missing required key \"%s\"", key);
		return false;
	}
	return config_check_keys(section, allowed, error);
}

/* "comment" is optional free text: a string or an array of strings. */
static bool check_comment(const struct config_node *node, GError **error)
{
	struct config_node comment = config_child(node, "comment");
	const cJSON *item;

	if (comment.json == NULL || cJSON_IsString(comment.json))
		return true;
	if (cJSON_IsArray(comment.json)) {
		cJSON_ArrayForEach(item, comment.json)
		{
			if (!cJSON_IsString(item))
				goto out_bad;
		}
		return true;
	}
out_bad:
	config_set_error(error, &comment, "expected a string or an array of strings");
	return false;
}

static bool get_nonempty_string(const struct config_node *node, const char *key, char **out,
				GError **error)
{
	if (!config_get_string(node, key, true, out, error))
		return false;
	if (**out == '\0') {
		struct config_node member = config_child(node, key);
		config_set_error(error, &member, "must not be empty");
		return false;
	}
	return true;
}

/*
 * A time in cycles: a number of cycles, or a string with a unit ("350ns")
 * converted at the clock (config_get_cycles()).  parse_shape() reads the
 * clock before any section that has costs.
 */
static bool get_cost(const struct config_node *node, const char *key, const struct topology *t,
		     uint64_t *out, GError **error)
{
	/* The clock to the nearest kHz: exact for up to 6 decimals of clock_ghz. */
	uint64_t clock_khz = (uint64_t)(t->clock_ghz * 1e6 + 0.5);
	return config_get_cycles(node, key, true, 0, MAX_COST_CYCLES, clock_khz, out, error);
}

/* ----------------------------------------------------------------------------
 * Sections
 * ------------------------------------------------------------------------- */

static bool parse_shape(const struct config_node *root, struct topology *t, GError **error)
{
	int smt = 0;

	if (!get_unsigned(root, "sockets", 1, MAX_SOCKETS, &t->sockets, error) ||
	    !get_unsigned(root, "cores_per_socket", 1, MAX_CORES_PER_SOCKET, &t->cores_per_socket,
			  error) ||
	    !get_unsigned(root, "threads_per_core", 1, MAX_THREADS_PER_CORE, &t->threads_per_core,
			  error))
		return false;
	/* At most 64 * 1024 * 8 = 2^19: no overflow. */
	unsigned cpus = t->sockets * t->cores_per_socket * t->threads_per_core;
	if (cpus > MAX_CPUS) {
		config_set_error(
		    error, root,
		    "sockets * cores_per_socket * threads_per_core = %u * %u * %u = %u "
		    "CPUs, more than the %u supported",
		    t->sockets, t->cores_per_socket, t->threads_per_core, cpus, MAX_CPUS);
		return false;
	}
	if (!config_get_double(root, "clock_ghz", true, CLOCK_GHZ_MIN, CLOCK_GHZ_MAX, &t->clock_ghz,
			       error) ||
	    !get_unsigned(root, "hw_asids", 0, MAX_HW_ASIDS, &t->hw_asids, error) ||
	    !get_unsigned(root, "page_walkers", 1, MAX_PAGE_WALKERS, &t->page_walkers, error) ||
	    !config_get_enum(root, "smt_invalidation", true, smt_names, &smt, error))
		return false;
	t->smt_invalidation = (enum topology_smt_invalidation)smt;
	return true;
}

static bool parse_cpuid(const struct config_node *root, struct topology *t, GError **error)
{
	struct config_node cpuid;
	int64_t shift;

	if (!get_section(root, "cpuid", cpuid_keys, &cpuid, error) ||
	    !check_comment(&cpuid, error) ||
	    !get_unsigned(&cpuid, "tlb_lld_4k", 0, MAX_TLB_ENTRIES, &t->tlb_lld_4k, error) ||
	    !get_unsigned(&cpuid, "tlb_lli_4k", 0, MAX_TLB_ENTRIES, &t->tlb_lli_4k, error) ||
	    !config_get_i64(&cpuid, "tlb_flushall_shift", true, FLUSHALL_SHIFT_MIN,
			    FLUSHALL_SHIFT_MAX, &shift, error))
		return false;
	t->tlb_flushall_shift = (int)shift;
	return true;
}

/*
 * "flush_hw": how this machine invalidates other CPUs' TLBs.  The remote
 * mechanism must be one the architecture has: x86 interrupts (and may add
 * INVLPGB), arm64 broadcasts TLBI ... IS, riscv interrupts directly or asks
 * SBI firmware for a remote fence.
 */
static bool parse_flush_hw(const struct config_node *root, struct topology *t, GError **error)
{
	struct config_node hw;
	int arch = 0, remote = 0;

	if (!get_section(root, "flush_hw", flush_hw_keys, &hw, error) || !check_comment(&hw, error) ||
	    !config_get_enum(&hw, "arch", true, arch_names, &arch, error) ||
	    !config_get_enum(&hw, "remote", true, remote_flush_names, &remote, error) ||
	    !get_unsigned(&hw, "invlpgb_count_max", 0, MAX_INVLPGB_COUNT, &t->invlpgb_count_max,
			  error) ||
	    !get_unsigned(&hw, "rar_payloads", 0, MAX_RAR_PAYLOADS, &t->rar_payloads, error) ||
	    !config_get_bool(&hw, "coherent_tlbs", true, &t->coherent_tlbs, error) ||
	    !get_unsigned(&hw, "tlb_directory_entries", 0, MAX_DIRECTORY_ENTRIES,
			  &t->tlb_directory_entries, error) ||
	    !config_get_bool(&hw, "full_flush_only", true, &t->full_flush_only, error) ||
	    !get_unsigned(&hw, "pwc_entries", 0, MAX_TLB_ENTRIES, &t->pwc_entries, error))
		return false;
	t->arch = (enum topology_arch)arch;
	t->remote_flush = (enum topology_remote_flush)remote;
	static const bool allowed[][NR_REMOTE_FLUSH] = {
	    [ARCH_X86] = {[REMOTE_FLUSH_IPI] = true},
	    [ARCH_ARM64] = {[REMOTE_FLUSH_BROADCAST] = true},
	    [ARCH_RISCV] = {[REMOTE_FLUSH_IPI] = true, [REMOTE_FLUSH_SBI] = true},
	};
	if (!allowed[arch][remote]) {
		struct config_node node = config_child(&hw, "remote");
		config_set_error(error, &node, "%s has no \"%s\" remote flush (x86: \"ipi\", arm64: "
				 "\"broadcast\", riscv: \"ipi\" or \"sbi\")",
				 arch_names[arch], remote_flush_names[remote]);
		return false;
	}
	if (t->invlpgb_count_max > 0 && t->arch != ARCH_X86) {
		struct config_node node = config_child(&hw, "invlpgb_count_max");
		config_set_error(error, &node, "INVLPGB is an x86 (AMD) instruction; expected 0 on %s",
				 arch_names[arch]);
		return false;
	}
	if (t->tlb_directory_entries > 0 && t->arch != ARCH_X86) {
		struct config_node node = config_child(&hw, "tlb_directory_entries");
		config_set_error(error, &node, "the TLB directory (DiDi) is modelled on x86 only; "
				 "expected 0 on %s", arch_names[arch]);
		return false;
	}
	if (t->rar_payloads > 0 && t->arch != ARCH_X86) {
		struct config_node node = config_child(&hw, "rar_payloads");
		config_set_error(error, &node, "RAR is an x86 (Intel) facility; expected 0 on %s",
				 arch_names[arch]);
		return false;
	}
	return true;
}

/* "page_sizes": a non-empty array of distinct "4K", "2M", "1G"; *mask gets the bits. */
static bool parse_page_sizes(const struct config_node *tlb, unsigned *mask, GError **error)
{
	const char *names[NR_PAGE_SIZES + 1];
	struct config_node sizes = config_child(tlb, "page_sizes");

	for (int ps = 0; ps < NR_PAGE_SIZES; ps++)
		names[ps] = page_size_name((enum page_size)ps);
	names[NR_PAGE_SIZES] = NULL;

	if (sizes.json == NULL) {
		config_set_error(error, tlb, "missing required key \"page_sizes\"");
		return false;
	}
	if (!cJSON_IsArray(sizes.json) || cJSON_GetArraySize(sizes.json) == 0) {
		config_set_error(
		    error, &sizes,
		    "expected a non-empty array of page sizes (\"4K\", \"2M\", \"1G\")");
		return false;
	}
	*mask = 0;
	int i = 0;
	for (const cJSON *item = sizes.json->child; item; item = item->next, i++) {
		struct config_node size = config_node_element(&sizes, item, i);
		const char *name = cJSON_GetStringValue(size.json);
		int ps = name != NULL ? page_size_from_name(name) : -1;
		if (ps < 0) {
			const char *hint = name != NULL ? config_suggest(name, names) : NULL;
			char *text = cJSON_PrintUnformatted(size.json);
			config_set_error(error, &size,
					 "expected one of \"4K\", \"2M\", \"1G\", got %.40s%s%s%s",
					 text, hint != NULL ? " (did you mean \"" : "",
					 hint != NULL ? hint : "", hint != NULL ? "\"?)" : "");
			cJSON_free(text);
			return false;
		}
		if (*mask & (1u << ps)) {
			config_set_error(error, &size, "\"%s\" is listed twice", name);
			return false;
		}
		*mask |= 1u << ps;
	}
	return true;
}

static bool parse_tlb(const struct config_node *node, const struct topology *t,
		      struct topology_tlb *tlb, GError **error)
{
	struct config_node ways;

	if (!config_check_keys(node, tlb_keys, error) || !check_comment(node, error) ||
	    !get_nonempty_string(node, "name", &tlb->name, error) ||
	    !get_unsigned(node, "level", 1, 2, &tlb->level, error) ||
	    !get_unsigned(node, "entries", 1, MAX_TLB_ENTRIES, &tlb->geometry.entries, error) ||
	    !get_unsigned(node, "ways", 1, tlb->geometry.entries, &tlb->geometry.ways, error))
		return false;
	if (tlb->geometry.entries % tlb->geometry.ways != 0) {
		ways = config_child(node, "ways");
		config_set_error(error, &ways, "%u ways do not divide %u entries into whole sets",
				 tlb->geometry.ways, tlb->geometry.entries);
		return false;
	}
	int replacement = 0;
	if (!parse_page_sizes(node, &tlb->geometry.page_sizes, error) ||
	    !config_get_bool(node, "per_core", true, &tlb->per_core, error) ||
	    !config_get_enum(node, "replacement", true, tlb_replacement_names, &replacement,
			     error) ||
	    !get_cost(node, "hit_cycles", t, &tlb->hit_cycles, error))
		return false;
	tlb->geometry.replacement = (enum tlb_replacement)replacement;
	unsigned w = tlb->geometry.ways;
	if (tlb->geometry.replacement == TLB_REPLACE_TREE_PLRU &&
	    ((w & (w - 1)) != 0 || w > TLB_PLRU_MAX_WAYS)) {
		struct config_node key = config_child(node, "replacement");
		config_set_error(error, &key,
				 "\"tree_plru\" needs a power-of-two number of ways up to %d, "
				 "not %u (use \"lru\")",
				 TLB_PLRU_MAX_WAYS, w);
		return false;
	}
	return true;
}

static bool parse_tlbs(const struct config_node *root, struct topology *t, GError **error)
{
	struct config_node tlbs = config_child(root, "tlbs");

	if (tlbs.json == NULL) {
		config_set_error(error, root, "missing required key \"tlbs\"");
		return false;
	}
	if (!cJSON_IsArray(tlbs.json)) {
		config_set_error(error, &tlbs, "expected an array of 1 to %d TLB structures",
				 MAX_TLBS);
		return false;
	}
	int n = cJSON_GetArraySize(tlbs.json);
	if (n < 1 || n > MAX_TLBS) {
		config_set_error(error, &tlbs, "expected 1 to %d TLB structures, got %d", MAX_TLBS,
				 n);
		return false;
	}
	t->tlbs = g_new0(struct topology_tlb, (size_t)n);
	for (int i = 0; i < n; i++) {
		struct config_node node = config_index(&tlbs, i);
		t->nr_tlbs = (unsigned)i + 1; /* so topology_free() frees the names so far */
		if (!parse_tlb(&node, t, &t->tlbs[i], error))
			return false;
	}
	return true;
}

/* Cross-structure checks: unique names, and somewhere for a 4K page to hit first. */
static bool validate_tlbs(const struct config_node *root, const struct topology *t, GError **error)
{
	struct config_node tlbs = config_child(root, "tlbs");
	bool l1_4k = false;

	for (unsigned i = 0; i < t->nr_tlbs; i++) {
		for (unsigned j = 0; j < i; j++) {
			if (strcmp(t->tlbs[i].name, t->tlbs[j].name) != 0)
				continue;
			struct config_node tlb = config_index(&tlbs, (int)i);
			struct config_node name = config_child(&tlb, "name");
			config_set_error(error, &name, "\"%s\" is already the name of $.tlbs[%u]",
					 t->tlbs[i].name, j);
			return false;
		}
		if (t->tlbs[i].level == 1 && (t->tlbs[i].geometry.page_sizes & (1u << PS_4K)))
			l1_4k = true;
	}
	if (!l1_4k) {
		config_set_error(error, &tlbs, "no level-1 structure holds 4K pages");
		return false;
	}
	uint64_t cpus = (uint64_t)t->sockets * t->cores_per_socket * t->threads_per_core;
	uint64_t total = 0;
	for (unsigned i = 0; i < t->nr_tlbs; i++)
		total += (uint64_t)t->tlbs[i].geometry.entries *
			 (t->tlbs[i].per_core ? cpus / t->threads_per_core : cpus);
	if (total > MAX_TOTAL_TLB_ENTRIES) {
		config_set_error(error, &tlbs,
				 "the TLBs of all %" G_GUINT64_FORMAT " CPUs hold %" G_GUINT64_FORMAT
				 " entries, more than the %" G_GUINT64_FORMAT
				 " supported (about 1 GiB of host memory)",
				 cpus, total, MAX_TOTAL_TLB_ENTRIES);
		return false;
	}
	return true;
}


static bool parse_cache_level(const struct config_node *node, const struct topology *t,
			      unsigned line_bytes, struct topology_cache *level, GError **error)
{
	int sharing = 0;

	if (!config_check_keys(node, cache_level_keys, error) || !check_comment(node, error) ||
	    !get_nonempty_string(node, "name", &level->name, error) ||
	    !get_unsigned(node, "size_kib", 1, MAX_CACHE_KIB, &level->size_kib, error) ||
	    !get_unsigned(node, "ways", 1, MAX_CACHE_WAYS, &level->ways, error) ||
	    !config_get_enum(node, "shared_by", true, cache_sharing_names, &sharing, error) ||
	    !get_cost(node, "hit_cycles", t, &level->hit_cycles, error))
		return false;
	level->shared_by = (enum topology_cache_sharing)sharing;
	uint64_t lines = (uint64_t)level->size_kib * 1024 / line_bytes;
	unsigned sharers = level->shared_by == CACHE_SHARED_BY_SOCKET ? t->cores_per_socket : 1;
	uint64_t sets = lines / sharers / level->ways;
	if (sets == 0) {
		struct config_node size = config_child(node, "size_kib");
		config_set_error(error, &size,
				 "%u KiB of %u-byte lines shared by %u core%s leave each core "
				 "less than one set of %u ways",
				 level->size_kib, line_bytes, sharers, sharers == 1 ? "" : "s",
				 level->ways);
		return false;
	}
	level->geometry = (struct cache_geometry){.sets = (unsigned)sets, .ways = level->ways};
	return true;
}

/* Cross-level checks: unique names, latencies that grow outwards, host memory. */
static bool validate_caches(const struct config_node *caches, const struct topology *t,
			    GError **error)
{
	struct config_node levels = config_child(caches, "levels");
	uint64_t lines = 0;

	for (unsigned i = 0; i < t->nr_caches; i++) {
		struct config_node level = config_index(&levels, (int)i);
		for (unsigned j = 0; j < i; j++) {
			if (strcmp(t->caches[i].name, t->caches[j].name) != 0)
				continue;
			struct config_node name = config_child(&level, "name");
			config_set_error(error, &name,
					 "\"%s\" is already the name of $.caches.levels[%u]",
					 t->caches[i].name, j);
			return false;
		}
		if (i > 0 && t->caches[i].hit_cycles < t->caches[i - 1].hit_cycles) {
			struct config_node hit = config_child(&level, "hit_cycles");
			config_set_error(error, &hit,
					 "a level is not faster than the one before it: %" PRIu64
					 " cycles after %" PRIu64 " at \"%s\"",
					 t->caches[i].hit_cycles, t->caches[i - 1].hit_cycles,
					 t->caches[i - 1].name);
			return false;
		}
		lines += (uint64_t)t->caches[i].geometry.sets * t->caches[i].geometry.ways;
	}
	if (t->nr_caches > 0 && t->memory_cycles < t->caches[t->nr_caches - 1].hit_cycles) {
		struct config_node memory = config_child(caches, "memory_cycles");
		config_set_error(error, &memory,
				 "memory (%" PRIu64 " cycles) is not slower than the last level, "
				 "\"%s\" (%" PRIu64 ")",
				 t->memory_cycles, t->caches[t->nr_caches - 1].name,
				 t->caches[t->nr_caches - 1].hit_cycles);
		return false;
	}
	uint64_t cores = (uint64_t)t->sockets * t->cores_per_socket;
	if (lines * cores > MAX_TOTAL_CACHE_LINES) {
		config_set_error(error, &levels,
				 "the caches of all %" PRIu64 " cores hold %" PRIu64
				 " lines, more than the %" PRIu64
				 " supported (512 MiB of host memory)",
				 cores, lines * cores, MAX_TOTAL_CACHE_LINES);
		return false;
	}
	return true;
}

static bool parse_caches(const struct config_node *root, struct topology *t, GError **error)
{
	struct config_node caches, levels;

	if (!get_section(root, "caches", caches_keys, &caches, error) ||
	    !check_comment(&caches, error) ||
	    !get_unsigned(&caches, "line_bytes", MIN_CACHE_LINE_BYTES, MAX_CACHE_LINE_BYTES,
			  &t->cache_line_bytes, error))
		return false;
	if ((t->cache_line_bytes & (t->cache_line_bytes - 1)) != 0) {
		struct config_node line = config_child(&caches, "line_bytes");
		config_set_error(error, &line, "expected a power of two, got %u",
				 t->cache_line_bytes);
		return false;
	}
	if (!get_cost(&caches, "memory_cycles", t, &t->memory_cycles, error) ||
	    !get_cost(&caches, "resident_cycles", t, &t->resident_cycles, error))
		return false;
	if (t->resident_cycles > t->memory_cycles) {
		struct config_node resident = config_child(&caches, "resident_cycles");
		config_set_error(error, &resident,
				 "a walk's loads cannot be resident beyond memory: %" PRIu64
				 " cycles, memory %" PRIu64,
				 t->resident_cycles, t->memory_cycles);
		return false;
	}
	levels = config_child(&caches, "levels");
	if (levels.json == NULL) {
		config_set_error(error, &caches, "missing required key \"levels\"");
		return false;
	}
	if (!cJSON_IsArray(levels.json) || cJSON_GetArraySize(levels.json) > MAX_CACHE_LEVELS) {
		config_set_error(error, &levels,
				 "expected an array of 0 to %d cache levels, nearest first",
				 MAX_CACHE_LEVELS);
		return false;
	}
	int n = cJSON_GetArraySize(levels.json);
	t->caches = g_new0(struct topology_cache, (size_t)n);
	for (int i = 0; i < n; i++) {
		struct config_node node = config_index(&levels, i);
		t->nr_caches = (unsigned)i + 1; /* so topology_free() frees the names so far */
		if (!parse_cache_level(&node, t, t->cache_line_bytes, &t->caches[i], error))
			return false;
	}
	return validate_caches(&caches, t, error);
}

static bool parse_distance_cost(const struct config_node *costs, const struct distance_field *field,
				const struct topology *t, uint64_t *out, GError **error)
{
	const char *allowed[NR_DISTANCES + 2];
	struct config_node node;
	unsigned n = 0;

	for (int d = (int)field->first; d < NR_DISTANCES; d++)
		allowed[n++] = distance_keys[d];
	allowed[n++] = "comment";
	allowed[n] = NULL;
	if (!get_section(costs, field->key, allowed, &node, error) || !check_comment(&node, error))
		return false;
	for (int d = (int)field->first; d < NR_DISTANCES; d++)
		if (!get_cost(&node, distance_keys[d], t, &out[d], error))
			return false;
	return true;
}

static bool parse_costs(const struct config_node *root, struct topology *t, GError **error)
{
	struct topology_costs *costs = &t->costs;
	enum { NR_SCALAR = G_N_ELEMENTS(scalar_costs), NR_DIST = G_N_ELEMENTS(distance_costs) };
	const char *allowed[NR_SCALAR + NR_DIST + 2];
	struct config_node node;
	unsigned n = 0;

	for (unsigned i = 0; i < NR_SCALAR; i++)
		allowed[n++] = scalar_costs[i].key;
	for (unsigned i = 0; i < NR_DIST; i++)
		allowed[n++] = distance_costs[i].key;
	allowed[n++] = "comment";
	allowed[n] = NULL;

	if (!get_section(root, "costs", allowed, &node, error) || !check_comment(&node, error))
		return false;
	for (unsigned i = 0; i < NR_SCALAR; i++) {
		uint64_t *out = (uint64_t *)(void *)((char *)costs + scalar_costs[i].offset);
		if (!get_cost(&node, scalar_costs[i].key, t, out, error))
			return false;
	}
	for (unsigned i = 0; i < NR_DIST; i++) {
		uint64_t *out = (uint64_t *)(void *)((char *)costs + distance_costs[i].offset);
		if (!parse_distance_cost(&node, &distance_costs[i], t, out, error))
			return false;
	}
	return true;
}

/* ----------------------------------------------------------------------------
 * Public
 * ------------------------------------------------------------------------- */

struct topology *topology_from_json(const cJSON *json, const char *file, GError **error)
{
	struct config_node root = config_root(json, file);
	struct topology *t = g_new0(struct topology, 1);

	if (!config_check_keys(&root, top_keys, error) || !check_comment(&root, error) ||
	    !get_nonempty_string(&root, "name", &t->name, error) ||
	    !config_get_string(&root, "description", true, &t->description, error) ||
	    !parse_shape(&root, t, error) || !parse_cpuid(&root, t, error) ||
	    !parse_flush_hw(&root, t, error) ||
	    !parse_tlbs(&root, t, error) || !validate_tlbs(&root, t, error) ||
	    !parse_caches(&root, t, error) || !parse_costs(&root, t, error))
		goto out_free_topology;
	return t;

out_free_topology:
	topology_free(t);
	return NULL;
}

void topology_free(struct topology *topology)
{
	if (topology == NULL)
		return;
	for (unsigned i = 0; i < topology->nr_tlbs; i++)
		g_free(topology->tlbs[i].name);
	g_free(topology->tlbs);
	for (unsigned i = 0; i < topology->nr_caches; i++)
		g_free(topology->caches[i].name);
	g_free(topology->caches);
	g_free(topology->description);
	g_free(topology->name);
	g_free(topology);
}

unsigned topology_nr_cpus(const struct topology *topology)
{
	return topology->sockets * topology->cores_per_socket * topology->threads_per_core;
}

/* Logical CPUs per thread index: all first threads come first (see topology.h). */
static unsigned cores_total(const struct topology *topology)
{
	return topology->sockets * topology->cores_per_socket;
}

unsigned topology_cpu_socket(const struct topology *topology, unsigned cpu)
{
	g_assert(cpu < topology_nr_cpus(topology));
	return (cpu % cores_total(topology)) / topology->cores_per_socket;
}

unsigned topology_cpu_core(const struct topology *topology, unsigned cpu)
{
	g_assert(cpu < topology_nr_cpus(topology));
	return cpu % topology->cores_per_socket;
}

unsigned topology_cpu_thread(const struct topology *topology, unsigned cpu)
{
	g_assert(cpu < topology_nr_cpus(topology));
	return cpu / cores_total(topology);
}

unsigned topology_cpu_core_id(const struct topology *topology, unsigned cpu)
{
	g_assert(cpu < topology_nr_cpus(topology));
	return cpu % cores_total(topology);
}

enum topology_distance topology_distance(const struct topology *topology, unsigned a, unsigned b)
{
	if (a == b) {
		g_assert(a < topology_nr_cpus(topology));
		return DIST_SELF;
	}
	if (topology_cpu_core_id(topology, a) == topology_cpu_core_id(topology, b))
		return DIST_SMT;
	if (topology_cpu_socket(topology, a) == topology_cpu_socket(topology, b))
		return DIST_SOCKET;
	return DIST_REMOTE;
}

/* Rounded to nearest; saturates at UINT64_MAX instead of overflowing. */
uint64_t topology_ns_to_cycles(const struct topology *topology, uint64_t ns)
{
	/* 2^64 as a double; any product at or above it does not fit. */
	const double limit = 18446744073709551616.0;
	double cycles = (double)ns * topology->clock_ghz + 0.5;

	if (cycles >= limit)
		return UINT64_MAX;
	return (uint64_t)cycles;
}

double topology_cycles_to_ns(const struct topology *topology, uint64_t cycles)
{
	return (double)cycles / topology->clock_ghz;
}
