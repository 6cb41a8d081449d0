/*
 * CPUs and their TLB hierarchy; the address-translation path.
 *
 * Models: per logical CPU private structures and per-core shared ones
 * (topology "per_core"), probed level 1 then level 2 for the page size of the
 * VMA; a walk on a miss fills level 2 and level 1 (mostly-inclusive, as Intel
 * STLBs behave for data); SMT invalidation scope per topology.
 * Lookups match only the entries the CPU itself filled (SDM Vol.3A 8.7.13.2:
 * shared DTLB entries carry the creating logical processor), so siblings
 * share capacity, never translations; invalidation scope follows the
 * topology's smt_invalidation.  A paging-structure cache per CPU remembers
 * the PTE pages of recently walked 2 MiB spans, for the freed-table checker.
 * A walk that fills a TLB sets the PTE's Accessed bit and accessor
 * (pte_mark_accessed(), mm.h), as x86 hardware sets A; hits touch neither.
 * Every walk (a fault's too) also records its socket as holding a replica of
 * the span's PTE page (numaPTE, mm_pmd_replicate()), paying replica_cycles
 * when that copies the table to a new node.
 * A walk costs the topology's page_walk plus what its page-table loads add
 * beyond resident_cycles at the data cache level that holds each line (none
 * without cache levels); the data lines of accesses go through the same
 * caches.
 * Simplifies: data accesses only (no ITLB); caches hold tags only, with no
 * coherence between cores.
 * Invariant: lookups == hits + misses for every CPU.
 */
#include <assert.h>
#include <string.h>
#include <glib.h>
#include "tlbsim/machine/machine.h"

static void machine_build_probe_order(struct machine *machine)
{
	const struct topology *topo = machine->topology;
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++) {
		for (unsigned level = 1; level <= 2; level++) {
			for (unsigned i = 0; i < topo->nr_tlbs; i++) {
				const struct topology_tlb *t = &topo->tlbs[i];
				if (t->level != level || !(t->geometry.page_sizes & (1u << ps)))
					continue;
				unsigned n = machine->nr_probe[ps]++;
				machine->probe[ps][n] = i;
				machine->probe_level[ps][n] = level;
			}
		}
	}
}

static void machine_build_cpu_probe(const struct machine *machine, struct cpu *cpu)
{
	cpu->probe = g_malloc0(sizeof(*cpu->probe) * NR_PAGE_SIZES);
	for (int ps = 0; ps < NR_PAGE_SIZES; ps++) {
		cpu->nr_probe[ps] = machine->nr_probe[ps];
		for (unsigned p = 0; p < machine->nr_probe[ps]; p++) {
			unsigned index = machine->probe[ps][p];
			cpu->probe[ps][p] = (struct cpu_probe){
			    .tlb = cpu->tlbs[index],
			    .hit_cycles = machine->topology->tlbs[index].hit_cycles,
			    .stlb = machine->probe_level[ps][p] > 1,
			};
		}
	}
}

/* The smallest delay of any cross-core effect (see machine.h). */
static uint64_t machine_compute_lookahead(const struct topology *topo)
{
	const struct topology_costs *c = &topo->costs;
	uint64_t lookahead = UINT64_MAX;
	for (int d = DIST_SOCKET; d <= DIST_REMOTE; d++) {
		uint64_t ipi = c->ipi_send + c->ipi_latency[d];
		lookahead = MIN(lookahead, MIN(ipi, c->line_transfer[d]));
	}
	return lookahead;
}

unsigned machine_run_group(const struct machine *machine, const struct cpu *cpu)
{
	return machine->replica_cycles ? 0 : cpu->core_id;
}

unsigned machine_nr_run_groups(const struct machine *machine)
{
	const struct topology *t = machine->topology;
	return machine->replica_cycles ? 1 : t->sockets * t->cores_per_socket;
}

uint64_t machine_horizon(const struct machine *machine, const struct cpu *cpu)
{
	const struct engine *engine = machine->engine;
	/* Quiet resumes are untracked: by their promise they reach no other
	 * core before some tracked event does (sched.h). */
	uint64_t next = engine_tracked_next_time(engine);
	uint64_t horizon = next > UINT64_MAX - machine->lookahead ? UINT64_MAX
								   : next + machine->lookahead;
	horizon = MIN(horizon, engine_lane_next_time(engine, LANE_GLOBAL));
	for (unsigned i = 0; i < cpu->nr_core_cpus; i++)
		horizon = MIN(horizon, engine_lane_next_time(engine, fabric_cpu_lane(cpu->core_cpus[i])));
	for (unsigned i = 0; i < machine->nr_bounds; i++) {
		const struct machine_bound *b = &machine->bounds[i];
		if (!b->used)
			continue;
		uint64_t at = engine_lane_next_time(engine, b->lane);
		horizon = MIN(horizon, at > UINT64_MAX - b->extra ? UINT64_MAX : at + b->extra);
	}
	return horizon;
}

