#ifndef TLBSIM_MACHINE_H
#define TLBSIM_MACHINE_H
/*
 * The simulated machine: logical CPUs with their TLB structures (SMT-shared
 * ones really shared), paging-structure caches, data caches and page
 * walkers, the interconnect, and per CPU its counters.  Address translation
 * lives here because it only touches this layer: TLBs, page tables, caches,
 * counters.  What the kernel keeps about each CPU's TLB (the loaded mm, lazy
 * mode, PCIDs) is the kernel's (kernel/tlbflush.h), as are interrupts.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/engine/engine.h"
#include "tlbsim/machine/cache.h"
#include "tlbsim/machine/counters.h"
#include "tlbsim/machine/fabric.h"
#include "tlbsim/machine/mm.h"
#include "tlbsim/machine/tlb.h"
#include "tlbsim/machine/topology.h"

#define MACHINE_MAX_TLBS 16
#define MACHINE_MAX_CACHES 4
#define MACHINE_STALE_REPORTS 8

/* One structure a translation of some page size probes (struct cpu). */
struct cpu_probe {
	struct tlb *tlb;
	uint64_t hit_cycles; /* topology hit_cycles */
	bool stlb;           /* a level above 1: its hits count as stlb_hits */
};

struct cpu {
	_Alignas(HOST_LINE) unsigned id;
	unsigned socket, core, thread, core_id;
	/* What this CPU's fills are tagged with, and what its lookups and
	 * invalidations match (TLB_ANY_OWNER unless smt_invalidation=thread). */
	uint16_t tlb_owner;
	int owner_filter;
	struct tlb *tlbs[MACHINE_MAX_TLBS]; /* indexed like topology->tlbs */
	/* machine->probe resolved for this CPU: what a translation probes, per
	 * page size, level 1 first, without going through the topology. */
	unsigned nr_probe[NR_PAGE_SIZES];
	struct cpu_probe (*probe)[MACHINE_MAX_TLBS]; /* [NR_PAGE_SIZES], owned */
	/* Structures one invalidation executed here reaches, each once. */
	unsigned nr_flush_scope;
	struct tlb **flush_scope;
	unsigned nr_core_cpus; /* this CPU and its SMT siblings */
	unsigned *core_cpus;

	/* The core's data caches, nearest first (topology->caches; shared by
	 * the siblings): where a walk finds its page-table lines. */
	struct cache *caches[MACHINE_MAX_CACHES];

	/* The paging-structure (PDE) cache: where the PTE page of a 2 MiB span
	 * is.  Sets of up to 4 entries, each one word (machine.c, pwc_key()),
	 * most recent first, empty ones (0) last. */
	unsigned nr_pwc;
	uint64_t *pwc;
	/* When each of the core's page walkers is next free (shared by the
	 * siblings: topology page_walkers entries). */
	uint64_t *walker_free;

	/* Its local events bound every core (machine_cpu_taint()). */
	bool tainted;
	unsigned taint_bound; /* machine_bound_add() handle while tainted */
	/* Sampled mode (see "Sampling"): cycles of accesses it simulated
	 * (always counted), and cycles it skipped (reset by the sampler). */
	uint64_t sample_access_cycles;
	uint64_t sample_skipped_cycles;
	/* What it counted while its loop was settled and simulated
	 * (machine_sample_note()); NULL unless sampling. */
	struct machine_settled_spans *sample_spans;
	/* Its earliest stale reports (machine_stale_reports()), sorted; NULL
	 * until its first. */
	unsigned nr_stale;
	struct stale_report *stale;

	struct counters counters;
};

struct stale_report {
	uint64_t time;
	unsigned cpu;
	uint64_t vaddr;
	uint32_t entry_gen;
	uint32_t committed_gen;
	bool freed_table; /* a cached PDE pointing at a freed PTE page, at vaddr's span */
	bool reused;      /* the entry's frame was handed out again (stale_reuse) */
};

