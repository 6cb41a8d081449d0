/*
 * The translation path: simulated memory accesses per second through
 * machine_translate() (the L1 DTLB and STLB model, page walks and fills) on
 * the haswell-i7 topology, single thread, against a bare loop that does the
 * same set-associative lookups and fills on plain arrays of tags.
 *
 * Workload, as in Alex Shi's munmap harness: 512 pages drawn at random (with
 * replacement) from a populated 1 GiB region, read round after round.
 * - 1 CPU: one logical CPU's 512 pages.  The 64-entry L1 DTLB mostly misses,
 *   the 1024-entry STLB mostly hits.
 * - SMT pair: CPUs 0 and 4 (siblings sharing the STLB), 512 pages each,
 *   accesses alternating: 1024 pages compete for the STLB, so about half the
 *   accesses walk, as in munmap16.
 *
 * The bare model ("the physical limit" of a software set-associative TLB) has
 * only what a lookup needs: per structure an array of tags (page number + 1,
 * 0 = invalid) and one of LRU stamps, set = page number % sets (a mask), the
 * first invalid way or else the least recently used one is filled, with
 * branch-free scans of the ways.  It takes the
 * geometry from the same topology and, with the same replacement, finds the
 * same hits: the benchmark checks that both count the same L1 hits, STLB hits
 * and walks, so they did the same work.  It does not model what tlbsim must
 * keep besides (ASIDs, owners, PTE generations, permissions, stale checks,
 * counters, the page-table entry a hit is checked against).
 *
 * Times are CPU time (see bench.h).
 * Usage: bench_translate [--quick] [--reps N] [--cpus 1|2] [--model tlbsim|bare]
 * (--cpus and --model restrict the run, for profiling; a model not run shows 0).
 */
#include "bench.h"
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "tlbsim/machine/machine.h"
#include "tlbsim/machine/mm.h"
#include "tlbsim/machine/topology.h"
#include "tlbsim/sim/inputs.h"
#include "tlbsim/util/config.h"

#define MAX_REPETITIONS 64
#define PAGES 512
#define REGION_BASE (UINT64_C(1) << 32)
#define REGION_PAGES (UINT64_C(1) << 18) /* 1 GiB of 4K pages */
#define PAGE_SHIFT 12
#define ACCESSES_FULL (UINT64_C(8) << 20) /* whole rounds of both CPUs, also a quarter */
#define ACCESSES_QUICK (UINT64_C(1) << 20)
#define RNG_SEED UINT64_C(0x9e3779b97f4a7c15)
/* The SMT pair on haswell-i7: cpu = thread * 4 + core. */
#define CPU_A 0
#define CPU_B 4

static uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(2685821657736338717);
}

/* What an access found: the same three figures from both models. */
struct mix {
	uint64_t l1_hits, stlb_hits, walks;
};

/* ---- (a) tlbsim: machine_translate() -------------------------------------- */

struct rig {
	struct topology *topo;
	struct engine *engine;
	struct machine *machine;
	struct mm *mm;
	struct vma *vma;
};

static void no_deliver(void *ctx, unsigned cpu, unsigned kind)
{
	(void)kind;
	(void)ctx;
	(void)cpu;
}

static void die(const char *what, GError *error)
{
	fprintf(stderr, "bench_translate: %s: %s\n", what, error ? error->message : "failed");
	exit(1);
}

static struct topology *load_topology(const char *name)
{
	GError *error = NULL;
	char *path = inputs_resolve(INPUT_TOPOLOGY, name, &error);

	if (!path)
		die(name, error);
	cJSON *json = config_load_file(path, NULL, &error);
	if (!json)
		die(path, error);
	struct topology *topo = topology_from_json(json, path, &error);
	if (!topo)
		die(path, error);
	cJSON_Delete(json);
	g_free(path);
	return topo;
}