unsigned machine_bound_add(struct machine *machine, unsigned lane, uint64_t extra)
{
	unsigned id = 0;
	while (id < machine->nr_bounds && machine->bounds[id].used)
		id++;
	if (id == machine->nr_bounds) {
		if (machine->nr_bounds == machine->cap_bounds) {
			machine->cap_bounds = machine->cap_bounds ? 2 * machine->cap_bounds : 8;
			machine->bounds =
			    g_renew(struct machine_bound, machine->bounds, machine->cap_bounds);
		}
		machine->nr_bounds++;
	}
	machine->bounds[id] = (struct machine_bound){.lane = lane, .extra = extra, .used = true};
	return id;
}

void machine_bound_set(struct machine *machine, unsigned id, unsigned lane, uint64_t extra)
{
	g_assert(id < machine->nr_bounds && machine->bounds[id].used);
	machine->bounds[id].lane = lane;
	machine->bounds[id].extra = extra;
}

void machine_bound_remove(struct machine *machine, unsigned id)
{
	g_assert(id < machine->nr_bounds && machine->bounds[id].used);
	machine->bounds[id].used = false;
	while (machine->nr_bounds > 0 && !machine->bounds[machine->nr_bounds - 1].used)
		machine->nr_bounds--;
}

void machine_cpu_taint(struct machine *machine, struct cpu *cpu)
{
	if (cpu->tainted)
		return;
	cpu->tainted = true;
	cpu->taint_bound = machine_bound_add(machine, fabric_cpu_lane(cpu->id), machine->lookahead);
}

void machine_cpu_untaint(struct machine *machine, struct cpu *cpu)
{
	if (!cpu->tainted)
		return;
	cpu->tainted = false;
	machine_bound_remove(machine, cpu->taint_bound);
}

static void machine_add_scope(struct cpu *cpu, struct tlb *tlb)
{
	for (unsigned i = 0; i < cpu->nr_flush_scope; i++)
		if (cpu->flush_scope[i] == tlb)
			return;
	cpu->flush_scope[cpu->nr_flush_scope++] = tlb;
}

/*
 * With core-wide invalidation an INVLPG on one sibling also clears the other
 * siblings' private structures (the 2016 patch's premise); with thread-scoped
 * invalidation only this CPU's structures, filtered by owner in shared ones.
 */
static void machine_build_flush_scope(struct machine *machine, struct cpu *cpu)
{
	const struct topology *topo = machine->topology;
	bool core_wide = topo->smt_invalidation == SMT_INVALIDATE_CORE;
	cpu->flush_scope = g_new0(struct tlb *, (size_t)topo->nr_tlbs * topo->threads_per_core);
	for (unsigned i = 0; i < topo->nr_tlbs; i++)
		machine_add_scope(cpu, cpu->tlbs[i]);
	if (!core_wide)
		return;
	for (unsigned c = 0; c < machine->nr_cpus; c++) {
		struct cpu *other = &machine->cpus[c];
		if (other == cpu || other->core_id != cpu->core_id)
			continue;
		for (unsigned i = 0; i < topo->nr_tlbs; i++)
			machine_add_scope(cpu, other->tlbs[i]);
	}
}

/* Every level is one structure per core (a socket's level: the core's share). */
static void machine_build_caches(struct machine *machine, unsigned nr_cores)
{
	const struct topology *topology = machine->topology;
	g_assert(topology->nr_caches <= MACHINE_MAX_CACHES);
	machine->line_shift = (unsigned)g_bit_nth_lsf(topology->cache_line_bytes, -1);
	machine->all_caches = g_new0(struct cache *, (size_t)nr_cores * topology->nr_caches);
	for (unsigned core = 0; core < nr_cores; core++) {
		struct cache *levels[MACHINE_MAX_CACHES];
		for (unsigned l = 0; l < topology->nr_caches; l++) {
			levels[l] = cache_new(&topology->caches[l].geometry);
			g_assert(levels[l]); /* the topology was validated */
			machine->all_caches[machine->nr_all_caches++] = levels[l];
		}
		for (unsigned c = 0; c < machine->nr_cpus; c++)
			if (machine->cpus[c].core_id == core)
				memcpy(machine->cpus[c].caches, levels,
				       topology->nr_caches * sizeof(levels[0]));
	}
}