/*
 * Lookahead.  Whatever one core does reaches another core no sooner than
 * @lookahead cycles later: an interrupt takes its send and delivery time, a
 * store (a page-table change, a flag) a cache-line transfer.  Every
 * cross-core effect is therefore an event at least that far ahead, and a CPU
 * may run its own memory accesses ahead up to machine_horizon() without
 * changing any result: see interp.c.
 *
 * Per-destination bounds.  Some events need not bound every core: a lane's
 * local events (engine_schedule_local()) bound only the CPUs of their own
 * core.  The layer that schedules them registers instead, with
 * machine_bound_add(), a bound (lane L, extra d): no other core sees an
 * effect of them before engine_lane_next_time(L) + d.  The kernel does so for
 * the target side of an IPI flush (kernel/smp.c, "Per-destination
 * lookahead"): an interrupt at CPU X reaches CPU Y only through the caller's
 * continuation after the last acknowledgement, which cannot come before the
 * last outstanding target's next event plus the line transfer back.
 */
struct machine_bound {
	unsigned lane;
	uint64_t extra;
	bool used;
};

/*
 * Sampling (tlbsim --sample).  Time is cut into periods of @period cycles;
 * in each, at an offset drawn at random (so that the windows do not alias
 * with a periodic workload), a warming span of @warm cycles and a measured
 * window of @window are simulated access by access, and the rest is
 * skipped.  In the rest, a CPU whose accesses form a settled loop (the
 * interpreter decides: an open-ended loop that cannot fault, past its cold
 * start and the refill after any disturbance, on a core whose other loops
 * are settled too) does not simulate them: it is busy, and its access
 * counts are estimated from a window.  Warming lets the loops that a skipped
 * span's last flush disturbed refill before the window.  The estimating is
 * done by the layer that reads the counters (sim/sample.c), which also sets
 * the current period's span here at its start; the machine only holds it.
 */
struct machine_sample_plan {
	uint64_t period, warm, window;
};

/* The closed spans' sum and the open one's start. */
struct machine_settled_spans {
	bool open;
	uint64_t open_busy; /* sample_access_cycles at the open span's start */
	struct counters open_start;
	struct counters counts;
	uint64_t busy;
};

struct machine_sample {
	bool on;
	uint64_t exact_from, exact_to; /* this period's warming and window */
	uint64_t period_end;
};

/* 0 if accesses at @t are simulated, else the end of the skipped span @t is in. */
static inline uint64_t machine_sample_skip_end(const struct machine_sample *s, uint64_t t)
{
	if (!s->on || (t >= s->exact_from && t < s->exact_to))
		return 0;
	return t < s->exact_from ? s->exact_from : s->period_end;
}

struct machine {
	const struct topology *topology;
	uint64_t lookahead;
	struct engine *engine;
	struct fabric *fabric;
	unsigned nr_cpus;
	struct cpu *cpus;
	/* Topology TLB indexes to probe for each page size, level 1 first. */
	unsigned nr_probe[NR_PAGE_SIZES];
	unsigned probe[NR_PAGE_SIZES][MACHINE_MAX_TLBS];
	unsigned probe_level[NR_PAGE_SIZES][MACHINE_MAX_TLBS];
	unsigned nr_all_tlbs;
	struct tlb **all_tlbs;
	unsigned nr_all_caches;
	struct cache **all_caches;
	unsigned line_shift; /* log2(topology->cache_line_bytes) */
	uint64_t *walker_free; /* page_walkers per core, cores in core_id order */
	/* Physical frames (frame.h), owned; every mm of the run borrows it. */
	struct frames *frames;
	/* numaPTE: cycles a walk pays to copy a PTE page to its node
	 * (mm_pmd_replicate()); set by the kernel's policy, 0 elsewhere. */
	uint64_t replica_cycles;
	/* Local target-side events allowed (see "Lookahead"); true unless the
	 * caller turns it off.  Off with a time series, whose rows spread what a
	 * CPU counted ahead of a boundary and so depend on how far it ran
	 * ahead: with it off they stay those of tracked interrupts. */
	bool per_destination;
	struct machine_sample sample;
	struct machine_settled_spans *settled_spans; /* per CPU, while sampling */
	/* Registered per-destination bounds; slots up to nr_bounds, reused. */
	unsigned nr_bounds, cap_bounds;
	struct machine_bound *bounds;
};

/* @topology, @engine are borrowed and must outlive the machine. */
struct machine *machine_new(const struct topology *topology, struct engine *engine,
			    fabric_deliver_fn deliver, void *deliver_ctx);
void machine_free(struct machine *machine);

enum translate_result {
	TRANSLATE_OK,
	TRANSLATE_FAULT, /* PTE not present, or a write to a read-only PTE */
};

