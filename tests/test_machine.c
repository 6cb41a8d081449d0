/*
 * Tests of src/machine/machine.c: the TLB hierarchy built from a topology (per-core
 * structures really shared by SMT siblings), machine_translate()'s cycles,
 * counters, faults and stale-hit detection, the three invalidations and their
 * SMT scope, occupancy, and the lookahead/horizon that bounds run-ahead.
 *
 * Every machine is built from BASE_TOPOLOGY below (1 socket x 4 cores x 2
 * threads: cpu n and cpu n + 4 are siblings), edited per test with --set
 * style overrides, so each test states the one property it changes.  Hit
 * costs are distinct (l1d 1, l1d_2m 2, stlb 7, walk 30) so a cycle count
 * names the level that answered.
 */
#include <signal.h>
#include <string.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/machine/machine.h"
#include "tlbsim/util/config.h"

/* The machine's stale reports, into stale_buf (machine_stale_reports()). */
static struct stale_report stale_buf[MACHINE_STALE_REPORTS];
static unsigned nr_stale(const struct machine *m)
{
	return machine_stale_reports(m, stale_buf);
}

static const char BASE_TOPOLOGY[] =
    "{\"name\": \"test-8cpu\", \"description\": \"tests/test_machine.c\","
    " \"sockets\": 1, \"cores_per_socket\": 4, \"threads_per_core\": 2,"
    " \"clock_ghz\": 1.0, \"hw_asids\": 4096, \"page_walkers\": 1,"
    " \"smt_invalidation\": \"core\","
    " \"cpuid\": {\"tlb_lld_4k\": 32, \"tlb_lli_4k\": 32, \"tlb_flushall_shift\": 1},"
    " \"flush_hw\": {\"arch\": \"x86\", \"remote\": \"ipi\", \"invlpgb_count_max\": 0,"
    "  \"rar_payloads\": 0, \"coherent_tlbs\": false, \"tlb_directory_entries\": 0,"
    "  \"full_flush_only\": false,"
    "  \"pwc_entries\": 4},"
    " \"tlbs\": ["
    "  {\"name\": \"l1d\", \"level\": 1, \"entries\": 8, \"ways\": 2,"
    "   \"page_sizes\": [\"4K\"], \"per_core\": false, \"replacement\": \"lru\", \"hit_cycles\": 1},"
    "  {\"name\": \"l1d_2m\", \"level\": 1, \"entries\": 4, \"ways\": 4,"
    "   \"page_sizes\": [\"2M\"], \"per_core\": false, \"replacement\": \"lru\", \"hit_cycles\": 2},"
    "  {\"name\": \"stlb\", \"level\": 2, \"entries\": 32, \"ways\": 4,"
    "   \"page_sizes\": [\"4K\", \"2M\"], \"per_core\": true, \"replacement\": \"lru\", \"hit_cycles\": 7}],"
    " \"caches\": {\"line_bytes\": 64, \"levels\": [], \"memory_cycles\": 0,"
    "  \"resident_cycles\": 0},"
    " \"costs\": {\"page_walk\": 30, \"invlpg\": 100, \"flush_all\": 120, \"invpcid_addr\": 0,"
    "  \"cr3_switch\": 0, \"ipi_send\": 200,"
    "  \"ipi_latency\": {\"smt\": 1000, \"socket\": 1500, \"remote\": 2500},"
    "  \"irq_entry\": 300, \"irq_exit\": 300,"
    "  \"line_transfer\": {\"self\": 20, \"smt\": 40, \"socket\": 100, \"remote\": 300},"
    "  \"context_switch\": 2000, \"syscall\": 150, \"page_fault\": 1500, \"vma_op\": 3000,"
    "  \"pte_op\": 10, \"lru_page\": 40, \"broadcast_issue\": 0, \"broadcast_sync\": 0,"
    "  \"sbi_call\": 0, \"rar_service\": 0, \"tlb_snoop\": 0,"
    "  \"directory_lookup\": 0, \"lsq_drain\": 0}}";

/* Indexes into topology->tlbs / cpu->tlbs. */
enum { T_L1D, T_L1D_2M, T_STLB };
#define L1_HIT 1
#define L1_2M_HIT 2
#define STLB_HIT 7
#define WALK 30

#define NR_CPUS 8
#define SIBLING(cpu) ((cpu) + 4)

#define K4 UINT64_C(0x1000)
#define M2 UINT64_C(0x200000)
/* A 64-page 4K VMA (vpn 0x400..: set 0 of every structure) and a 4 MiB 2M one. */
#define SMALL UINT64_C(0x400000)
#define SMALL_PAGES 64
#define HUGE UINT64_C(0x40000000)
/* 4K pages over 8 spans of 2 MiB (the PDE cache's tests). */
#define WIDE UINT64_C(0x80000000)

struct rig {
	struct topology *topo;
	struct engine *engine;
	struct machine *m;
	struct mm *mm;
	struct vma *small;
	struct vma *huge;
	struct vma *wide;
	/* Time of the last xlate_cost() call: calls are far enough apart that
	 * no walk waits for an earlier one unless a test asks for that. */
	uint64_t now;
};

static void no_deliver(void *ctx, unsigned cpu, unsigned kind)
{
	(void)kind;
	(void)ctx;
	(void)cpu;
}

static void no_event(void *target, uint64_t arg)
{
	(void)target;
	(void)arg;
}

static struct topology *topology_with(const char *const *sets)
{
	GError *err = NULL;
	cJSON *json = config_parse_string(BASE_TOPOLOGY, "test_machine.c", &err);

	cr_assert_not_null(json, "%s", err ? err->message : "?");
	for (const char *const *s = sets; s && *s; s++) {
		const char *eq = strchr(*s, '=');
		cr_assert_not_null(eq, "bad override %s", *s);
		char *path = g_strndup(*s, (gsize)(eq - *s));
		cr_assert(config_apply_set(json, path, eq + 1, &err), "%s: %s", *s,
			  err ? err->message : "?");
		g_free(path);
	}
	struct topology *topo = topology_from_json(json, "test_machine.c", &err);
	cJSON_Delete(json);
	cr_assert_not_null(topo, "%s", err ? err->message : "?");
	return topo;
}

/* A machine of BASE_TOPOLOGY with @sets applied, and one address space. */
static struct rig *rig_new(const char *const *sets)
{
	struct rig *r = g_new0(struct rig, 1);

	r->topo = topology_with(sets);
	cr_assert_eq(topology_nr_cpus(r->topo), NR_CPUS);
	r->engine = engine_new(NR_CPUS + 1);
	r->m = machine_new(r->topo, r->engine, no_deliver, NULL);
	r->mm = mm_new(1, NR_CPUS);
	mm_add_vma(r->mm, SMALL, SMALL_PAGES * K4, PS_4K, false, 0, 0);
	mm_add_vma(r->mm, HUGE, 2 * M2, PS_2M, false, 1, 0);
	mm_add_vma(r->mm, WIDE, 8 * M2, PS_4K, false, 2, 0);
	mm_finish_layout(r->mm);
	r->small = &r->mm->vmas[0];
	r->huge = &r->mm->vmas[1];
	r->wide = &r->mm->vmas[2];
	return r;
}

static struct rig *rig_smt(const char *mode)
{
	const char *sets[] = {mode, NULL};
	return rig_new(sets);
}

static void rig_free(struct rig *r)
{
	mm_free(r->mm);
	machine_free(r->m);
	engine_free(r->engine);
	topology_free(r->topo);
	g_free(r);
}

static struct cpu *cpu(struct rig *r, unsigned id)
{
	cr_assert_lt(id, r->m->nr_cpus);
	return &r->m->cpus[id];
}

static struct vma *vma_of(struct rig *r, uint64_t addr)
{
	return addr >= WIDE ? r->wide : addr >= HUGE ? r->huge : r->small;
}

/* Page @n of the small VMA. */
static uint64_t page(unsigned n)
{
	return SMALL + n * K4;
}

static void populate(struct rig *r, uint64_t addr, bool writable)
{
	mm_populate(r->mm, vma_of(r, addr), addr, writable);
}

/* Translate and return the cycles it cost. */
static uint64_t xlate_cost(struct rig *r, unsigned id, uint16_t asid, uint64_t addr, bool write,
			   enum translate_result want)
{
	uint64_t cycles = 0;
	r->now += 1000000;
	enum translate_result got = machine_translate(r->m, cpu(r, id), asid, vma_of(r, addr), addr,
						      write, r->now, TRANSLATE_DEPENDENT, &cycles);

