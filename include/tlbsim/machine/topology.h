#ifndef TLBSIM_TOPOLOGY_H
#define TLBSIM_TOPOLOGY_H
/*
 * A machine description (topologies/<name>.json), parsed and validated.  Pure
 * configuration: nothing here is simulation state.  Costs are integer cycles
 * at @clock_ghz.
 *
 * CPU numbering follows Linux on Intel: all first threads of every core of every
 * socket, then all second threads, ...:
 *     cpu = thread * (sockets * cores_per_socket) + socket * cores_per_socket + core
 * so on a 4-core/8-thread part cpu 0 and cpu 4 are siblings.
 */
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <glib.h>
#include "tlbsim/machine/cache.h"
#include "tlbsim/machine/tlb.h"

/* How far apart two logical CPUs are. */
enum topology_distance {
	DIST_SELF,   /* the same logical CPU */
	DIST_SMT,    /* SMT siblings of one core */
	DIST_SOCKET, /* other core, same socket */
	DIST_REMOTE, /* other socket */
	NR_DISTANCES,
};

/*
 * Which entries an invalidation executed on one SMT sibling removes.
 * CORE: all entries of the core's structures, both siblings' (the premise of the
 *       2016 SMT-sibling IPI de-duplication patch).
 * THREAD: only the entries the executing logical CPU created (Intel SDM Vol.3A
 *       8.7.13.2: entries are tagged with the creating logical processor).
 */
enum topology_smt_invalidation { SMT_INVALIDATE_CORE, SMT_INVALIDATE_THREAD };

enum topology_arch { ARCH_X86, ARCH_ARM64, ARCH_RISCV, NR_ARCHES };

/*
 * How another CPU's TLB is invalidated.  IPI: interrupt it and let its handler
 * flush (x86, riscv with direct IPIs).  SBI: one ecall into machine-mode
 * firmware, which interrupts the harts itself (riscv sbi_remote_sfence_vma).
 * BROADCAST: an instruction the interconnect delivers to every TLB without
 * interrupting anyone (arm64 TLBI ...IS, completed by DSB ISH).
 */
enum topology_remote_flush {
	REMOTE_FLUSH_IPI,
	REMOTE_FLUSH_SBI,
	REMOTE_FLUSH_BROADCAST,
	NR_REMOTE_FLUSH,
};

struct topology_tlb {
	char *name;    /* "l1d", "stlb", ... */
	unsigned level; /* 1: probed first; 2: probed after a level-1 miss */
	struct tlb_geometry geometry;
	bool per_core;       /* one structure shared by the core's SMT siblings */
	uint64_t hit_cycles; /* added to an access that hits at this level */
};

/*
 * Who shares one data cache level.  CORE: the core's SMT siblings (an L1D, a
 * private L2).  SOCKET: every core of the socket (an L3); tlbsim gives each
 * core an equal share of it (see topology.c).
 */
enum topology_cache_sharing { CACHE_SHARED_BY_CORE, CACHE_SHARED_BY_SOCKET };

struct topology_cache {
	char *name;                     /* "l1d", "l2", "l3" */
	unsigned size_kib;              /* the whole level: one core's or one socket's */
	unsigned ways;
	enum topology_cache_sharing shared_by;
	uint64_t hit_cycles;            /* load-to-use latency of a hit at this level */
	struct cache_geometry geometry; /* what one core holds: its share of the level */
};