struct machine *machine_new(const struct topology *topology, struct engine *engine,
			    fabric_deliver_fn deliver, void *deliver_ctx)
{
	g_assert(topology->nr_tlbs <= MACHINE_MAX_TLBS);
	struct machine *machine = g_new0(struct machine, 1);
	machine->topology = topology;
	machine->engine = engine;
	machine->fabric = fabric_new(engine, topology, deliver, deliver_ctx);
	machine->nr_cpus = topology_nr_cpus(topology);
	machine->lookahead = machine_compute_lookahead(topology);
	machine->per_destination = true;
	machine->frames = frame_table_new();
	machine->cpus = g_aligned_alloc0(machine->nr_cpus, sizeof(struct cpu), HOST_LINE);
	machine->all_tlbs = g_new0(struct tlb *, (size_t)machine->nr_cpus * topology->nr_tlbs);
	machine_build_probe_order(machine);

	unsigned nr_cores = topology->sockets * topology->cores_per_socket;
	struct tlb **core_tlbs = g_new0(struct tlb *, (size_t)nr_cores * topology->nr_tlbs);
	bool core_wide = topology->smt_invalidation == SMT_INVALIDATE_CORE;
	for (unsigned c = 0; c < machine->nr_cpus; c++) {
		struct cpu *cpu = &machine->cpus[c];
		cpu->id = c;
		cpu->socket = topology_cpu_socket(topology, c);
		cpu->core = topology_cpu_core(topology, c);
		cpu->thread = topology_cpu_thread(topology, c);
		cpu->core_id = topology_cpu_core_id(topology, c);
		cpu->tlb_owner = (uint16_t)c;
		cpu->owner_filter = core_wide ? TLB_ANY_OWNER : (int)c;
		cpu->nr_pwc = topology->pwc_entries;
		cpu->pwc = g_aligned_alloc0(
		    1, host_line_round(MAX(1u, cpu->nr_pwc) * sizeof(*cpu->pwc)), HOST_LINE);
		for (unsigned i = 0; i < topology->nr_tlbs; i++) {
			const struct topology_tlb *t = &topology->tlbs[i];
			struct tlb **shared = &core_tlbs[cpu->core_id * topology->nr_tlbs + i];
			if (t->per_core && *shared) {
				cpu->tlbs[i] = *shared;
				continue;
			}
			cpu->tlbs[i] = tlb_new(&t->geometry);
			g_assert(cpu->tlbs[i]); /* the topology was validated */
			machine->all_tlbs[machine->nr_all_tlbs++] = cpu->tlbs[i];
			if (t->per_core)
				*shared = cpu->tlbs[i];
		}
	}
	g_free(core_tlbs);
	for (unsigned c = 0; c < machine->nr_cpus; c++)
		machine_build_cpu_probe(machine, &machine->cpus[c]);
	machine_build_caches(machine, nr_cores);
	/* A line per core: written at every walk. */
	size_t walker_stride = host_line_round(topology->page_walkers * sizeof(uint64_t)) /
			       sizeof(uint64_t);
	machine->walker_free =
	    g_aligned_alloc0((size_t)nr_cores * walker_stride, sizeof(uint64_t), HOST_LINE);
	for (unsigned c = 0; c < machine->nr_cpus; c++) {
		struct cpu *cpu = &machine->cpus[c];
		size_t first_walker = (size_t)cpu->core_id * walker_stride;
		cpu->walker_free = &machine->walker_free[first_walker];
		machine_build_flush_scope(machine, cpu);
		cpu->core_cpus = g_new(unsigned, topology->threads_per_core);
		for (unsigned o = 0; o < machine->nr_cpus; o++)
			if (machine->cpus[o].core_id == cpu->core_id)
				cpu->core_cpus[cpu->nr_core_cpus++] = o;
	}
	return machine;
}

void machine_free(struct machine *machine)
{
	if (!machine)
		return;
	for (unsigned i = 0; i < machine->nr_all_tlbs; i++)
		tlb_free(machine->all_tlbs[i]);
	for (unsigned i = 0; i < machine->nr_all_caches; i++)
		cache_free(machine->all_caches[i]);
	g_free(machine->all_caches);
	for (unsigned c = 0; c < machine->nr_cpus; c++) {
		g_free(machine->cpus[c].flush_scope);
		g_free(machine->cpus[c].probe);
		g_aligned_free(machine->cpus[c].pwc);
		g_free(machine->cpus[c].core_cpus);
		g_free(machine->cpus[c].stale);
	}
	g_free(machine->all_tlbs);
	g_free(machine->settled_spans);
	g_free(machine->bounds);
	g_aligned_free(machine->walker_free);
	g_aligned_free(machine->cpus);
	fabric_free(machine->fabric);
	frame_table_free(machine->frames);
	g_free(machine);
}