	cr_assert_eq(got, want, "cpu %u %s %#lx: result %d, want %d", id, write ? "write" : "read",
		     (unsigned long)addr, got, want);
	return cycles;
}

static uint64_t read_ok(struct rig *r, unsigned id, uint64_t addr)
{
	return xlate_cost(r, id, 0, addr, false, TRANSLATE_OK);
}

static void expect_lookup_identity(const struct cpu *c)
{
	cr_expect_eq(c->counters.tlb_lookups, c->counters.tlb_hits + c->counters.tlb_misses,
		     "cpu %u: lookups %lu != hits %lu + misses %lu", c->id,
		     (unsigned long)c->counters.tlb_lookups, (unsigned long)c->counters.tlb_hits,
		     (unsigned long)c->counters.tlb_misses);
}

/* ---- construction -------------------------------------------------------- */

Test(machine, cpus_follow_linux_numbering)
{
	struct rig *r = rig_new(NULL);

	cr_assert_eq(r->m->nr_cpus, NR_CPUS);
	cr_expect_eq(r->m->topology, r->topo);
	cr_expect_eq(r->m->engine, r->engine);
	cr_expect_not_null(r->m->fabric);
	for (unsigned c = 0; c < NR_CPUS; c++) {
		const struct cpu *p = cpu(r, c);
		cr_expect_eq(p->id, c);
		cr_expect_eq(p->socket, 0);
		cr_expect_eq(p->core, c % 4, "cpu %u", c);
		cr_expect_eq(p->thread, c / 4, "cpu %u", c);
		cr_expect_eq(p->core_id, c % 4, "cpu %u", c);
		cr_expect_eq(p->tlb_owner, c);
		cr_expect_eq(cpu_lane(p), fabric_cpu_lane(c));
		/* Its core's CPUs: itself and its sibling, in CPU order. */
		cr_assert_eq(p->nr_core_cpus, 2, "cpu %u", c);
		cr_expect_eq(p->core_cpus[0], c % 4);
		cr_expect_eq(p->core_cpus[1], c % 4 + 4);
		cr_expect_eq(p->counters.tlb_lookups, 0);
	}
	cr_expect_eq(nr_stale(r->m), 0);
	rig_free(r);
	machine_free(NULL);
}

/*
 * The engine groups of quiet accesses: one per core, the siblings together
 * (they share TLBs, walkers and caches); a single group under numaPTE, whose
 * walks pay for a replica depending on which socket walked first.
 */
Test(machine, quiet_accesses_run_grouped_by_core_or_all_together_under_numapte)
{
	struct rig *r = rig_new(NULL);
	cr_expect_eq(machine_nr_run_groups(r->m), 4);
	for (unsigned c = 0; c < NR_CPUS; c++)
		cr_expect_eq(machine_run_group(r->m, cpu(r, c)), c % 4, "cpu %u", c);
	r->m->replica_cycles = 2000;
	cr_expect_eq(machine_nr_run_groups(r->m), 1);
	for (unsigned c = 0; c < NR_CPUS; c++)
		cr_expect_eq(machine_run_group(r->m, cpu(r, c)), 0, "cpu %u", c);
	rig_free(r);
}

Test(machine, probe_order_level_one_first)
{
	struct rig *r = rig_new(NULL);

	cr_assert_eq(r->m->nr_probe[PS_4K], 2);
	cr_expect_eq(r->m->probe[PS_4K][0], T_L1D);
	cr_expect_eq(r->m->probe_level[PS_4K][0], 1);
	cr_expect_eq(r->m->probe[PS_4K][1], T_STLB);
	cr_expect_eq(r->m->probe_level[PS_4K][1], 2);
	cr_assert_eq(r->m->nr_probe[PS_2M], 2);
	cr_expect_eq(r->m->probe[PS_2M][0], T_L1D_2M);
	cr_expect_eq(r->m->probe[PS_2M][1], T_STLB);
	cr_expect_eq(r->m->nr_probe[PS_1G], 0);
	rig_free(r);
}

Test(machine, per_core_structures_are_shared_objects)
{
	struct rig *r = rig_new(NULL);

	for (unsigned c = 0; c < 4; c++) {
		struct cpu *a = cpu(r, c), *b = cpu(r, SIBLING(c));
		cr_expect_eq(a->tlbs[T_STLB], b->tlbs[T_STLB], "core %u", c);
		cr_expect_neq(a->tlbs[T_L1D], b->tlbs[T_L1D], "core %u", c);
		cr_expect_neq(a->tlbs[T_L1D_2M], b->tlbs[T_L1D_2M], "core %u", c);
		if (c > 0)
			cr_expect_neq(a->tlbs[T_STLB], cpu(r, 0)->tlbs[T_STLB], "core %u", c);
	}
	/* 8 CPUs x 2 private + 4 cores x 1 shared. */
	cr_expect_eq(r->m->nr_all_tlbs, NR_CPUS * 2 + 4);
	rig_free(r);

	/* per_core false: nothing shared. */
	const char *sets[] = {"tlbs[2].per_core=false", NULL};
	r = rig_new(sets);
	cr_expect_neq(cpu(r, 0)->tlbs[T_STLB], cpu(r, 4)->tlbs[T_STLB]);
	cr_expect_eq(r->m->nr_all_tlbs, NR_CPUS * 3);
	rig_free(r);
}

/* ---- SMT sharing, seen through translations ---------------------------- */

/*
 * SDM Vol.3A 8.7.13.2: a shared STLB tags entries with the logical CPU that
 * created them, so siblings share its capacity, never a translation, in
 * either invalidation mode.
 */
Test(machine_smt, core_mode_siblings_share_stlb_capacity_not_entries)
{
	struct rig *r = rig_smt("smt_invalidation=\"core\"");
	populate(r, page(0), true);

	cr_expect_eq(read_ok(r, 0, page(0)), WALK);
	/* The sibling cannot use cpu 0's entry: it walks and fills its own. */
	cr_expect_eq(read_ok(r, 4, page(0)), WALK);
	cr_expect_eq(cpu(r, 4)->counters.stlb_hits, 0);
	cr_expect_eq(cpu(r, 4)->counters.page_walks, 1);
	cr_expect_eq(tlb_occupancy(cpu(r, 0)->tlbs[T_STLB]), 2);
	cr_expect_eq(read_ok(r, 4, page(0)), L1_HIT);
	/* Another core shares nothing. */
	cr_expect_eq(read_ok(r, 1, page(0)), WALK);
	cr_expect_eq(read_ok(r, 5, page(0)), WALK);
	for (unsigned c = 0; c < NR_CPUS; c++)
		expect_lookup_identity(cpu(r, c));
	rig_free(r);
}

Test(machine_smt, thread_mode_sibling_misses_other_owner)
{
	struct rig *r = rig_smt("smt_invalidation=\"thread\"");
	populate(r, page(0), true);

	cr_expect_eq(cpu(r, 0)->owner_filter, 0);
	cr_expect_eq(cpu(r, 4)->owner_filter, 4);
	cr_expect_eq(read_ok(r, 0, page(0)), WALK);
	/* cpu 0's entry sits in the shared STLB but is tagged with cpu 0. */
	cr_expect_eq(read_ok(r, 4, page(0)), WALK);
	cr_expect_eq(cpu(r, 4)->counters.stlb_hits, 0);
	cr_expect_eq(cpu(r, 4)->counters.page_walks, 1);
	/* Both entries now live in the one STLB. */
	cr_expect_eq(tlb_occupancy(cpu(r, 0)->tlbs[T_STLB]), 2);
	cr_expect_eq(read_ok(r, 4, page(0)), L1_HIT);
	cr_expect_eq(read_ok(r, 0, page(0)), L1_HIT);
	rig_free(r);
}

Test(machine_smt, l1_is_private_in_both_modes)
{
	static const char *const modes[] = {"smt_invalidation=\"core\"",
					    "smt_invalidation=\"thread\""};

	for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
		struct rig *r = rig_smt(modes[i]);
		populate(r, page(0), true);
		read_ok(r, 0, page(0));
		cr_expect_eq(tlb_occupancy(cpu(r, 0)->tlbs[T_L1D]), 1, "%s", modes[i]);
		cr_expect_eq(tlb_occupancy(cpu(r, 4)->tlbs[T_L1D]), 0, "%s", modes[i]);
		/* Whatever the STLB does, cpu 4 never hits at level 1 first. */
		uint64_t cost = read_ok(r, 4, page(0));
		cr_expect_neq(cost, L1_HIT, "%s", modes[i]);
		rig_free(r);
	}
}

