/*
 * Fuzz target: bytes -> config_parse_string -> topology_from_json.  A
 * topology that loads must also answer the CPU numbering questions for any
 * CPU it has without tripping an assertion, number its CPUs as topology.h
 * says, and describe caches a machine can be built from.
 */
#include "fuzz.h"
#include "tlbsim/machine/topology.h"
#include "tlbsim/util/config.h"

static void check_numbering(const struct topology *t)
{
	unsigned n = topology_nr_cpus(t);
	g_assert(n >= 1);
	const unsigned cpus[] = {0, 1, n / 2, n - 1};
	unsigned cores = t->sockets * t->cores_per_socket;

	for (size_t i = 0; i < G_N_ELEMENTS(cpus); i++) {
		unsigned a = cpus[i];
		if (a >= n)
			continue;
		unsigned socket = topology_cpu_socket(t, a);
		unsigned core = topology_cpu_core(t, a);
		unsigned thread = topology_cpu_thread(t, a);
		g_assert(socket < t->sockets && core < t->cores_per_socket &&
			 thread < t->threads_per_core);
		g_assert(a == thread * cores + socket * t->cores_per_socket + core);
		g_assert(topology_cpu_core_id(t, a) == socket * t->cores_per_socket + core);
		for (size_t j = 0; j < G_N_ELEMENTS(cpus); j++) {
			if (cpus[j] >= n)
				continue;
			enum topology_distance d = topology_distance(t, a, cpus[j]);
			g_assert(d < NR_DISTANCES && d == topology_distance(t, cpus[j], a));
		}
	}
	(void)topology_ns_to_cycles(t, UINT64_MAX);
	(void)topology_cycles_to_ns(t, UINT64_MAX);
}

/* A loaded machine's caches can be built: every core's share holds a set,
 * latencies grow outwards (topology.c's promises to machine.c). */
static void check_caches(const struct topology *t)
{
	g_assert(t->nr_caches <= 4);
	unsigned line = t->cache_line_bytes;
	g_assert(line >= 16 && (line & (line - 1)) == 0);
	for (unsigned i = 0; i < t->nr_caches; i++) {
		const struct topology_cache *c = &t->caches[i];
		g_assert(c->geometry.sets >= 1 && c->geometry.ways == c->ways);
		g_assert(i == 0 || c->hit_cycles >= t->caches[i - 1].hit_cycles);
		g_assert(t->memory_cycles >= c->hit_cycles);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *error = NULL;
	cJSON *json = fuzz_parse(data, size);
	if (json == NULL)
		return 0;
	struct topology *t = topology_from_json(json, "fuzz", &error);
	fuzz_check_result(t != NULL, error);
	if (t != NULL) {
		check_numbering(t);
		check_caches(t);
	}
	topology_free(t);
	cJSON_Delete(json);
	return 0;
}