/*
 * How an access's translation latency reaches the CPU's time.  DEPENDENT: the
 * next access needs this one's data (pointer chasing), so every cycle of
 * translation is paid in turn.  INDEPENDENT: the next address is known
 * without this load (a loop over an index table), so an out-of-order core
 * overlaps TLB hits with other work and only the page walks, which queue for
 * the core's few walkers, stall it.
 */
enum translate_overlap {
	TRANSLATE_DEPENDENT,
	TRANSLATE_INDEPENDENT,
};

/**
 * machine_translate() - one data access's address translation on @cpu at @now.
 * Probes level-1 then level-2 structures for the VMA's page size, walks the page
 * table on a miss and fills.  Adds the translation cycles to *@cycles.  A hit on
 * an entry older than a committed PTE change counts (and logs) a stale hit and
 * still succeeds, as the hardware would; if the frame it maps has been handed
 * out again since (frame_reused_since()), a stale_reuse too.  A write through a translation of
 * the PTE as it is sets its dirty bit (one older than its last zap or
 * downgrade writes a page the PTE no longer maps).
 */
enum translate_result machine_translate(struct machine *machine, struct cpu *cpu, uint16_t asid,
					struct vma *vma, uint64_t vaddr, bool write, uint64_t now,
					enum translate_overlap overlap, uint64_t *cycles);

/*
 * The data line an access at @vaddr of @vma reads goes through @cpu's caches
 * (and takes its place there), so that page walks compete with the data for
 * them.  Its latency is the workload's to charge, not returned: a loop's
 * access cost says what its loads cost.  Nothing without data caches.
 */
void machine_touch_data(struct machine *machine, struct cpu *cpu, const struct vma *vma,
			uint64_t vaddr);

/* Fill translations after a fault made the PTE present (the retried walk). */
void machine_fill(struct cpu *cpu, uint16_t asid, struct vma *vma, uint64_t vaddr);

/* Hardware invalidations executed on @cpu (INVLPG, CR3 write, all ASIDs).
 * Each also drops the CPU's paging-structure cache entries of that ASID (SDM
 * 4.10.4.1: INVLPG invalidates all of them for the current PCID). */
void machine_invlpg(struct machine *machine, struct cpu *cpu, uint16_t asid, uint64_t vaddr);
void machine_flush_asid(struct machine *machine, struct cpu *cpu, uint16_t asid);
void machine_flush_all(struct machine *machine, struct cpu *cpu);

/*
 * Broadcast invalidations (arm64 TLBI ...IS, AMD INVLPGB): every TLB of the
 * machine drops the page (or, with vaddr MACHINE_ALL_VADDR, every entry) of
 * @asid, without any CPU executing anything.  Entries lost are counted on the
 * CPU whose structures held them.
 */
#define MACHINE_ALL_VADDR UINT64_MAX
void machine_broadcast_invalidate(struct machine *machine, uint16_t asid, uint64_t vaddr);
/* The part of a broadcast that reaches @cpu's own structures (per-CPU ASIDs,
 * as x86 PCIDs are); counted like machine_broadcast_invalidate(). */
void machine_broadcast_invalidate_cpu(struct machine *machine, struct cpu *cpu, uint16_t asid,
				      uint64_t vaddr);

/* Does @cpu's own part of a broadcast of @asid and @vaddr (MACHINE_ALL_VADDR:
 * the whole ASID) have anything to drop in its TLBs, or, if @pwc, in its
 * paging-structure caches?  Changes and counts nothing: the sharer check of
 * an exact TLB directory (DiDi, src/kernel/didi.c). */
bool machine_cpu_holds(const struct machine *machine, const struct cpu *cpu, uint16_t asid,
		       uint64_t vaddr, bool pwc);

/*
 * Latent stale translations: entries for page @vaddr of @vma, on any CPU,
 * filled before the PTE change committed at @committed.  @asid_of(ctx, cpu)
 * gives the tag the mm's entries carry on that CPU, or -1 if it can hold
 * none.  Counted per CPU in stale_entries; returns the total.
 */
unsigned machine_count_stale_entries(struct machine *machine, const struct vma *vma,
				     uint64_t vaddr, uint32_t committed,
				     int (*asid_of)(const void *ctx, const struct cpu *cpu),
				     const void *ctx);

/* @cpu could walk through the freed page-table page of 2 MiB span @span at
 * @now: count it in stale_pwc and report it. */