/* ---- cycles and counters ------------------------------------------------ */

Test(machine_translate, cycles_by_level)
{
	struct rig *r = rig_new(NULL);
	struct cpu *c0 = cpu(r, 0);
	for (unsigned p = 0; p < 12; p++)
		populate(r, page(p), true);

	/* Cycles accumulate into the caller's count. */
	uint64_t cycles = 1000;
	cr_assert_eq(machine_translate(r->m, c0, 0, r->small, page(0), false, 0,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	cr_expect_eq(cycles, 1000 + WALK);
	cr_assert_eq(machine_translate(r->m, c0, 0, r->small, page(0) + 5, false, 0,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	cr_expect_eq(cycles, 1000 + WALK + L1_HIT);

	/*
	 * Pages 4 and 8 share L1 set 0 (4 sets of 2 ways) with page 0 and evict
	 * it; the STLB (8 sets of 4) keeps all three.
	 */
	cr_expect_eq(read_ok(r, 0, page(4)), WALK);
	cr_expect_eq(read_ok(r, 0, page(8)), WALK);
	cr_expect_eq(read_ok(r, 0, page(0)), STLB_HIT);
	cr_expect_eq(read_ok(r, 0, page(0)), L1_HIT);

	const struct counters *k = &c0->counters;
	cr_expect_eq(k->tlb_lookups, 6);
	cr_expect_eq(k->tlb_hits, 3);
	cr_expect_eq(k->tlb_misses, 3);
	cr_expect_eq(k->stlb_hits, 1);
	cr_expect_eq(k->page_walks, 3);
	cr_expect_eq(k->page_faults, 0);
	cr_expect_eq(k->stale_hits, 0);
	expect_lookup_identity(c0);
	rig_free(r);
}

/* One translation at @now in @overlap mode; returns the cycles it cost. */
static uint64_t xlate_at(struct rig *r, unsigned id, uint64_t addr, uint64_t now,
			 enum translate_overlap overlap, enum translate_result want)
{
	uint64_t cycles = 0;
	cr_assert_eq(machine_translate(r->m, cpu(r, id), 0, vma_of(r, addr), addr, false, now,
				       overlap, &cycles),
		     want);
	return cycles;
}

Test(machine_translate, walks_queue_for_the_cores_walker)
{
	struct rig *r = rig_new(NULL);
	for (unsigned p = 0; p < 4; p++)
		populate(r, page(p), true);

	cr_expect_eq(xlate_at(r, 0, page(0), 1000, TRANSLATE_DEPENDENT, TRANSLATE_OK), WALK);
	/* The sibling's walk waits for the core's one walker (free at 1030). */
	cr_expect_eq(xlate_at(r, SIBLING(0), page(1), 1010, TRANSLATE_DEPENDENT, TRANSLATE_OK),
		     20 + WALK);
	cr_expect_eq(cpu(r, SIBLING(0))->counters.walk_wait_cycles, 20);
	cr_expect_eq(cpu(r, 0)->counters.walk_wait_cycles, 0);
	/* Another core has its own. */
	cr_expect_eq(xlate_at(r, 1, page(2), 1010, TRANSLATE_DEPENDENT, TRANSLATE_OK), WALK);
	/* A hit needs no walker. */
	cr_expect_eq(xlate_at(r, 0, page(0), 1011, TRANSLATE_DEPENDENT, TRANSLATE_OK), L1_HIT);
	rig_free(r);

	const char *two[] = {"page_walkers=2", NULL};
	r = rig_new(two);
	for (unsigned p = 0; p < 4; p++)
		populate(r, page(p), true);
	cr_expect_eq(xlate_at(r, 0, page(0), 1000, TRANSLATE_DEPENDENT, TRANSLATE_OK), WALK);
	cr_expect_eq(xlate_at(r, SIBLING(0), page(1), 1010, TRANSLATE_DEPENDENT, TRANSLATE_OK),
		     WALK, "a second walker takes the sibling's walk at once");
	/* Both busy: the third walk takes the one free first (at 1030). */
	cr_expect_eq(xlate_at(r, 0, page(2), 1020, TRANSLATE_DEPENDENT, TRANSLATE_OK), 10 + WALK);
	rig_free(r);
}

/*
 * Data caches: L1 of 16 lines (8 sets x 2), L2 of 64 (16 x 4), both per core,
 * memory 200 cycles, no load in page_walk (resident_cycles 0).  A PTE line
 * holds the 8 PTEs of pages 8k..8k+7; the PMD line holds the PDEs of 16 MiB;
 * the CPU caches 4 PDEs (pwc_entries).
 */
#define C_L1 4
#define C_L2 12
#define C_MEM 200
static const char *const with_caches[] = {
    "caches.levels=[{\"name\": \"l1d\", \"size_kib\": 1, \"ways\": 2, \"shared_by\": \"core\","
    " \"hit_cycles\": 4}, {\"name\": \"l2\", \"size_kib\": 4, \"ways\": 4,"
    " \"shared_by\": \"core\", \"hit_cycles\": 12}]",
    "caches.memory_cycles=200", NULL};

Test(machine_caches, a_walk_pays_for_the_lines_it_loads)
{
	struct rig *r = rig_new(with_caches);
	for (unsigned p = 0; p < 16; p++)
		populate(r, page(p), true);

	/* Cold: the PDE's line and the PTE's line both come from memory. */
	cr_expect_eq(read_ok(r, 0, page(0)), WALK + 2 * C_MEM);
	/* Same span (the PDE is cached) and same PTE line, now in L1. */
	cr_expect_eq(read_ok(r, 0, page(1)), WALK + C_L1);
	/* Same span, next PTE line: one load, from memory. */
	cr_expect_eq(read_ok(r, 0, page(8)), WALK + C_MEM);
	const struct cpu *c0 = cpu(r, 0);
	cr_expect_eq(c0->counters.page_walks, 3);
	cr_expect_eq(c0->counters.walk_loads, 4);
	cr_expect_eq(c0->counters.walk_load_cycles, 3 * C_MEM + C_L1);
	/* A hit loads nothing. */
	cr_expect_eq(read_ok(r, 0, page(1)), L1_HIT);
	cr_expect_eq(c0->counters.walk_loads, 4);

	/* The sibling shares the core's caches but not its PDE cache: both
	 * lines are in L1.  Another core has caches of its own. */
	cr_expect_eq(read_ok(r, SIBLING(0), page(2)), WALK + 2 * C_L1);
	cr_expect_eq(read_ok(r, 1, page(3)), WALK + 2 * C_MEM);
	rig_free(r);
}

/* The walk loads a first read of a fresh page of @span (of WIDE) makes: 1
 * when the PDE cache holds the span's PDE, else 2. */
static uint64_t pde_walk_loads(struct rig *r, uint16_t asid, unsigned span)
{
	static unsigned next_page[8];
	uint64_t addr = WIDE + span * M2 + next_page[span]++ * K4;
	populate(r, addr, true);
	uint64_t before = cpu(r, 0)->counters.walk_loads;
	xlate_cost(r, 0, asid, addr, false, TRANSLATE_OK);
	return cpu(r, 0)->counters.walk_loads - before;
}

/*
 * The PDE cache (4 entries: one set) is true LRU by span: spans 0-3 fill
 * it, a hit on 0 saves 1 from eviction, so 4 takes 1's place, and so on.
 * A flush of ASID 0 drops its entries and keeps ASID 1's, which still hits.
 */
Test(machine_caches, the_pde_cache_is_lru_and_flushed_by_asid)
{
	struct rig *r = rig_new(with_caches);
	static const struct {
		uint16_t asid;
		unsigned span, loads;
	} steps[] = {
	    {0, 0, 2}, {0, 1, 2}, {0, 2, 2}, {0, 3, 2}, /* 3 2 1 0 */
	    {0, 0, 1},				     /* 0 3 2 1 */
	    {0, 4, 2},				     /* 4 0 3 2 */
	    {0, 1, 2},				     /* 1 4 0 3 */
	    {0, 0, 1}, {0, 3, 1},		     /* 3 0 1 4 */
	    {0, 2, 2},				     /* 2 3 0 1 */
	    {0, 4, 2},				     /* 4 2 3 0 */
	    {1, 5, 2},				     /* 5' 4 2 3 */
	};
	for (unsigned i = 0; i < G_N_ELEMENTS(steps); i++)
		cr_expect_eq(pde_walk_loads(r, steps[i].asid, steps[i].span), steps[i].loads,
			     "step %u: span %u, ASID %u", i, steps[i].span, steps[i].asid);
	machine_flush_asid(r->m, cpu(r, 0), 0);
	cr_expect_eq(pde_walk_loads(r, 1, 5), 1, "ASID 1's entry survives");
	cr_expect_eq(pde_walk_loads(r, 0, 4), 2, "ASID 0's are gone");
	cr_expect_eq(pde_walk_loads(r, 0, 2), 2);
	cr_expect_eq(pde_walk_loads(r, 0, 4), 1);
	rig_free(r);
}

/* page_walk already holds a load at resident_cycles: only the latency
 * beyond it is added, and nothing for lines nearer in. */
Test(machine_caches, a_walk_adds_only_the_latency_beyond_resident)
{
	const char *sets[] = {with_caches[0], with_caches[1], "caches.resident_cycles=12", NULL};
	struct rig *r = rig_new(sets);
	for (unsigned p = 0; p < 16; p++)
		populate(r, page(p), true);
	cr_expect_eq(read_ok(r, 0, page(0)), WALK + 2 * (C_MEM - C_L2));
	cr_expect_eq(read_ok(r, 0, page(1)), WALK, "an L1 hit is no cheaper than resident");
	cr_expect_eq(cpu(r, 0)->counters.walk_load_cycles, 2 * (C_MEM - C_L2));
	cr_expect_eq(cpu(r, 0)->counters.walk_loads, 3);
	rig_free(r);
}

/* A line holds line_bytes / 8 entries: with 128-byte lines the PTEs of pages
 * 0-15 share one line, so page 8's walk finds it where 64-byte lines miss. */
Test(machine_caches, a_line_holds_line_bytes_over_8_entries)
{
	const char *sets[] = {"caches.levels=[{\"name\": \"l1d\", \"size_kib\": 2, \"ways\": 2,"
			      " \"shared_by\": \"core\", \"hit_cycles\": 4}]",
			      "caches.memory_cycles=200", "caches.line_bytes=128", NULL};
	struct rig *r = rig_new(sets);
	for (unsigned p = 0; p < 32; p++)
		populate(r, page(p), true);
	cr_expect_eq(read_ok(r, 0, page(0)), WALK + 2 * C_MEM);
	cr_expect_eq(read_ok(r, 0, page(15)), WALK + C_L1);
	cr_expect_eq(read_ok(r, 0, page(16)), WALK + C_MEM);
	rig_free(r);
}

Test(machine_caches, a_huge_page_walk_loads_its_pmd_line_only)
{
	struct rig *r = rig_new(with_caches);
	populate(r, HUGE, true);
	populate(r, HUGE + M2, true);
	cr_expect_eq(read_ok(r, 0, HUGE), WALK + C_MEM);
	/* The next 2 MiB page's PDE sits in the same line. */
	cr_expect_eq(read_ok(r, 0, HUGE + M2), WALK + C_L1);
	cr_expect_eq(cpu(r, 0)->counters.walk_loads, 2);
	rig_free(r);
}

/* A 2M page's walk reads its PDE, the same line a 4K walk in the same 16 MiB
 * reads for its PDE: one tag, so the second walk finds it in L1. */
Test(machine_caches, a_huge_page_shares_its_pde_line_with_4k_walks)
{
	struct rig *r = rig_new(with_caches);
	struct mm *mm = mm_new(2, NR_CPUS);
	mm_add_vma(mm, 0x400000, 16 * K4, PS_4K, false, 0, 0);
	mm_add_vma(mm, 0x600000, M2, PS_2M, false, 1, 0);
	mm_finish_layout(mm);
	mm_populate(mm, &mm->vmas[0], 0x400000, true);
	mm_populate(mm, &mm->vmas[1], 0x600000, true);
	uint64_t cycles = 0;
	cr_assert_eq(machine_translate(r->m, cpu(r, 0), 0, &mm->vmas[0], 0x400000, false, 1000,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	cr_expect_eq(cycles, WALK + 2 * C_MEM);
	cycles = 0;
	cr_assert_eq(machine_translate(r->m, cpu(r, 0), 0, &mm->vmas[1], 0x600000, false, 100000,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	cr_expect_eq(cycles, WALK + C_L1);
	mm_free(mm);
	rig_free(r);
}

Test(machine_caches, data_lines_evict_page_table_lines)
{
	struct rig *r = rig_new(with_caches);
	for (unsigned p = 0; p < 16; p++)
		populate(r, page(p), true);
	cr_expect_eq(read_ok(r, 0, page(0)), WALK + 2 * C_MEM);
	/* Re-reading one data line over and over keeps the PTE line... */
	for (unsigned i = 0; i < 1000; i++)
		machine_touch_data(r->m, cpu(r, 0), r->small, page(4));
	cr_expect_eq(read_ok(r, 0, page(1)), WALK + C_L1);
	/* ...1000 different ones push it out of both levels (the PDE stays
	 * in the PDE cache, which data never touches). */
	for (unsigned i = 0; i < 1000; i++)
		machine_touch_data(r->m, cpu(r, 0), r->small, SMALL + i * 64);
	cr_expect_eq(read_ok(r, 0, page(2)), WALK + C_MEM);
	/* The sibling's data is the core's: it evicts the same way. */
	cr_expect_eq(read_ok(r, 0, page(3)), WALK + C_L1);
	for (unsigned i = 0; i < 1000; i++)
		machine_touch_data(r->m, cpu(r, SIBLING(0)), r->small, SMALL + i * 64 + 32 * K4);
	cr_expect_eq(read_ok(r, 0, page(5)), WALK + C_MEM);
	rig_free(r);
}

Test(machine_caches, without_levels_a_walk_costs_page_walk_and_loads_nothing)
{
	struct rig *r = rig_new(NULL);
	populate(r, page(0), true);
	machine_touch_data(r->m, cpu(r, 0), r->small, page(0));
	cr_expect_eq(read_ok(r, 0, page(0)), WALK);
	cr_expect_eq(cpu(r, 0)->counters.walk_loads, 0);
	cr_expect_eq(cpu(r, 0)->counters.walk_load_cycles, 0);
	rig_free(r);
}

/* An independent access waits for the walker, which a walk holds for its
 * loads too. */
Test(machine_caches, the_walker_is_busy_for_the_loads)
{
	struct rig *r = rig_new(with_caches);
	for (unsigned p = 0; p < 16; p++)
		populate(r, page(p), true);
	cr_expect_eq(xlate_at(r, 0, page(0), 1000, TRANSLATE_INDEPENDENT, TRANSLATE_OK), 0);
	/* Free at 1000 + WALK + 400; the next walk issued at 1001 waits. */
	cr_expect_eq(xlate_at(r, 0, page(8), 1001, TRANSLATE_INDEPENDENT, TRANSLATE_OK),
		     WALK + 2 * C_MEM - 1);
	rig_free(r);
}

Test(machine_translate, independent_loads_overlap_hits_but_not_walks)
{
	struct rig *r = rig_new(NULL);
	for (unsigned p = 0; p < 4; p++)
		populate(r, page(p), true);

	/* A walk with a free walker does not stall an independent access... */
	cr_expect_eq(xlate_at(r, 0, page(0), 1000, TRANSLATE_INDEPENDENT, TRANSLATE_OK), 0);
	/* ...nor does a hit... */
	cr_expect_eq(xlate_at(r, 0, page(0), 1001, TRANSLATE_INDEPENDENT, TRANSLATE_OK), 0);
	/* ...but the next walk waits for the walker, so walks bound the rate. */
	cr_expect_eq(xlate_at(r, 0, page(1), 1002, TRANSLATE_INDEPENDENT, TRANSLATE_OK), 28);
	cr_expect_eq(cpu(r, 0)->counters.walk_wait_cycles, 28);
	cr_expect_eq(cpu(r, 0)->counters.page_walks, 2);
	/* A fault needs the walk's answer: waiting (until 1060) and the walk. */
	cr_expect_eq(xlate_at(r, 0, page(5), 1040, TRANSLATE_INDEPENDENT, TRANSLATE_FAULT),
		     20 + WALK);
	rig_free(r);
}

Test(machine_translate, huge_pages_use_their_structures)
{
	struct rig *r = rig_new(NULL);
	populate(r, HUGE + M2, true);

	cr_expect_eq(read_ok(r, 2, HUGE + M2 + 0x1234), WALK);
	cr_expect_eq(read_ok(r, 2, HUGE + M2 + 0x1ff000), L1_2M_HIT);
	cr_expect_eq(tlb_occupancy(cpu(r, 2)->tlbs[T_L1D_2M]), 1);
	cr_expect_eq(tlb_occupancy(cpu(r, 2)->tlbs[T_L1D]), 0);
	/* The sibling has no entry of its own in the shared STLB. */
	cr_expect_eq(read_ok(r, SIBLING(2), HUGE + M2), WALK);
	rig_free(r);
}

Test(machine_translate, asids_do_not_match)
{
	struct rig *r = rig_new(NULL);
	populate(r, page(0), true);

	cr_expect_eq(xlate_cost(r, 0, 1, page(0), false, TRANSLATE_OK), WALK);
	cr_expect_eq(xlate_cost(r, 0, 2, page(0), false, TRANSLATE_OK), WALK);
	cr_expect_eq(xlate_cost(r, 0, 1, page(0), false, TRANSLATE_OK), L1_HIT);
	cr_expect_eq(xlate_cost(r, 0, 2, page(0), false, TRANSLATE_OK), L1_HIT);
	rig_free(r);
}

/* ---- faults --------------------------------------------------------------- */

Test(machine_translate, not_present_faults_and_fills_nothing)
{
	struct rig *r = rig_new(NULL);
	struct cpu *c0 = cpu(r, 0);

	cr_expect_eq(xlate_cost(r, 0, 0, page(3), false, TRANSLATE_FAULT), WALK);
	cr_expect_eq(xlate_cost(r, 0, 0, page(3), true, TRANSLATE_FAULT), WALK);
	cr_expect_eq(machine_tlb_occupancy(r->m, c0), 0);
	cr_expect_eq(c0->counters.tlb_misses, 2);
	cr_expect_eq(c0->counters.page_walks, 2);
	expect_lookup_identity(c0);

	/* The fault handler populates and refills: the next access hits. */
	populate(r, page(3), true);
	machine_fill(c0, 0, r->small, page(3));
	cr_expect_eq(c0->counters.page_walks, 3);
	cr_expect_eq(c0->counters.tlb_lookups, 2, "a refill is not a lookup");
	cr_expect_eq(machine_tlb_occupancy(r->m, c0), 2);
	cr_expect_eq(read_ok(r, 0, page(3)), L1_HIT);
	rig_free(r);
}

Test(machine_translate, write_to_read_only_faults)
{
	struct rig *r = rig_new(NULL);
	populate(r, page(1), false);
	populate(r, page(2), true);

	/* On the walk. */
	cr_expect_eq(xlate_cost(r, 0, 0, page(1), true, TRANSLATE_FAULT), WALK);
	cr_expect_eq(machine_tlb_occupancy(r->m, cpu(r, 0)), 0);
	/* Reads are fine and fill. */
	cr_expect_eq(read_ok(r, 0, page(1)), WALK);
	/* On a hit of an entry from the current read-only PTE. */
	cr_expect_eq(xlate_cost(r, 0, 0, page(1), true, TRANSLATE_FAULT), L1_HIT);
	/* A writable page takes writes. */
	cr_expect_eq(xlate_cost(r, 0, 0, page(2), true, TRANSLATE_OK), WALK);
	cr_expect_eq(xlate_cost(r, 0, 0, page(2), true, TRANSLATE_OK), L1_HIT);
	expect_lookup_identity(cpu(r, 0));
	rig_free(r);
}

/*
 * The entry remembers the permission it was filled with: once the read-only
 * PTE has changed (zapped, not yet committed), a write through the old entry
 * still faults instead of slipping through.
 */
Test(machine_translate, write_through_read_only_entry_faults_after_pte_change)
{
	struct rig *r = rig_new(NULL);
	populate(r, page(1), false);
	read_ok(r, 0, page(1));
	cr_assert(mm_zap_pte(r->mm, r->small, page(1)));
	cr_expect_eq(xlate_cost(r, 0, 0, page(1), true, TRANSLATE_FAULT), L1_HIT);
	cr_expect_eq(cpu(r, 0)->counters.stale_hits, 0, "the write never used the entry");
	/* Reads through it are the race the kernel allows until the commit. */
	read_ok(r, 0, page(1));
	rig_free(r);
}

/* The dirty bit: a write through the walk or a hit of the PTE as it is sets
 * it, a read does not, and a write through an entry older than a zap (not
 * yet committed: legal) leaves the zapped PTE clean. */
Test(machine_translate, writes_set_the_dirty_bit)
{
	struct rig *r = rig_new(NULL);
	populate(r, page(1), true);
	populate(r, page(2), true);
	read_ok(r, 0, page(1));
	cr_expect_not(vma_pte(r->small, page(1))->dirty);
	xlate_cost(r, 0, 0, page(1), true, TRANSLATE_OK); /* hit */
	cr_expect(vma_pte(r->small, page(1))->dirty);
	xlate_cost(r, 1, 0, page(2), true, TRANSLATE_OK); /* walk */
	cr_expect(vma_pte(r->small, page(2))->dirty);
	populate(r, page(3), true);
	read_ok(r, 0, page(3));
	cr_assert(mm_zap_pte(r->mm, r->small, page(3)));
	xlate_cost(r, 0, 0, page(3), true, TRANSLATE_OK);
	cr_expect_not(vma_pte(r->small, page(3))->dirty);
	rig_free(r);
}

/* ---- stale hits ------------------------------------------------------------ */

Test(machine_stale, zap_then_commit_makes_hit_stale)
{
	struct rig *r = rig_new(NULL);
	struct cpu *c3 = cpu(r, 3);
	uint64_t addr = page(5) + 0x18;
	populate(r, page(5), true);
	uint32_t filled_gen = vma_pte(r->small, addr)->gen;

	read_ok(r, 3, addr);
	cr_assert(mm_zap_pte(r->mm, r->small, addr));

	/* Zapped but not committed: using the old entry is still legal. */
	uint64_t cycles = 0;
	cr_expect_eq(machine_translate(r->m, c3, 0, r->small, addr, false, 500,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK);
	cr_expect_eq(cycles, L1_HIT);
	cr_expect_eq(c3->counters.stale_hits, 0);
	cr_expect_eq(nr_stale(r->m), 0);

	mm_commit_pte(vma_pte(r->small, addr));
	cycles = 0;
	cr_expect_eq(machine_translate(r->m, c3, 0, r->small, addr, true, 777,
				       TRANSLATE_DEPENDENT, &cycles),
		     TRANSLATE_OK, "a stale hit still translates, as hardware would");
	cr_expect_eq(cycles, L1_HIT);
	cr_expect_eq(c3->counters.stale_hits, 1);
	cr_expect_eq(c3->counters.tlb_hits, 2);
	cr_assert_eq(nr_stale(r->m), 1);
	const struct stale_report *rep = &stale_buf[0];
	cr_expect_eq(rep->time, 777);
	cr_expect_eq(rep->cpu, 3);
	cr_expect_eq(rep->vaddr, addr);
	cr_expect_eq(rep->entry_gen, filled_gen);
	cr_expect_eq(rep->committed_gen, vma_pte(r->small, addr)->committed);
	cr_expect_gt(rep->committed_gen, rep->entry_gen);
	/* No other CPU saw anything. */
	for (unsigned c = 0; c < NR_CPUS; c++)
		if (c != 3)
			cr_expect_eq(cpu(r, c)->counters.stale_hits, 0, "cpu %u", c);
	rig_free(r);
}

/*
 * Frames: what a lazy flush mechanism risks.  Page 5's PTE is zapped and
 * committed while cpu 3's TLB keeps its entry (no invalidation).  (a) Before
 * the zapper frees the frame, a hit on the entry is stale but reaches the
 * page it always had: stale_hits only.  (b) Freed and handed out for page 8
 * (LIFO: the frame just freed), the same hit reaches page 8's data:
 * stale_reuse.  A hit on a frame freed but not yet handed out is no reuse.
 */
Test(machine_stale, hit_on_a_frame_handed_out_again_is_a_reuse)
{
	struct rig *r = rig_new(NULL);
	struct cpu *c3 = cpu(r, 3);
	r->mm->frames = r->m->frames;
	populate(r, page(5), true);
	uint32_t pfn = vma_pte(r->small, page(5))->pfn;
	cr_assert_neq(pfn, 0);
	read_ok(r, 3, page(5));

	uint32_t held;
	cr_assert(mm_zap_pte_frame(r->mm, r->small, page(5), &held));
	cr_assert_eq(held, pfn, "its only mapping went: the zapper holds it");
	cr_expect_eq(vma_pte(r->small, page(5))->pfn, pfn, "the PTE keeps its last frame");
	mm_commit_pte(vma_pte(r->small, page(5)));

	read_ok(r, 3, page(5)); /* (a) */
	cr_expect_eq(c3->counters.stale_hits, 1);
	cr_expect_eq(c3->counters.stale_reuse, 0);
	cr_assert_eq(nr_stale(r->m), 1);
	cr_expect_not(stale_buf[0].reused);

	frame_release(r->m->frames, PS_4K, pfn);
	read_ok(r, 3, page(5)); /* free, not yet anyone's */
	cr_expect_eq(c3->counters.stale_hits, 2);
	cr_expect_eq(c3->counters.stale_reuse, 0);

	populate(r, page(8), true);
	cr_assert_eq(vma_pte(r->small, page(8))->pfn, pfn, "LIFO: the frame just freed");
	read_ok(r, 3, page(5)); /* (b) */
	cr_expect_eq(c3->counters.stale_hits, 3);
	cr_expect_eq(c3->counters.stale_reuse, 1);
	cr_assert_eq(nr_stale(r->m), 3);
	cr_expect(stale_buf[2].reused);
	cr_expect_eq(stale_buf[2].vaddr, page(5));
	rig_free(r);
}

/* The frame a walk finds is the one the entry carries: a refill after the
 * frame went to page 8 and page 5 got a new one is current, not stale. */
Test(machine_stale, entries_carry_the_frame_of_their_fill)
{
	struct rig *r = rig_new(NULL);
	r->mm->frames = r->m->frames;
	populate(r, page(5), true);
	read_ok(r, 0, page(5));
	uint32_t held;
	cr_assert(mm_zap_pte_frame(r->mm, r->small, page(5), &held));
	frame_release(r->m->frames, PS_4K, held);
	populate(r, page(8), true);
	populate(r, page(5), true); /* a racing fault: a fresh frame */
	cr_assert_neq(vma_pte(r->small, page(5))->pfn, held);
	machine_invlpg(r->m, cpu(r, 0), 0, page(5));
	mm_commit_pte(vma_pte(r->small, page(5)));
	read_ok(r, 0, page(5)); /* walk: the new frame */
	read_ok(r, 0, page(5)); /* hit */
	cr_expect_eq(cpu(r, 0)->counters.stale_hits, 0);
	cr_expect_eq(cpu(r, 0)->counters.stale_reuse, 0);
	const struct tlb_entry *e = tlb_lookup(cpu(r, 0)->tlbs[0], page(5), 0, TLB_ANY_OWNER);
	cr_assert_not_null(e);
	cr_expect_eq(e->pfn, vma_pte(r->small, page(5))->pfn);
	rig_free(r);
}

Test(machine_stale, wrprotect_commit_makes_hit_stale)
{
	struct rig *r = rig_new(NULL);
	populate(r, page(6), true);
	read_ok(r, 0, page(6));
	cr_assert(mm_wrprotect_pte(r->mm, r->small, page(6)));
	/* A write through the old writable entry is not (yet) a bug ... */
	xlate_cost(r, 0, 0, page(6), true, TRANSLATE_OK);
	cr_expect_eq(cpu(r, 0)->counters.stale_hits, 0);
	/* ... after the commit it is. */
	mm_commit_pte(vma_pte(r->small, page(6)));
	xlate_cost(r, 0, 0, page(6), true, TRANSLATE_OK);
	cr_expect_eq(cpu(r, 0)->counters.stale_hits, 1);
	rig_free(r);
}

Test(machine_stale, stale_stlb_hit_on_sibling)
{
	struct rig *r = rig_smt("smt_invalidation=\"core\"");
	populate(r, page(7), true);
	populate(r, page(11), true);
	populate(r, page(15), true);
	read_ok(r, 4, page(7));
	/* Push page 7 out of cpu 4's L1 (set 3 of 4, 2 ways); the STLB keeps it. */
	read_ok(r, 4, page(11));
	read_ok(r, 4, page(15));
	read_ok(r, 0, page(7));
	cr_assert(mm_zap_pte(r->mm, r->small, page(7)));
	mm_commit_pte(vma_pte(r->small, page(7)));

	cr_expect_eq(read_ok(r, 4, page(7)), STLB_HIT);
	cr_expect_eq(cpu(r, 4)->counters.stale_hits, 1);
	cr_expect_eq(cpu(r, 4)->counters.stlb_hits, 1);
	cr_assert_eq(nr_stale(r->m), 1);
	cr_expect_eq(stale_buf[0].cpu, 4);
	rig_free(r);
}

/* An entry filled after the zap (a racing fault) is not stale after the commit. */
Test(machine_stale, refill_after_zap_is_not_stale)
{
	struct rig *r = rig_new(NULL);
	populate(r, page(9), true);
	read_ok(r, 0, page(9));
	cr_assert(mm_zap_pte(r->mm, r->small, page(9)));
	machine_invlpg(r->m, cpu(r, 0), 0, page(9));
	populate(r, page(9), true);
	cr_expect_eq(read_ok(r, 0, page(9)), WALK);
	mm_commit_pte(vma_pte(r->small, page(9)));
	cr_expect_eq(read_ok(r, 0, page(9)), L1_HIT);
	cr_expect_eq(cpu(r, 0)->counters.stale_hits, 0);
	rig_free(r);
}

Test(machine_stale, reports_are_capped_counts_are_not)
{
	struct rig *r = rig_new(NULL);
	unsigned n = MACHINE_STALE_REPORTS + 3;

	populate(r, page(10), true);
	read_ok(r, 1, page(10));
	read_ok(r, 2, page(10));
	cr_assert(mm_zap_pte(r->mm, r->small, page(10)));
	mm_commit_pte(vma_pte(r->small, page(10)));
	for (unsigned i = 0; i < n; i++) {
		uint64_t cycles = 0;
		machine_translate(r->m, cpu(r, 1), 0, r->small, page(10), false, 100 + i,
				  TRANSLATE_DEPENDENT, &cycles);
	}
	cr_expect_eq(cpu(r, 1)->counters.stale_hits, n);
	cr_assert_eq(nr_stale(r->m), MACHINE_STALE_REPORTS);
	/* The first ones are kept. */
	for (unsigned i = 0; i < MACHINE_STALE_REPORTS; i++)
		cr_expect_eq(stale_buf[i].time, 100 + i);
	/* The earliest, not the first recorded: CPUs that run ahead record
	 * theirs in no particular order across CPUs. */
	uint64_t cycles = 0;
	machine_translate(r->m, cpu(r, 2), 0, r->small, page(10), false, 50, TRANSLATE_DEPENDENT,
			  &cycles);
	cr_assert_eq(nr_stale(r->m), MACHINE_STALE_REPORTS);
	cr_expect_eq(stale_buf[0].time, 50);
	cr_expect_eq(stale_buf[0].cpu, 2);
	for (unsigned i = 1; i < MACHINE_STALE_REPORTS; i++)
		cr_expect_eq(stale_buf[i].time, 100 + i - 1);
	rig_free(r);
}

/* ---- invalidations ---------------------------------------------------------- */

Test(machine_flush, invlpg_removes_one_page_everywhere_on_the_cpu)
{
	struct rig *r = rig_new(NULL);
	struct cpu *c0 = cpu(r, 0);
	populate(r, page(0), true);
	populate(r, page(1), true);
	read_ok(r, 0, page(0));
	read_ok(r, 0, page(1));
	cr_expect_eq(machine_tlb_occupancy(r->m, c0), 4);

	machine_invlpg(r->m, c0, 0, page(0) + 0x123);
	cr_expect_eq(c0->counters.invlpg, 1);
	cr_expect_eq(c0->counters.tlb_entries_invalidated, 2, "L1 and STLB");
	cr_expect_eq(c0->counters.tlb_flush_all, 0);
	cr_expect_eq(machine_tlb_occupancy(r->m, c0), 2);
	cr_expect_eq(read_ok(r, 0, page(0)), WALK);
	cr_expect_eq(read_ok(r, 0, page(1)), L1_HIT);

	/* Nothing there: counted as executed, nothing removed. */
	machine_invlpg(r->m, c0, 0, page(40));
	cr_expect_eq(c0->counters.invlpg, 2);
	cr_expect_eq(c0->counters.tlb_entries_invalidated, 2);
	/* Another ASID's entry is not this one's. */
	machine_invlpg(r->m, c0, 9, page(1));
	cr_expect_eq(c0->counters.tlb_entries_invalidated, 2);
	cr_expect_eq(read_ok(r, 0, page(1)), L1_HIT);
	rig_free(r);
}

Test(machine_flush, flush_asid_keeps_other_asids)
{
	struct rig *r = rig_new(NULL);
	struct cpu *c2 = cpu(r, 2);
	populate(r, page(0), true);
	populate(r, page(1), true);
	xlate_cost(r, 2, 1, page(0), false, TRANSLATE_OK);
	xlate_cost(r, 2, 1, page(1), false, TRANSLATE_OK);
	xlate_cost(r, 2, 2, page(0), false, TRANSLATE_OK);
	cr_expect_eq(machine_tlb_occupancy(r->m, c2), 6);

	machine_flush_asid(r->m, c2, 1);
	cr_expect_eq(c2->counters.tlb_flush_all, 1);
	cr_expect_eq(c2->counters.invlpg, 0);
	cr_expect_eq(c2->counters.tlb_entries_invalidated, 4);
	cr_expect_eq(machine_tlb_occupancy(r->m, c2), 2);
	cr_expect_eq(xlate_cost(r, 2, 2, page(0), false, TRANSLATE_OK), L1_HIT);
	cr_expect_eq(xlate_cost(r, 2, 1, page(0), false, TRANSLATE_OK), WALK);
	rig_free(r);
}

Test(machine_flush, flush_all_removes_every_asid)
{
	struct rig *r = rig_new(NULL);
	struct cpu *c1 = cpu(r, 1);
	populate(r, page(0), true);
	populate(r, HUGE, true);
	xlate_cost(r, 1, 1, page(0), false, TRANSLATE_OK);
	xlate_cost(r, 1, 2, page(0), false, TRANSLATE_OK);
	xlate_cost(r, 1, 3, HUGE, false, TRANSLATE_OK);
	cr_expect_eq(machine_tlb_occupancy(r->m, c1), 6);

	machine_flush_all(r->m, c1);
	cr_expect_eq(c1->counters.tlb_flush_all, 1);
	cr_expect_eq(c1->counters.tlb_entries_invalidated, 6);
	cr_expect_eq(machine_tlb_occupancy(r->m, c1), 0);
	/* An empty flush still counts as executed. */
	machine_flush_all(r->m, c1);
	cr_expect_eq(c1->counters.tlb_flush_all, 2);
	cr_expect_eq(c1->counters.tlb_entries_invalidated, 6);
	rig_free(r);
}

/* Both siblings hold page 0: private L1 each, and the STLB. */
static struct rig *siblings_hold_page0(const char *mode)
{
	struct rig *r = rig_smt(mode);
	populate(r, page(0), true);
	populate(r, page(1), true);
	read_ok(r, 0, page(0));
	read_ok(r, 4, page(0));
	read_ok(r, 4, page(1));
	return r;
}

Test(machine_flush, core_mode_invlpg_reaches_sibling_l1)
{
	struct rig *r = siblings_hold_page0("smt_invalidation=\"core\"");
	struct cpu *c0 = cpu(r, 0), *c4 = cpu(r, 4);
	/* L1(0): p0; L1(4): p0, p1; STLB: p0/owner 0, p0/owner 4, p1/owner 4. */
	cr_assert_eq(machine_tlb_occupancy(r->m, c4), 5);

	machine_invlpg(r->m, c0, 0, page(0));
	cr_expect_eq(c0->counters.tlb_entries_invalidated, 4);
	cr_expect_eq(c4->counters.tlb_entries_invalidated, 0);
	cr_expect_eq(c4->counters.invlpg, 0);
	cr_expect_eq(tlb_occupancy(c4->tlbs[T_L1D]), 1);
	cr_expect_eq(read_ok(r, 4, page(0)), WALK);
	cr_expect_eq(read_ok(r, 4, page(1)), L1_HIT);

	/* flush_all from one sibling empties both siblings' structures. */
	machine_flush_all(r->m, c4);
	cr_expect_eq(machine_tlb_occupancy(r->m, c0), 0);
	cr_expect_eq(machine_tlb_occupancy(r->m, c4), 0);
	rig_free(r);
}

Test(machine_flush, thread_mode_invlpg_stays_on_its_thread)
{
	struct rig *r = siblings_hold_page0("smt_invalidation=\"thread\"");
	struct cpu *c0 = cpu(r, 0), *c4 = cpu(r, 4);
	/* L1(0): p0; L1(4): p0, p1; STLB: p0/owner 0, p0/owner 4, p1/owner 4. */
	cr_assert_eq(tlb_occupancy(c0->tlbs[T_STLB]), 3);

	machine_invlpg(r->m, c0, 0, page(0));
	cr_expect_eq(c0->counters.tlb_entries_invalidated, 2, "own L1 and own STLB entry");
	cr_expect_eq(tlb_occupancy(c0->tlbs[T_L1D]), 0);
	cr_expect_eq(tlb_occupancy(c4->tlbs[T_L1D]), 2);
	cr_expect_eq(tlb_occupancy(c0->tlbs[T_STLB]), 2);
	cr_expect_eq(read_ok(r, 4, page(0)), L1_HIT);

	/* cpu 0 cannot use cpu 4's STLB entry for the page: it walks. */
	cr_expect_eq(read_ok(r, 0, page(0)), WALK);
	cr_expect_eq(tlb_occupancy(c0->tlbs[T_STLB]), 3);

	/* cpu 4's INVLPG of page 1 removes only its own entries of it. */
	machine_invlpg(r->m, c4, 0, page(1));
	cr_expect_eq(c4->counters.tlb_entries_invalidated, 2);
	cr_expect_eq(tlb_occupancy(c0->tlbs[T_STLB]), 2);

	/* flush_all on cpu 4 leaves cpu 0's entries. */
	machine_flush_all(r->m, c4);
	cr_expect_eq(tlb_occupancy(c4->tlbs[T_L1D]), 0);
	cr_expect_eq(tlb_occupancy(c0->tlbs[T_L1D]), 1);
	cr_expect_eq(tlb_occupancy(c0->tlbs[T_STLB]), 1);
	cr_expect_eq(read_ok(r, 0, page(0)), L1_HIT);
	rig_free(r);
}

Test(machine_flush, thread_mode_sibling_stlb_entry_survives_invlpg)
{
	struct rig *r = siblings_hold_page0("smt_invalidation=\"thread\"");
	struct cpu *c0 = cpu(r, 0), *c4 = cpu(r, 4);

	machine_invlpg(r->m, c0, 0, page(0));
	/* Push page 0 out of cpu 4's L1 (set 0, 2 ways) with pages 4 and 8. */
	populate(r, page(4), true);
	populate(r, page(8), true);
	read_ok(r, 4, page(4));
	read_ok(r, 4, page(8));
	cr_expect_eq(read_ok(r, 4, page(0)), STLB_HIT);
	cr_expect_eq(c4->counters.stlb_hits, 1);
	cr_expect_eq(c0->counters.tlb_entries_invalidated, 2);
	rig_free(r);
}

Test(machine, occupancy_counts_shared_structures_whole)
{
	struct rig *r = rig_smt("smt_invalidation=\"core\"");
	populate(r, page(0), true);
	populate(r, page(1), true);
	populate(r, HUGE, true);

	read_ok(r, 0, page(0));
	read_ok(r, 0, HUGE);
	read_ok(r, 4, page(1));
	/* cpu 0: L1 1 + L1 2M 1 + STLB 3.  cpu 4: L1 1 + STLB 3.  cpu 1: nothing. */
	cr_expect_eq(machine_tlb_occupancy(r->m, cpu(r, 0)), 5);
	cr_expect_eq(machine_tlb_occupancy(r->m, cpu(r, 4)), 4);
	cr_expect_eq(machine_tlb_occupancy(r->m, cpu(r, 1)), 0);
	rig_free(r);
}

/* ---- lookahead and horizon ------------------------------------------------- */

/*
 * Each case makes a different term the minimum; SMT and self costs are the
 * smallest numbers of all and must be ignored (siblings are bounded by their
 * lanes in machine_horizon(), not by the lookahead).
 */
Test(machine_lookahead, min_of_ipi_and_line_transfer_beyond_the_core)
{
	static const struct {
		const char *sets[6];
		uint64_t want;
	} cases[] = {
	    /* ipi 200+1500, 200+2500; line 100, 300 */
	    {{"costs.ipi_latency.smt=1", "costs.line_transfer.smt=1", "costs.line_transfer.self=1",
	      NULL},
	     100},
	    {{"costs.ipi_latency.smt=1", "costs.line_transfer.smt=1", "costs.line_transfer.self=1",
	      "costs.line_transfer.socket=5000", "costs.line_transfer.remote=250", NULL},
	     250},
	    {{"costs.ipi_latency.smt=1", "costs.line_transfer.socket=5000",
	      "costs.line_transfer.remote=6000", "costs.ipi_latency.socket=700",
	      "costs.ipi_latency.remote=900", NULL},
	     900},
	    {{"costs.ipi_send=50", "costs.line_transfer.socket=5000",
	      "costs.line_transfer.remote=6000", "costs.ipi_latency.socket=3000",
	      "costs.ipi_latency.remote=100", NULL},
	     150},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct rig *r = rig_new(cases[i].sets);
		const struct topology_costs *c = &r->topo->costs;
		uint64_t want = UINT64_MAX;
		for (int d = DIST_SOCKET; d <= DIST_REMOTE; d++) {
			want = MIN(want, c->ipi_send + c->ipi_latency[d]);
			want = MIN(want, c->line_transfer[d]);
		}
		cr_expect_eq(want, cases[i].want, "case %zu: hand value", i);
		cr_expect_eq(r->m->lookahead, cases[i].want, "case %zu: lookahead %lu", i,
			     (unsigned long)r->m->lookahead);
		rig_free(r);
	}
}

Test(machine_lookahead, horizon_bounds)
{
	struct rig *r = rig_new(NULL); /* lookahead 100 (line_transfer.socket) */
	const struct machine *m = r->m;
	const struct cpu *c0 = cpu(r, 0), *c1 = cpu(r, 1);
	uint64_t la = m->lookahead;
	cr_assert_eq(la, 100);

	/* Nothing pending: no bound (and no overflow from adding the lookahead). */
	cr_expect_eq(machine_horizon(m, c0), UINT64_MAX);

	/* Untracked events bound nobody. */
	engine_schedule(r->engine, 10, ENGINE_LANE_NONE, no_event, NULL, 0);
	cr_expect_eq(machine_horizon(m, c0), UINT64_MAX);

	/* Sibling's lane: cpu 0 stops right at it; cpu 1 gets the lookahead. */
	engine_schedule(r->engine, 10000, fabric_cpu_lane(SIBLING(0)), no_event, NULL, 0);
	cr_expect_eq(machine_horizon(m, c0), 10000);
	cr_expect_eq(machine_horizon(m, c1), 10000 + la);

	/* Another core's lane: the tracked minimum plus the lookahead. */
	engine_schedule(r->engine, 9950, fabric_cpu_lane(2), no_event, NULL, 0);
	cr_expect_eq(machine_horizon(m, c0), 9950 + la > 10000 ? 10000 : 9950 + la);
	engine_schedule(r->engine, 9000, fabric_cpu_lane(2), no_event, NULL, 0);
	cr_expect_eq(machine_horizon(m, c0), 9000 + la);
	cr_expect_eq(machine_horizon(m, c1), 9000 + la);

	/* The global lane bounds everyone without slack. */
	engine_schedule(r->engine, 9050, LANE_GLOBAL, no_event, NULL, 0);
	cr_expect_eq(machine_horizon(m, c0), 9050);
	cr_expect_eq(machine_horizon(m, c1), 9050);
	cr_expect_eq(machine_horizon(m, cpu(r, 2)), 9000, "its own lane");

	/* Own lane. */
	engine_schedule(r->engine, 8000, fabric_cpu_lane(0), no_event, NULL, 0);
	cr_expect_eq(machine_horizon(m, c0), 8000);
	cr_expect_eq(machine_horizon(m, cpu(r, SIBLING(0))), 8000);
	cr_expect_eq(machine_horizon(m, c1), 8000 + la);
	rig_free(r);
}

Test(machine_lookahead, local_events_bound_their_core_and_registered_bounds)
{
	struct rig *r = rig_new(NULL);
	struct machine *m = r->m;
	const struct cpu *c0 = cpu(r, 0), *c1 = cpu(r, 1), *c2 = cpu(r, 2);

	/* A local event of cpu 2's lane bounds cpu 2 only. */
	engine_schedule_local(r->engine, 5000, fabric_cpu_lane(2), no_event, NULL, 0);
	cr_expect_eq(machine_horizon(m, c2), 5000);
	cr_expect_eq(machine_horizon(m, c0), UINT64_MAX);

	/* A bound on cpu 2's lane reaches everyone, with its extra. */
	unsigned a = machine_bound_add(m, fabric_cpu_lane(2), 300);
	cr_expect_eq(machine_horizon(m, c0), 5300);
	cr_expect_eq(machine_horizon(m, c1), 5300);
	unsigned b = machine_bound_add(m, fabric_cpu_lane(0), 7);
	cr_expect_neq(a, b);
	cr_expect_eq(machine_horizon(m, c1), 5300, "lane 0 is empty: no bound");
	machine_bound_set(m, a, fabric_cpu_lane(2), 40);
	cr_expect_eq(machine_horizon(m, c1), 5040);
	machine_bound_remove(m, a);
	cr_expect_eq(machine_horizon(m, c1), UINT64_MAX);
	cr_expect_eq(machine_bound_add(m, fabric_cpu_lane(2), 1), a, "slots are reused");
	cr_expect_eq(machine_horizon(m, c1), 5001);
	rig_free(r);
}

/* The horizon is min(global, core lanes, tracked next + lookahead), in every order. */
Test(machine_lookahead, horizon_is_the_minimum_of_its_terms)
{
	static const uint64_t global[] = {ENGINE_NEVER, 500, 5000};
	static const uint64_t sibling[] = {ENGINE_NEVER, 700, 4000};
	static const uint64_t other[] = {ENGINE_NEVER, 300, 650, 3000};

	for (size_t g = 0; g < G_N_ELEMENTS(global); g++) {
		for (size_t s = 0; s < G_N_ELEMENTS(sibling); s++) {
			for (size_t o = 0; o < G_N_ELEMENTS(other); o++) {
				struct rig *r = rig_new(NULL);
				uint64_t la = r->m->lookahead;
				if (global[g] != ENGINE_NEVER)
					engine_schedule(r->engine, global[g], LANE_GLOBAL, no_event,
							NULL, 0);
				if (sibling[s] != ENGINE_NEVER)
					engine_schedule(r->engine, sibling[s],
							fabric_cpu_lane(SIBLING(0)), no_event, NULL,
							0);
				if (other[o] != ENGINE_NEVER)
					engine_schedule(r->engine, other[o], fabric_cpu_lane(3),
							no_event, NULL, 0);
				uint64_t tracked = MIN(global[g], MIN(sibling[s], other[o]));
				uint64_t want = tracked == ENGINE_NEVER ? UINT64_MAX : tracked + la;
				want = MIN(want, MIN(global[g], sibling[s]));
				cr_expect_eq(machine_horizon(r->m, cpu(r, 0)), want,
					     "global %lu sibling %lu other %lu",
					     (unsigned long)global[g], (unsigned long)sibling[s],
					     (unsigned long)other[o]);
				rig_free(r);
			}
		}
	}
}

/*
 * Sampled mode's settled spans: what a CPU counts between a settled note and
 * the next unsettled one is summed, the open span's so far included; what it
 * counts while unsettled is not.
 */
Test(machine, sample_settled_spans_sum_what_settled_accesses_counted)
{
	struct cpu cpu;
	struct machine_settled_spans spans;
	struct counters counts;
	uint64_t busy;

	memset(&cpu, 0, sizeof(cpu));
	memset(&spans, 0, sizeof(spans));
	machine_sample_note(&cpu, true); /* not sampling: nothing kept */
	machine_sample_settled_totals(&cpu, &counts, &busy);
	cr_expect_eq(busy, 0);
	cpu.sample_spans = &spans;
	cpu.counters.accesses = 5;
	cpu.sample_access_cycles = 50;
	machine_sample_note(&cpu, true);
	cpu.counters.accesses = 9;
	cpu.sample_access_cycles = 90;
	machine_sample_settled_totals(&cpu, &counts, &busy);
	cr_expect_eq(counts.accesses, 4);
	cr_expect_eq(busy, 40);
	machine_sample_note(&cpu, true); /* still settled: the span goes on */
	machine_sample_note(&cpu, false);
	cpu.counters.accesses = 20; /* a refill, unsettled */
	cpu.sample_access_cycles = 200;
	machine_sample_settled_totals(&cpu, &counts, &busy);
	cr_expect_eq(counts.accesses, 4);
	cr_expect_eq(busy, 40);
	machine_sample_note(&cpu, true);
	cpu.counters.accesses = 21;
	cpu.sample_access_cycles = 210;
	machine_sample_settled_totals(&cpu, &counts, &busy);
	cr_expect_eq(counts.accesses, 5);
	cr_expect_eq(busy, 50);
}