static int stale_report_cmp(const void *a, const void *b)
{
	const struct stale_report *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return (int)x->freed_table - (int)y->freed_table;
}

/* Keep @report if it is among @cpu's MACHINE_STALE_REPORTS earliest. */
static void machine_keep_stale(struct cpu *cpu, const struct stale_report *report)
{
	if (!cpu->stale)
		cpu->stale = g_new(struct stale_report, MACHINE_STALE_REPORTS);
	unsigned i = cpu->nr_stale;
	if (i == MACHINE_STALE_REPORTS) {
		if (stale_report_cmp(report, &cpu->stale[i - 1]) >= 0)
			return;
		i--;
	} else {
		cpu->nr_stale++;
	}
	for (; i > 0 && stale_report_cmp(report, &cpu->stale[i - 1]) < 0; i--)
		cpu->stale[i] = cpu->stale[i - 1];
	cpu->stale[i] = *report;
}

unsigned machine_stale_reports(const struct machine *machine,
			       struct stale_report out[MACHINE_STALE_REPORTS])
{
	GArray *all = g_array_new(FALSE, FALSE, sizeof(struct stale_report));
	for (unsigned c = 0; c < machine->nr_cpus; c++)
		g_array_append_vals(all, machine->cpus[c].stale, machine->cpus[c].nr_stale);
	g_array_sort(all, stale_report_cmp);
	unsigned n = MIN(all->len, MACHINE_STALE_REPORTS);
	for (unsigned i = 0; i < n; i++)
		out[i] = g_array_index(all, struct stale_report, i);
	g_array_free(all, TRUE);
	return n;
}

/*
 * A hit on an entry of @vma filled from generation @entry_gen, older than
 * the PTE's committed change.  Off the hot path: the frame lookup is paid
 * only here.  A frame handed out again since (to another mm, or to this one
 * for a later mapping) is a use-after-free, counted apart as stale_reuse; a
 * frame still held by its zapper, or still mapped by this mapping's other
 * sharers, is not.
 */
__attribute__((noinline, cold)) static void
machine_record_stale(struct cpu *cpu, const struct vma *vma, uint64_t vaddr, uint32_t entry_gen,
		     uint32_t pfn, const struct pte *pte, uint64_t now)
{
	bool reused = frame_reused_since(vma->mm->frames, vma->page_size, pfn, vma->mm->id,
					 entry_gen);
	cpu->counters.stale_hits++;
	cpu->counters.stale_reuse += reused;
	machine_keep_stale(cpu, &(struct stale_report){
				    .time = now,
				    .cpu = cpu->id,
				    .vaddr = vaddr,
				    .entry_gen = entry_gen,
				    .committed_gen = pte->committed,
				    .reused = reused,
				});
}

/*
 * A PDE-cache entry as one word: valid (so never 0), the ASID, the mm (its
 * id + 1, 0 for none: ids are unique while a run lasts; the mm is the
 * checker's bookkeeping, not a hardware tag) and the span, vaddr >> 21
 * (user addresses stay below 2^52, as the data caches' line tags assume).
 */
#define PWC_VALID (UINT64_C(1) << 63)
#define PWC_ASID_SHIFT 47
#define PWC_MM_SHIFT 31
static inline uint64_t pwc_key(const struct mm *mm, uint16_t asid, uint64_t span)
{
	g_assert(span < (UINT64_C(1) << PWC_MM_SHIFT));
	uint64_t mm_bits = mm ? (uint64_t)mm->id + 1 : 0;
	return PWC_VALID | (uint64_t)asid << PWC_ASID_SHIFT | mm_bits << PWC_MM_SHIFT | span;
}

static inline uint16_t pwc_key_asid(uint64_t key)
{
	return (uint16_t)(key >> PWC_ASID_SHIFT);
}

/*
 * The walk went through the span's PDE: cache it, and say whether it was
 * cached already (the walk then skipped the PMD load).  4-way set-associative
 * by span with true LRU inside the set, each set kept as a data-cache set is
 * (cache_set_access(): no branch on where the entry was).  A count that is
 * not a multiple of 4 leaves its last entries unused.
 */