void machine_report_stale_pwc(struct cpu *cpu, uint64_t span, uint64_t now);

/*
 * The checker for freed page tables: every CPU that still walks @mm's tables
 * (@walking(ctx, cpu) gives the tag it walks them under, or -1 if its
 * page-table root is elsewhere) and has a paging-structure cache entry for
 * 2 MiB span @span under that tag could walk through the freed page.  Counts
 * (and reports) each as a stale hit; returns how many.
 */
unsigned machine_check_freed_table(struct machine *machine, const struct mm *mm, uint64_t span,
				   uint64_t now,
				   int (*walking)(const void *ctx, const struct cpu *cpu),
				   const void *ctx);

/*
 * Sampled mode: what changes when @cpu's TLBs or its task are disturbed:
 * entries removed from its core's TLBs (a sibling's flush empties shared
 * structures too, counted on the sibling) and task switches on the core.
 */
static inline uint64_t machine_sample_signature(const struct machine *machine,
						const struct cpu *cpu)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < cpu->nr_core_cpus; i++) {
		const struct counters *c = &machine->cpus[cpu->core_cpus[i]].counters;
		sum += c->tlb_entries_invalidated + c->context_switches;
	}
	return sum;
}

/* Sampled mode begins: every CPU keeps its settled spans from now on. */
void machine_sample_begin(struct machine *machine);

/*
 * Sampled mode: @cpu's next simulated access is of a settled loop or not
 * (the interpreter's judgement).  Opens or closes a settled span; what a
 * CPU counts in settled spans is what a skipped span would have counted.
 */
void machine_sample_note(struct cpu *cpu, bool settled);
/* Counts and cycles of accesses of @cpu's settled spans so far, the open one included. */
void machine_sample_settled_totals(const struct cpu *cpu, struct counters *counts,
				   uint64_t *busy);

static inline unsigned cpu_lane(const struct cpu *cpu)
{
	return fabric_cpu_lane(cpu->id);
}

/*
 * The latest local time up to which @cpu may run accesses ahead: before the
 * next event of its own core's CPUs or of the global lane, before the next
 * tracked event anywhere plus the lookahead, and before every registered
 * bound (see "Lookahead").
 */
uint64_t machine_horizon(const struct machine *machine, const struct cpu *cpu);

/*
 * The engine group (engine_schedule_independent()) of @cpu's quiet
 * accesses: its core, whose TLBs, caches and walkers they share with the
 * siblings and no one else.  The PTE bits they set are set atomically and
 * end the same in any order (pte_mark_accessed()).  Under numaPTE a walk's
 * cost depends on whether another socket's walk made the PTE page's replica
 * first, an order across cores: every CPU is then in group 0.
 */
unsigned machine_run_group(const struct machine *machine, const struct cpu *cpu);
/* How many groups machine_run_group() hands out: more host threads than
 * that would find nothing to do. */
unsigned machine_nr_run_groups(const struct machine *machine);

/*
 * The earliest stale reports of the run, at most MACHINE_STALE_REPORTS, in
 * (time, CPU, address) order, into @out; returns how many.  Each CPU keeps
 * its own earliest, so that the reports do not depend on the order in which
 * CPUs ran ahead.
 */
unsigned machine_stale_reports(const struct machine *machine,
			       struct stale_report out[MACHINE_STALE_REPORTS]);

/* Register a bound (@lane, @extra); returns its handle. */
unsigned machine_bound_add(struct machine *machine, unsigned lane, uint64_t extra);
/* Change bound @id (still registered). */
void machine_bound_set(struct machine *machine, unsigned id, unsigned lane, uint64_t extra);
void machine_bound_remove(struct machine *machine, unsigned id);

/*
 * From now until machine_cpu_untaint(), @cpu's local events bound every core
 * as tracked events would: the bound (its lane, the lookahead).  For work
 * that may reach other cores while its events are local (kernel/smp.c,
 * "Per-destination lookahead").  Tainting a tainted CPU does nothing.
 */
void machine_cpu_taint(struct machine *machine, struct cpu *cpu);
void machine_cpu_untaint(struct machine *machine, struct cpu *cpu);

/* Valid entries in the structures @cpu can use (shared ones counted whole). */
unsigned machine_tlb_occupancy(const struct machine *machine, const struct cpu *cpu);

#endif