struct topology_costs {
	/* STLB miss to fill, page-table entries cache-resident; with data caches,
	 * loads from further out add their latency beyond caches.resident_cycles. */
	uint64_t page_walk;
	uint64_t invlpg;        /* one single-page invalidation */
	uint64_t flush_all;     /* direct cost of a full non-global flush (CR3 write) */
	uint64_t invpcid_addr;  /* INVPCID one address of another PCID; 0 = no INVPCID */
	uint64_t cr3_switch;    /* CR3 write with NOFLUSH: PTI's switch at kernel entry, exit */
	uint64_t ipi_send;      /* sender, per target: queue the request, write the ICR */
	uint64_t ipi_latency[NR_DISTANCES]; /* send to interrupt at the target; [DIST_SELF] unused */
	uint64_t irq_entry;     /* interrupt entry up to the handler */
	uint64_t irq_exit;      /* handler return to the interrupted code */
	/*
	 * Atomic read-modify-write on a cache line last written by a CPU at that
	 * distance; [DIST_SELF] is the uncontended cost.  Used for cpumask
	 * updates, call-function queueing and the acknowledgement a waiting
	 * initiator observes.
	 */
	uint64_t line_transfer[NR_DISTANCES];
	uint64_t context_switch; /* scheduler path of a task switch, without switch_mm */
	uint64_t syscall;        /* user to kernel and back */
	uint64_t page_fault;     /* anonymous fault handling, without the page walk */
	uint64_t vma_op;         /* find, split, merge or remove one VMA (munmap/mprotect/madvise) */
	uint64_t pte_op;         /* visit one PTE in zap_pte_range / change_pte_range */
	uint64_t lru_page;       /* one page's LRU list work under the held LRU lock */
	uint64_t broadcast_issue; /* issue one broadcast invalidation (TLBI ...IS, INVLPGB) */
	uint64_t broadcast_sync;  /* DSB ISH / TLBSYNC: until every TLB has done them */
	uint64_t sbi_call;        /* ecall into SBI firmware and back, without its IPIs */
	uint64_t rar_service;     /* a RAR target's microcode: one action, without its flush */
	uint64_t tlb_snoop;       /* a coherent TLB matching an invalidation in its PTE CAM */
	uint64_t directory_lookup; /* DiDi: the TLB directory finding one translation's sharers */
	uint64_t lsq_drain;        /* DiDi: a sharer checking its load/store queue before its ack */
};

struct topology {
	char *name;
	char *description;
	unsigned sockets;
	unsigned cores_per_socket;
	unsigned threads_per_core;
	double clock_ghz;
	unsigned hw_asids; /* ASIDs/PCIDs the hardware offers; 0 = none */
	/* Page walks one core can have in flight (shared by its SMT siblings). */
	unsigned page_walkers;
	enum topology_smt_invalidation smt_invalidation;
	/* What the 3.x kernel read from CPUID and its per-model table, for the
	 * tlb_flushall_shift rule. */
	unsigned tlb_lld_4k;
	unsigned tlb_lli_4k;
	int tlb_flushall_shift;
	enum topology_arch arch;
	enum topology_remote_flush remote_flush;
	/* INVLPGB pages per instruction (CPUID 0x80000008 EDX + 1); 0 = none. */
	unsigned invlpgb_count_max;
	/* Intel RAR payload slots (IA32_RAR_INFO); 0 = no Remote Action Request. */
	unsigned rar_payloads;
	/* TLBs join cache coherence (UNITD): a PTE store's invalidations reach them. */
	bool coherent_tlbs;
	/* Entries of a shared TLB directory (DiDi); 0 = no directory.  The
	 * model's directory is exact and its capacity is not modelled
	 * (docs/decisions.md): any value above 0 gives the same runs. */
	unsigned tlb_directory_entries;
	/* Every invalidation flushes the whole TLB (SiFive U74 erratum CIP-1200). */
	bool full_flush_only;
	/* Paging-structure (PDE) cache entries per CPU: 0 = none modelled. */
	unsigned pwc_entries;
	unsigned nr_tlbs;
	struct topology_tlb *tlbs;
	/* Data caches a page walk's loads go through, nearest first; none (0
	 * levels) = every walk costs costs.page_walk. */
	unsigned cache_line_bytes;
	unsigned nr_caches;
	struct topology_cache *caches;
	uint64_t memory_cycles; /* a load that misses every level */
	/* Load latency costs.page_walk already includes: a walk's load adds
	 * only what its level costs beyond it. */
	uint64_t resident_cycles;
	struct topology_costs costs;
};

/* Parse and validate; errors name @file and the JSON path.  NULL on error. */
struct topology *topology_from_json(const cJSON *json, const char *file, GError **error);
void topology_free(struct topology *topology);

unsigned topology_nr_cpus(const struct topology *topology);
unsigned topology_cpu_socket(const struct topology *topology, unsigned cpu);
unsigned topology_cpu_core(const struct topology *topology, unsigned cpu);   /* within socket */
unsigned topology_cpu_thread(const struct topology *topology, unsigned cpu); /* within core */
/* Global core number: socket * cores_per_socket + core. */
unsigned topology_cpu_core_id(const struct topology *topology, unsigned cpu);
enum topology_distance topology_distance(const struct topology *topology, unsigned a, unsigned b);

/* Cycles <-> nanoseconds at the machine's clock (rounded to nearest). */
uint64_t topology_ns_to_cycles(const struct topology *topology, uint64_t ns);
double topology_cycles_to_ns(const struct topology *topology, uint64_t cycles);

#endif