#define PWC_WAYS 4u
static bool machine_pwc_fill(struct cpu *cpu, const struct vma *vma, uint16_t asid,
			     uint64_t vaddr)
{
	if (cpu->nr_pwc == 0 || vma->page_size != PS_4K)
		return false; /* a huge mapping has no PTE page to cache */
	uint64_t span = vaddr >> 21;
	unsigned ways = MIN(PWC_WAYS, cpu->nr_pwc), sets = cpu->nr_pwc / ways;
	/* The usual sizes give a power-of-two set count: no division then. */
	uint64_t index = (sets & (sets - 1)) == 0 ? span & (sets - 1) : span % sets;
	return cache_set_access(&cpu->pwc[index * ways], ways, pwc_key(vma->mm, asid, span));
}

/* Drop the entries of @asid (any ASID if @all) from @cpu's PDE cache; the
 * others keep their order, moved up over the gaps. */
static void pwc_drop(struct cpu *cpu, uint16_t asid, bool all)
{
	unsigned ways = MIN(PWC_WAYS, cpu->nr_pwc);
	/* A broadcast reaches every CPU, most PDE caches nearly empty: an
	 * empty set (its first way empty) costs one load. */
	for (unsigned base = 0; ways && base + ways <= cpu->nr_pwc; base += ways) {
		uint64_t *set = &cpu->pwc[base];
		unsigned kept = 0, w = 0;
		for (; w < ways && set[w]; w++)
			if (!all && pwc_key_asid(set[w]) != asid)
				set[kept++] = set[w];
		while (kept < w)
			set[kept++] = 0;
	}
}

/* Drop @cpu's paging-structure cache entries of @asid (any ASID if @all). */
static void machine_pwc_flush(struct machine *machine, struct cpu *cpu, uint16_t asid, bool all)
{
	bool core_wide = cpu->owner_filter == TLB_ANY_OWNER;
	for (unsigned n = 0; n < cpu->nr_core_cpus; n++) {
		struct cpu *c = &machine->cpus[cpu->core_cpus[n]];
		if (c == cpu || core_wide)
			pwc_drop(c, asid, all);
	}
}

/*
 * Cache line tags (cache.c): what the line holds, whose mm, and its number.
 * A data line is numbered by its virtual address in the mm, a page-table
 * line by the span of addresses its entries map, so two mms never share a
 * line (tlbsim has no shared physical pages to alias) and an mm's PTE lines
 * are as many as its page tables have.  An mm id has 15 bits (MM_MAX_ID).
 */
enum line_kind { LINE_DATA = 1, LINE_PTE, LINE_PMD, LINE_PUD };
#define LINE_NUMBER_BITS 46
#define LINE_MM_BITS 15
_Static_assert(MM_MAX_ID < (1u << LINE_MM_BITS), "mm ids fit the line tags");

static inline uint64_t line_tag(enum line_kind kind, const struct mm *mm, uint64_t number)
{
	uint64_t mm_bits = (uint64_t)mm->id & ((UINT64_C(1) << LINE_MM_BITS) - 1);
	return (uint64_t)kind << (LINE_NUMBER_BITS + LINE_MM_BITS) | mm_bits << LINE_NUMBER_BITS |
	       (number & ((UINT64_C(1) << LINE_NUMBER_BITS) - 1));
}

/* One load through @cpu's caches: the latency of the level that has the line
 * (which every nearer level then holds too), or memory's. */
static uint64_t machine_cache_load(const struct machine *machine, struct cpu *cpu, uint64_t tag)
{
	const struct topology *topo = machine->topology;
	for (unsigned l = 0; l < topo->nr_caches; l++)
		if (cache_access(cpu->caches[l], tag))
			return topo->caches[l].hit_cycles;
	return topo->memory_cycles;
}

void machine_touch_data(struct machine *machine, struct cpu *cpu, const struct vma *vma,
			uint64_t vaddr)
{
	if (machine->topology->nr_caches > 0)
		machine_cache_load(machine, cpu, line_tag(LINE_DATA, vma->mm,
							  vaddr >> machine->line_shift));
}

/* One of a walk's loads: the cycles it adds to page_walk, which already
 * holds a load at resident_cycles. */
static uint64_t machine_walk_load(const struct machine *machine, struct cpu *cpu,
				  enum line_kind kind, const struct vma *vma, uint64_t number)
{
	uint64_t latency = machine_cache_load(machine, cpu, line_tag(kind, vma->mm, number));
	uint64_t resident = machine->topology->resident_cycles;
	uint64_t cycles = latency > resident ? latency - resident : 0;
	cpu->counters.walk_loads++;
	cpu->counters.walk_load_cycles += cycles;
	return cycles;
}