static void rig_init(struct rig *r)
{
	r->topo = load_topology("haswell-i7");
	unsigned nr_cpus = topology_nr_cpus(r->topo);
	r->engine = engine_new(NR_LANES(nr_cpus));
	r->machine = machine_new(r->topo, r->engine, no_deliver, NULL);
	r->mm = mm_new(1, nr_cpus);
	mm_add_vma(r->mm, REGION_BASE, REGION_PAGES << PAGE_SHIFT, PS_4K, false, 0, 0);
	mm_finish_layout(r->mm);
	r->vma = &r->mm->vmas[0];
	for (uint64_t p = 0; p < REGION_PAGES; p++)
		mm_populate(r->mm, r->vma, REGION_BASE + (p << PAGE_SHIFT), true);
}

static void rig_destroy(struct rig *r)
{
	mm_free(r->mm);
	machine_free(r->machine);
	engine_free(r->engine);
	topology_free(r->topo);
}

static struct mix cpu_mix(const struct cpu *cpu)
{
	const struct counters *c = &cpu->counters;

	return (struct mix){c->tlb_hits - c->stlb_hits, c->stlb_hits, c->tlb_misses};
}

/*
 * @n accesses on @nr_cpus CPUs, alternating; CPU k reads pages[k][].
 * Returns accesses per second (CPU time) and adds what they found to @mix.
 */
static double run_tlbsim(struct rig *r, const uint64_t (*pages)[PAGES], unsigned nr_cpus,
			 uint64_t n, struct mix *mix)
{
	static const unsigned ids[2] = {CPU_A, CPU_B};
	struct cpu *cpus[2];
	struct mix before[2];
	uint64_t cycles = 0;
	unsigned pos = 0;

	for (unsigned k = 0; k < nr_cpus; k++) {
		cpus[k] = &r->machine->cpus[ids[k]];
		before[k] = cpu_mix(cpus[k]);
	}
	double start = bench_cpu_seconds();
	for (uint64_t i = 0; i < n;) {
		for (unsigned k = 0; k < nr_cpus; k++, i++) {
			/* Each CPU's clock moves by what its translations cost. */
			if (machine_translate(r->machine, cpus[k], 0, r->vma, pages[k][pos], false,
					      cycles, TRANSLATE_DEPENDENT, &cycles) != TRANSLATE_OK)
				abort();
		}
		pos = pos + 1 == PAGES ? 0 : pos + 1;
	}
	double elapsed = bench_cpu_seconds() - start;
	for (unsigned k = 0; k < nr_cpus; k++) {
		struct mix after = cpu_mix(cpus[k]);

		mix->l1_hits += after.l1_hits - before[k].l1_hits;
		mix->stlb_hits += after.stlb_hits - before[k].stlb_hits;
		mix->walks += after.walks - before[k].walks;
	}
	if (cycles == 0) /* uses the result */
		abort();
	return (double)n / elapsed;
}

/* ---- (b) the bare model ----------------------------------------------------- */

struct bare_tlb {
	unsigned ways;
	uint64_t set_mask; /* sets - 1: the sets are a power of two (checked) */
	uint64_t clock;
	uint64_t *tag;   /* sets * ways: bare_tag(), 0 = invalid */
	uint64_t *stamp; /* last fill or hit */
};

static void bare_init(struct bare_tlb *t, const struct tlb_geometry *g)
{
	unsigned sets = g->entries / g->ways;

	if (sets & (sets - 1)) {
		fprintf(stderr, "bench_translate: the bare model needs a power-of-two set count\n");
		exit(1);
	}
	t->ways = g->ways;
	t->set_mask = sets - 1;
	t->clock = 0;
	t->tag = calloc(g->entries, sizeof(*t->tag));
	t->stamp = calloc(g->entries, sizeof(*t->stamp));
	if (!t->tag || !t->stamp)
		abort();
}

static void bare_destroy(struct bare_tlb *t)
{
	free(t->tag);
	free(t->stamp);
}

/* A tag holds the page and the logical CPU that filled it: as in tlbsim, SMT
 * siblings share an STLB's capacity, not its entries. */
static inline uint64_t bare_tag(uint64_t vpn, unsigned owner)
{
	return ((vpn + 1) << 8) | owner;
}

/*
 * The lookup and the victim search are written the way a fast simulator
 * would: one branch-free pass over the ways (which way hits, or is the
 * oldest, is unpredictable), the running minimum kept in a register.
 */