/*
 * What a walk's loads add, one after the other (each needs the entry the
 * previous one read): the leaf entry's line, and for a 4K page the PDE's
 * unless the paging-structure cache had it (@pde_cached).  The levels above
 * are taken to come from the paging-structure caches (a process's few PML4
 * and PDPT entries).  A line holds line_bytes / 8 entries.
 */
static uint64_t machine_walk_loads(const struct machine *machine, struct cpu *cpu,
				   const struct vma *vma, uint64_t vaddr, bool pde_cached)
{
	if (machine->topology->nr_caches == 0)
		return 0;
	unsigned per_line = machine->line_shift - 3; /* log2 of entries per line */
	switch (vma->page_size) {
	case PS_4K: {
		uint64_t cycles = pde_cached ? 0
					     : machine_walk_load(machine, cpu, LINE_PMD, vma,
								 vaddr >> (21 + per_line));
		return cycles +
		       machine_walk_load(machine, cpu, LINE_PTE, vma, vaddr >> (12 + per_line));
	}
	case PS_2M:
		return machine_walk_load(machine, cpu, LINE_PMD, vma, vaddr >> (21 + per_line));
	case PS_1G:
		return machine_walk_load(machine, cpu, LINE_PUD, vma, vaddr >> (30 + per_line));
	case NR_PAGE_SIZES:
		break;
	}
	g_assert_not_reached();
}

/*
 * The core's first free walker takes a walk of @walk cycles issued at @now:
 * when it starts (later than @now if every walker is busy with the siblings'
 * or this CPU's earlier walks) and, through *@end, when it finishes.
 */
static uint64_t machine_walk_start(const struct machine *machine, struct cpu *cpu, uint64_t now,
				   uint64_t walk, uint64_t *end)
{
	uint64_t *free_at = cpu->walker_free, *first = &free_at[0];
	for (unsigned w = 1; w < machine->topology->page_walkers; w++)
		if (free_at[w] < *first)
			first = &free_at[w];
	uint64_t start = MAX(now, *first);
	*end = *first = start + walk;
	cpu->counters.walk_wait_cycles += start - now;
	return start;
}

/* Fill the structures of @probe that missed, the first @nr of @list. */
static inline void machine_fill_probed(struct cpu *cpu, const struct cpu_probe *list,
				const struct tlb_probe *probe, unsigned nr, uint16_t asid,
				uint32_t gen, uint32_t pfn, bool writable)
{
	for (unsigned p = 0; p < nr; p++)
		tlb_fill_probed(list[p].tlb, &probe[p], asid, cpu->tlb_owner, gen, pfn, writable);
}

enum translate_result machine_translate(struct machine *machine, struct cpu *cpu, uint16_t asid,
					struct vma *vma, uint64_t vaddr, bool write, uint64_t now,
					enum translate_overlap overlap, uint64_t *cycles)
{
	enum page_size ps = vma->page_size;
	struct pte *pte = vma_pte(vma, vaddr);
	const struct topology *topo = machine->topology;
	const struct cpu_probe *list = cpu->probe[ps];
	unsigned nr = cpu->nr_probe[ps];
	struct tlb_probe probe[MACHINE_MAX_TLBS];

	cpu->counters.tlb_lookups++;
	for (unsigned p = 0; p < nr; p++) {
		if (!tlb_probe(list[p].tlb, vaddr, ps, asid, cpu->tlb_owner, &probe[p]))
			continue;
		uint32_t gen = probe[p].gen;
		bool writable = probe[p].writable;
		cpu->counters.tlb_hits++;
		cpu->counters.stlb_hits += list[p].stlb;
		if (overlap == TRANSLATE_DEPENDENT)
			*cycles += list[p].hit_cycles;
		/* A write through a read-only entry faults before it uses the
		 * translation, stale or not. */
		if (write && !writable)
			return TRANSLATE_FAULT;
		if (gen < pte->committed) {
			machine_record_stale(cpu, vma, vaddr, gen, probe[p].pfn, pte, now);
			return TRANSLATE_OK;
		}
		machine_fill_probed(cpu, list, probe, p, asid, gen, probe[p].pfn, writable);
		/* An entry older than the PTE's last invalidating change maps
		 * the page it had: the write dirties that, not this PTE. */
		if (write && gen >= pte->pending)
			pte_mark_dirty(pte);
		return TRANSLATE_OK;
	}
	cpu->counters.tlb_misses++;
	cpu->counters.page_walks++;
	bool pde_cached = machine_pwc_fill(cpu, vma, asid, vaddr);
	uint64_t walk = topo->costs.page_walk +
			machine_walk_loads(machine, cpu, vma, vaddr, pde_cached);
	uint64_t walk_end, walk_start = machine_walk_start(machine, cpu, now, walk, &walk_end);
	/* numaPTE: the walk used its node's replica of the PTE page, copied
	 * now if the node had none (the miss path only: hits pay nothing). */
	if (vma->mm && mm_pmd_replicate(vma->mm, vaddr, cpu->socket))
		*cycles += machine->replica_cycles;
	if (!pte->present || (write && !pte->writable)) {
		/* The fault needs the walk's answer, overlap or not. */
		*cycles += walk_end - now;
		return TRANSLATE_FAULT;
	}
	/* Independent accesses go on once the walk has a walker; the next walk
	 * waits for one, so walks still bound the rate. */
	*cycles += (overlap == TRANSLATE_DEPENDENT ? walk_end : walk_start) - now;
	machine_fill_probed(cpu, list, probe, nr, asid, pte->gen, pte->pfn, pte->writable);
	if (write)
		pte_mark_dirty(pte);
	pte_mark_accessed(pte, cpu->id);
	return TRANSLATE_OK;
}

void machine_fill(struct cpu *cpu, uint16_t asid, struct vma *vma, uint64_t vaddr)
{
	struct pte *pte = vma_pte(vma, vaddr);
	g_assert(pte->present);
	cpu->counters.page_walks++;
	pte_mark_accessed(pte, cpu->id);
	/* The fault's own walk made the replica and paid for it. */
	if (vma->mm)
		(void)mm_pmd_replicate(vma->mm, vaddr, cpu->socket);
	for (unsigned p = 0; p < cpu->nr_probe[vma->page_size]; p++)
		tlb_fill_perm(cpu->probe[vma->page_size][p].tlb, vaddr, vma->page_size, asid,
			      cpu->tlb_owner, pte->gen, pte->pfn, pte->writable);
}

void machine_invlpg(struct machine *machine, struct cpu *cpu, uint16_t asid, uint64_t vaddr)
{
	unsigned removed = 0;
	for (unsigned i = 0; i < cpu->nr_flush_scope; i++)
		removed += tlb_flush_one(cpu->flush_scope[i], vaddr, asid, cpu->owner_filter);
	machine_pwc_flush(machine, cpu, asid, false);
	cpu->counters.invlpg++;
	cpu->counters.tlb_entries_invalidated += removed;
}

void machine_flush_asid(struct machine *machine, struct cpu *cpu, uint16_t asid)
{
	unsigned removed = 0;
	for (unsigned i = 0; i < cpu->nr_flush_scope; i++)
		removed += tlb_flush_asid(cpu->flush_scope[i], asid, cpu->owner_filter);
	machine_pwc_flush(machine, cpu, asid, false);
	cpu->counters.tlb_flush_all++;
	cpu->counters.tlb_entries_invalidated += removed;
}

void machine_flush_all(struct machine *machine, struct cpu *cpu)
{
	unsigned removed = 0;
	for (unsigned i = 0; i < cpu->nr_flush_scope; i++)
		removed += tlb_flush_all(cpu->flush_scope[i], cpu->owner_filter);
	machine_pwc_flush(machine, cpu, 0, true);
	cpu->counters.tlb_flush_all++;
	cpu->counters.tlb_entries_invalidated += removed;
}

void machine_broadcast_invalidate_cpu(struct machine *machine, struct cpu *cpu, uint16_t asid,
				      uint64_t vaddr)
{
	const struct topology *topo = machine->topology;
	unsigned removed = 0;
	/* Only this CPU's entries: a sibling's in a shared structure may carry
	 * the same tag for another address space, and get its own pass. */
	int owner = cpu->tlb_owner;
	for (unsigned i = 0; i < topo->nr_tlbs; i++)
		removed += vaddr == MACHINE_ALL_VADDR ? tlb_flush_asid(cpu->tlbs[i], asid, owner)
						     : tlb_flush_one(cpu->tlbs[i], vaddr, asid, owner);
	pwc_drop(cpu, asid, false);
	cpu->counters.tlb_entries_invalidated += removed;
}