static inline bool bare_lookup(struct bare_tlb *t, uint64_t vpn, unsigned owner)
{
	size_t base = (vpn & t->set_mask) * t->ways;
	const uint64_t *tag = &t->tag[base];
	uint64_t want = bare_tag(vpn, owner);
	unsigned hit = t->ways;

	for (unsigned w = t->ways; w-- > 0;)
		hit = tag[w] == want ? w : hit;
	if (hit == t->ways)
		return false;
	t->stamp[base + hit] = ++t->clock;
	return true;
}

static inline void bare_fill(struct bare_tlb *t, uint64_t vpn, unsigned owner)
{
	size_t base = (vpn & t->set_mask) * t->ways;
	const uint64_t *stamp = &t->stamp[base];
	uint64_t oldest = stamp[0];
	unsigned victim = 0;

	for (unsigned w = 1; w < t->ways; w++) {
		victim = stamp[w] < oldest ? w : victim;
		oldest = stamp[w] < oldest ? stamp[w] : oldest;
	}
	t->tag[base + victim] = bare_tag(vpn, owner);
	t->stamp[base + victim] = ++t->clock;
}

/* Which topology structure is the 4K level-1 TLB and which the level-2 one. */
static void find_levels(const struct topology *topo, unsigned *l1, unsigned *l2)
{
	*l1 = *l2 = topo->nr_tlbs;
	for (unsigned i = 0; i < topo->nr_tlbs; i++) {
		const struct topology_tlb *t = &topo->tlbs[i];

		if (!(t->geometry.page_sizes & (1u << PS_4K)))
			continue;
		if (t->level == 1)
			*l1 = i;
		else
			*l2 = i;
	}
	if (*l1 == topo->nr_tlbs || *l2 == topo->nr_tlbs || !topo->tlbs[*l2].per_core) {
		fprintf(stderr, "bench_translate: expected a 4K L1 DTLB and a per-core STLB\n");
		exit(1);
	}
}

/* Private L1s per CPU, one shared STLB: the same accesses as run_tlbsim(). */
static double run_bare(const struct topology *topo, const uint64_t (*pages)[PAGES],
		       unsigned nr_cpus, uint64_t warmup, uint64_t n, struct mix *mix)
{
	struct bare_tlb l1[2], stlb;
	unsigned i1, i2;
	double elapsed = 0;

	find_levels(topo, &i1, &i2);
	for (unsigned k = 0; k < nr_cpus; k++)
		bare_init(&l1[k], &topo->tlbs[i1].geometry);
	bare_init(&stlb, &topo->tlbs[i2].geometry);
	for (int phase = 0; phase < 2; phase++) {
		uint64_t count = phase ? n : warmup;
		struct mix m = {0, 0, 0};
		unsigned pos = 0;
		double start = bench_cpu_seconds();

		for (uint64_t i = 0; i < count;) {
			for (unsigned k = 0; k < nr_cpus; k++, i++) {
				uint64_t vpn = pages[k][pos] >> PAGE_SHIFT;

				if (bare_lookup(&l1[k], vpn, k)) {
					m.l1_hits++;
				} else if (bare_lookup(&stlb, vpn, k)) {
					m.stlb_hits++;
					bare_fill(&l1[k], vpn, k);
				} else {
					m.walks++;
					bare_fill(&stlb, vpn, k);
					bare_fill(&l1[k], vpn, k);
				}
			}
			pos = pos + 1 == PAGES ? 0 : pos + 1;
		}
		elapsed = bench_cpu_seconds() - start;
		if (phase) {
			mix->l1_hits += m.l1_hits;
			mix->stlb_hits += m.stlb_hits;
			mix->walks += m.walks;
		}
	}
	for (unsigned k = 0; k < nr_cpus; k++)
		bare_destroy(&l1[k]);
	bare_destroy(&stlb);
	return (double)n / elapsed;
}

/* ---- driver ----------------------------------------------------------------- */

static void print_mix(const struct mix *m)
{
	double n = (double)(m->l1_hits + m->stlb_hits + m->walks);

	if (n == 0)
		n = 1;
	printf("%.0f / %.0f / %.0f", 100.0 * (double)m->l1_hits / n,
	       100.0 * (double)m->stlb_hits / n, 100.0 * (double)m->walks / n);
}