bool machine_cpu_holds(const struct machine *machine, const struct cpu *cpu, uint16_t asid,
		       uint64_t vaddr, bool pwc)
{
	static_assert(MACHINE_ALL_VADDR == TLB_ANY_VADDR, "one 'whole ASID' marker");
	for (unsigned i = 0; i < machine->topology->nr_tlbs; i++)
		if (tlb_holds(cpu->tlbs[i], vaddr, asid, cpu->tlb_owner))
			return true;
	for (unsigned i = 0; pwc && i < cpu->nr_pwc; i++)
		if (cpu->pwc[i] && pwc_key_asid(cpu->pwc[i]) == asid)
			return true;
	return false;
}

void machine_broadcast_invalidate(struct machine *machine, uint16_t asid, uint64_t vaddr)
{
	for (unsigned c = 0; c < machine->nr_cpus; c++)
		machine_broadcast_invalidate_cpu(machine, &machine->cpus[c], asid, vaddr);
}

unsigned machine_count_stale_entries(struct machine *machine, const struct vma *vma,
				     uint64_t vaddr, uint32_t committed,
				     int (*asid_of)(const void *ctx, const struct cpu *cpu),
				     const void *ctx)
{
	unsigned total = 0;
	for (unsigned c = 0; c < machine->nr_cpus; c++) {
		struct cpu *cpu = &machine->cpus[c];
		int asid = asid_of(ctx, cpu);
		if (asid < 0)
			continue;
		for (unsigned p = 0; p < cpu->nr_probe[vma->page_size]; p++) {
			uint32_t gen;
			const struct tlb *tlb = cpu->probe[vma->page_size][p].tlb;
			if (tlb_peek(tlb, vaddr, vma->page_size, (uint16_t)asid, cpu->tlb_owner, &gen) &&
			    gen < committed) {
				cpu->counters.stale_entries++;
				total++;
			}
		}
	}
	return total;
}

void machine_report_stale_pwc(struct cpu *cpu, uint64_t span, uint64_t now)
{
	cpu->counters.stale_pwc++;
	machine_keep_stale(cpu, &(struct stale_report){
				    .time = now, .cpu = cpu->id, .vaddr = span << 21, .freed_table = true});
}

unsigned machine_check_freed_table(struct machine *machine, const struct mm *mm, uint64_t span,
				   uint64_t now,
				   int (*walking)(const void *ctx, const struct cpu *cpu),
				   const void *ctx)
{
	unsigned found = 0;
	for (unsigned c = 0; c < machine->nr_cpus; c++) {
		struct cpu *cpu = &machine->cpus[c];
		int asid = walking(ctx, cpu);
		if (asid < 0)
			continue; /* not walking mm's tables: CR3 points elsewhere */
		uint64_t key = pwc_key(mm, (uint16_t)asid, span);
		for (unsigned i = 0; i < cpu->nr_pwc; i++) {
			if (cpu->pwc[i] != key)
				continue;
			found++;
			machine_report_stale_pwc(cpu, span, now);
		}
	}
	return found;
}

unsigned machine_tlb_occupancy(const struct machine *machine, const struct cpu *cpu)
{
	unsigned total = 0;
	for (unsigned i = 0; i < machine->topology->nr_tlbs; i++)
		total += tlb_occupancy(cpu->tlbs[i]);
	return total;
}

void machine_sample_begin(struct machine *machine)
{
	g_assert(!machine->settled_spans);
	machine->settled_spans = g_new0(struct machine_settled_spans, machine->nr_cpus);
	for (unsigned c = 0; c < machine->nr_cpus; c++)
		machine->cpus[c].sample_spans = &machine->settled_spans[c];
}

void machine_sample_note(struct cpu *cpu, bool settled)
{
	struct machine_settled_spans *s = cpu->sample_spans;
	if (!s || settled == s->open)
		return;
	if (settled) {
		s->open_start = cpu->counters;
		s->open_busy = cpu->sample_access_cycles;
	} else {
		counters_add_delta(&s->counts, &cpu->counters, &s->open_start);
		s->busy += cpu->sample_access_cycles - s->open_busy;
	}
	s->open = settled;
}

void machine_sample_settled_totals(const struct cpu *cpu, struct counters *counts,
				   uint64_t *busy)
{
	const struct machine_settled_spans *s = cpu->sample_spans;
	*counts = s ? s->counts : (struct counters){0};
	*busy = s ? s->busy : 0;
	if (s && s->open) {
		counters_add_delta(counts, &cpu->counters, &s->open_start);
		*busy += cpu->sample_access_cycles - s->open_busy;
	}
}