int main(int argc, char **argv)
{
	uint64_t n = ACCESSES_FULL;
	int reps = 5;
	unsigned only_cpus = 0;
	const char *only_model = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			n = ACCESSES_QUICK;
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--cpus") == 0 && i + 1 < argc) {
			only_cpus = (unsigned)atoi(argv[++i]);
		} else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc &&
			   (strcmp(argv[i + 1], "tlbsim") == 0 || strcmp(argv[i + 1], "bare") == 0)) {
			only_model = argv[++i];
		} else {
			fprintf(stderr,
				"usage: %s [--quick] [--reps N] [--cpus 1|2] [--model tlbsim|bare]\n",
				argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > MAX_REPETITIONS) {
		fprintf(stderr, "%s: --reps must be 1..%d\n", argv[0], MAX_REPETITIONS);
		return 2;
	}

	static uint64_t pages[2][PAGES];
	uint64_t rng = RNG_SEED;
	for (unsigned k = 0; k < 2; k++)
		for (unsigned p = 0; p < PAGES; p++)
			pages[k][p] = REGION_BASE + ((rng_next(&rng) % REGION_PAGES) << PAGE_SHIFT);

	printf("Translation path: %llu timed accesses per run (CPU time), %d pages per CPU drawn "
	       "from 1 GiB, haswell-i7; median (min–max) of %d runs\n\n",
	       (unsigned long long)n, PAGES, reps);
	printf("| model | CPUs | L1 / STLB hits / walks %% | M accesses/s | ratio to bare loop |\n");
	printf("|---|---|---:|---:|---:|\n");
	bool want_sim = !only_model || strcmp(only_model, "tlbsim") == 0;
	bool want_bare = !only_model || strcmp(only_model, "bare") == 0;
	for (unsigned nr_cpus = 1; nr_cpus <= 2; nr_cpus++) {
		if (only_cpus && nr_cpus != only_cpus)
			continue;
		double sim[MAX_REPETITIONS], bare[MAX_REPETITIONS], ratio[MAX_REPETITIONS];
		struct mix msim = {0, 0, 0}, mbare = {0, 0, 0};
		struct rig rig;

		rig_init(&rig);
		if (want_sim)
			run_tlbsim(&rig, (const uint64_t(*)[PAGES])pages, nr_cpus, n / 4,
				   &(struct mix){0});
		/* Interleaved so a noisy neighbour hits both alike. */
		for (int r = 0; r < reps; r++) {
			sim[r] = want_sim ? run_tlbsim(&rig, (const uint64_t(*)[PAGES])pages,
						       nr_cpus, n, &msim) / 1e6
					  : 0;
			bare[r] = want_bare ? run_bare(rig.topo, (const uint64_t(*)[PAGES])pages,
						       nr_cpus, n / 4, n, &mbare) / 1e6
					    : 0;
			ratio[r] = want_sim && want_bare ? sim[r] / bare[r] : 0;
		}
		if (want_sim && want_bare && memcmp(&msim, &mbare, sizeof(msim)) != 0) {
			fprintf(stderr, "bench_translate: the models disagree (l1 %llu/%llu)\n",
				(unsigned long long)msim.l1_hits, (unsigned long long)mbare.l1_hits);
			return 1;
		}
		const char *cpus = nr_cpus == 1 ? "1" : "2 (SMT pair, shared STLB)";
		struct bench_stats s = bench_stats_of(sim, (size_t)reps);
		struct bench_stats b = bench_stats_of(bare, (size_t)reps);
		struct bench_stats q = bench_stats_of(ratio, (size_t)reps);

		printf("| tlbsim `machine_translate` | %s | ", cpus);
		print_mix(&msim);
		printf(" | ");
		bench_print_stats(&s, 1);
		printf(" | ");
		bench_print_stats(&q, 2);
		printf(" |\n| bare array-of-tags loop | %s | ", cpus);
		print_mix(&mbare);
		printf(" | ");
		bench_print_stats(&b, 1);
		printf(" | 1 |\n");
		rig_destroy(&rig);
	}
	return 0;
}
