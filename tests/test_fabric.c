/*
 * Tests of src/machine/fabric.c on tests/data/tiny-2socket.json (2 sockets x 2 cores
 * x 2 threads; cpu n: thread n / 4, socket (n % 4) / 2, core n % 2).  Seen
 * from cpu 0: cpu 4 is its SMT sibling, cpu 1 (and 5) share its socket, cpus
 * 2, 3, 6, 7 are on the other socket.  IPI latency smt/socket/remote =
 * 1000/1500/2500; line transfer self/smt/socket/remote = 20/40/100/300.
 */
#include <signal.h>
#include <criterion/criterion.h>
#include <glib.h>
#include "tlbsim/machine/fabric.h"
#include "tlbsim/util/config.h"

#ifndef TLBSIM_TEST_DATA
#error "TLBSIM_TEST_DATA must be the absolute path of tests/data"
#endif

#define TWO_SOCKET TLBSIM_TEST_DATA "/tiny-2socket.json"
#define NR_CPUS 8

enum { LAT_SMT = 1000, LAT_SOCKET = 1500, LAT_REMOTE = 2500 };
enum { XFER_SELF = 20, XFER_SMT = 40, XFER_SOCKET = 100, XFER_REMOTE = 300 };

#define MAX_DELIVERIES 64

struct rig {
	struct topology *topo;
	struct engine *engine;
	struct fabric *fabric;
	unsigned n;
	unsigned cpu[MAX_DELIVERIES];
	unsigned kind[MAX_DELIVERIES];
	uint64_t time[MAX_DELIVERIES];
};

static void record_delivery(void *ctx, unsigned cpu, unsigned kind)
{
	struct rig *r = ctx;

	cr_assert_lt(r->n, MAX_DELIVERIES);
	r->cpu[r->n] = cpu;
	r->kind[r->n] = kind;
	r->time[r->n] = engine_now(r->engine);
	r->n++;
}

static struct rig *rig_new(void)
{
	GError *err = NULL;
	struct rig *r = g_new0(struct rig, 1);
	cJSON *json = config_load_file(TWO_SOCKET, NULL, &err);

	cr_assert_not_null(json, "%s", err ? err->message : "?");
	r->topo = topology_from_json(json, TWO_SOCKET, &err);
	cJSON_Delete(json);
	cr_assert_not_null(r->topo, "%s", err ? err->message : "?");
	cr_assert_eq(topology_nr_cpus(r->topo), NR_CPUS);
	r->engine = engine_new(NR_CPUS + 1);
	r->fabric = fabric_new(r->engine, r->topo, record_delivery, r);
	return r;
}

static void rig_free(struct rig *r)
{
	fabric_free(r->fabric);
	engine_free(r->engine);
	topology_free(r->topo);
	g_free(r);
}

static void no_event(void *target, uint64_t arg)
{
	(void)target;
	(void)arg;
}

/* The distance classes this file relies on, checked once. */
Test(fabric, test_topology_distances)
{
	struct rig *r = rig_new();

	cr_expect_eq(topology_distance(r->topo, 0, 4), DIST_SMT);
	cr_expect_eq(topology_distance(r->topo, 0, 1), DIST_SOCKET);
	cr_expect_eq(topology_distance(r->topo, 0, 5), DIST_SOCKET);
	cr_expect_eq(topology_distance(r->topo, 0, 2), DIST_REMOTE);
	cr_expect_eq(topology_distance(r->topo, 0, 7), DIST_REMOTE);
	cr_expect_eq(topology_distance(r->topo, 2, 6), DIST_SMT);
	rig_free(r);
}

/* ---- IPIs ------------------------------------------------------------------ */

Test(fabric_ipi, latency_by_distance)
{
	struct rig *r = rig_new();

	cr_expect_eq(fabric_ipi_latency(r->fabric, 0, 4), LAT_SMT);
	cr_expect_eq(fabric_ipi_latency(r->fabric, 4, 0), LAT_SMT);
	cr_expect_eq(fabric_ipi_latency(r->fabric, 0, 1), LAT_SOCKET);
	cr_expect_eq(fabric_ipi_latency(r->fabric, 5, 0), LAT_SOCKET);
	cr_expect_eq(fabric_ipi_latency(r->fabric, 0, 2), LAT_REMOTE);
	cr_expect_eq(fabric_ipi_latency(r->fabric, 7, 0), LAT_REMOTE);
	cr_expect_eq(fabric_ipi_latency(r->fabric, 3, 7), LAT_SMT);
	rig_free(r);
}

Test(fabric_ipi, arrival_is_send_time_plus_latency)
{
	struct rig *r = rig_new();

	cr_expect_eq(fabric_send_ipi(r->fabric, 0, 4, 100), 100 + LAT_SMT);
	cr_expect_eq(fabric_send_ipi(r->fabric, 0, 1, 100), 100 + LAT_SOCKET);
	cr_expect_eq(fabric_send_ipi(r->fabric, 0, 2, 100), 100 + LAT_REMOTE);
	/* @when may lie after now. */
	cr_expect_eq(fabric_send_ipi(r->fabric, 6, 0, 7000), 7000 + LAT_REMOTE);
	cr_expect_eq(engine_pending(r->engine), 4);
	/* Nothing delivered before the engine runs. */
	cr_expect_eq(r->n, 0);
	rig_free(r);
}

Test(fabric_ipi, events_land_in_the_target_lane)
{
	struct rig *r = rig_new();

	fabric_send_ipi(r->fabric, 0, 4, 0);
	fabric_send_ipi(r->fabric, 0, 1, 10);
	fabric_send_ipi(r->fabric, 1, 2, 20);
	cr_expect_eq(engine_lane_next_time(r->engine, fabric_cpu_lane(4)), LAT_SMT);
	cr_expect_eq(engine_lane_next_time(r->engine, fabric_cpu_lane(1)), 10 + LAT_SOCKET);
	cr_expect_eq(engine_lane_next_time(r->engine, fabric_cpu_lane(2)), 20 + LAT_REMOTE);
	/* Not the sender's lane, not the global lane, not anybody else's. */
	cr_expect_eq(engine_lane_next_time(r->engine, LANE_GLOBAL), ENGINE_NEVER);
	cr_expect_eq(engine_lane_next_time(r->engine, fabric_cpu_lane(0)), ENGINE_NEVER);
	for (unsigned c = 3; c < NR_CPUS; c++)
		if (c != 4)
			cr_expect_eq(engine_lane_next_time(r->engine, fabric_cpu_lane(c)),
				     ENGINE_NEVER, "cpu %u", c);
	/* Arrivals are tracked: they bound every other core's run-ahead. */
	cr_expect_eq(engine_tracked_next_time(r->engine), LAT_SMT);
	rig_free(r);
}

Test(fabric_ipi, delivered_once_at_arrival_to_the_target)
{
	struct rig *r = rig_new();

	fabric_send_ipi(r->fabric, 0, 2, 0);    /* 2500 */
	fabric_send_ipi(r->fabric, 0, 4, 0);    /* 1000 */
	fabric_send_ipi(r->fabric, 0, 1, 0);    /* 1500 */
	fabric_send_ipi(r->fabric, 5, 1, 1200); /* 2200: 5 and 1 are siblings */
	engine_run(r->engine, ENGINE_NEVER, ENGINE_NEVER);

	static const struct {
		unsigned cpu;
		uint64_t time;
	} want[] = {
	    {4, LAT_SMT},
	    {1, LAT_SOCKET},
	    {1, 1200 + LAT_SMT},
	    {2, LAT_REMOTE},
	};
	cr_assert_eq(r->n, G_N_ELEMENTS(want));
	for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
		cr_expect_eq(r->cpu[i], want[i].cpu, "delivery %zu", i);
		cr_expect_eq(r->time[i], want[i].time, "delivery %zu", i);
	}
	cr_expect_eq(engine_events_dispatched(r->engine), G_N_ELEMENTS(want));
	cr_expect_eq(engine_pending(r->engine), 0);
	rig_free(r);
}

/* Two interrupts from one sender to one target arrive in sending order. */
Test(fabric_ipi, same_pair_same_time_is_fifo)
{
	struct rig *r = rig_new();

	fabric_send_ipi(r->fabric, 3, 0, 50);
	fabric_send_ipi(r->fabric, 7, 0, 50);
	fabric_send_ipi(r->fabric, 3, 0, 50);
	engine_run(r->engine, ENGINE_NEVER, ENGINE_NEVER);
	cr_assert_eq(r->n, 3);
	for (unsigned i = 0; i < 3; i++) {
		cr_expect_eq(r->cpu[i], 0);
		cr_expect_eq(r->time[i], 50 + LAT_REMOTE);
	}
	rig_free(r);
}

/* An IPI sent from inside an event, at the current time. */
static void send_from_event(void *target, uint64_t arg)
{
	struct rig *r = target;

	cr_expect_eq(fabric_send_ipi(r->fabric, (unsigned)arg, 0, engine_now(r->engine)),
		     engine_now(r->engine) + LAT_SOCKET);
}

Test(fabric_ipi, sent_from_an_event)
{
	struct rig *r = rig_new();

	engine_schedule(r->engine, 300, fabric_cpu_lane(1), send_from_event, r, 1);
	engine_schedule(r->engine, 10, LANE_GLOBAL, no_event, NULL, 0);
	engine_run(r->engine, ENGINE_NEVER, ENGINE_NEVER);
	cr_assert_eq(r->n, 1);
	cr_expect_eq(r->cpu[0], 0);
	cr_expect_eq(r->time[0], 300 + LAT_SOCKET);
	rig_free(r);
}

Test(fabric_ipi, send_to_self_aborts, .signal = SIGABRT)
{
	struct rig *r = rig_new();
	fabric_send_ipi(r->fabric, 3, 3, 0);
}

/* ---- cache lines ------------------------------------------------------------ */

Test(fabric_line, transfer_by_distance)
{
	struct rig *r = rig_new();

	cr_expect_eq(fabric_line_transfer(r->fabric, 0, 0), XFER_SELF);
	cr_expect_eq(fabric_line_transfer(r->fabric, 0, 4), XFER_SMT);
	cr_expect_eq(fabric_line_transfer(r->fabric, 4, 0), XFER_SMT);
	cr_expect_eq(fabric_line_transfer(r->fabric, 0, 1), XFER_SOCKET);
	cr_expect_eq(fabric_line_transfer(r->fabric, 5, 0), XFER_SOCKET);
	cr_expect_eq(fabric_line_transfer(r->fabric, 0, 2), XFER_REMOTE);
	cr_expect_eq(fabric_line_transfer(r->fabric, 6, 1), XFER_REMOTE);
	rig_free(r);
}

Test(fabric_line, rmw_costs_follow_the_last_writer)
{
	struct rig *r = rig_new();
	struct cacheline line = CACHELINE_INIT;

	cr_expect_eq(line.writer, -1);
	cr_expect_eq(line.busy_until, 0);

	/* Fresh line: the uncontended cost, whoever comes first. */
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 5, 100), 100 + XFER_SELF);
	cr_expect_eq(line.writer, 5);
	cr_expect_eq(line.busy_until, 100 + XFER_SELF);
	/* Same CPU again. */
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 5, 200), 200 + XFER_SELF);
	/* Its sibling (1), then the other socket (2, 6: siblings), then back. */
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 1, 300), 300 + XFER_SMT);
	cr_expect_eq(line.writer, 1);
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 2, 1000), 1000 + XFER_REMOTE);
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 6, 2000), 2000 + XFER_SMT);
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 7, 3000), 3000 + XFER_SOCKET);
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 0, 4000), 4000 + XFER_REMOTE);
	cr_expect_eq(line.writer, 0);
	cr_expect_eq(line.busy_until, 4000 + XFER_REMOTE);

	/* A second fresh line does not inherit the first one's writer. */
	struct cacheline other = CACHELINE_INIT;
	cr_expect_eq(fabric_line_rmw(r->fabric, &other, 2, 4000), 4000 + XFER_SELF);
	rig_free(r);
}

Test(fabric_line, back_to_back_rmws_queue)
{
	struct rig *r = rig_new();
	struct cacheline line = CACHELINE_INIT;

	uint64_t first = fabric_line_rmw(r->fabric, &line, 0, 1000);
	cr_expect_eq(first, 1000 + XFER_SELF);
	/* cpu 2 asks at 1005, while the line is busy until 1020: it waits. */
	uint64_t second = fabric_line_rmw(r->fabric, &line, 2, 1005);
	cr_expect_eq(second, first + XFER_REMOTE);
	/* cpu 1 asks at 1010, behind both. */
	uint64_t third = fabric_line_rmw(r->fabric, &line, 1, 1010);
	cr_expect_eq(third, second + XFER_REMOTE);
	cr_expect_eq(line.busy_until, third);
	cr_expect_eq(line.writer, 1);
	/* Asking exactly at busy_until does not wait. */
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 5, third), third + XFER_SMT);
	/* Long after: no queueing. */
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 5, 100000), 100000 + XFER_SELF);
	rig_free(r);
}

/*
 * A load pulls the line from its last writer, after any RMW in flight (the
 * writer's own load is free), but leaves the line where it was: the next RMW
 * by the writer costs the self transfer and starts at once.
 */
Test(fabric_line, read_pulls_the_line_but_does_not_own_it)
{
	struct rig *r = rig_new();
	struct cacheline line = CACHELINE_INIT;

	cr_expect_eq(fabric_line_read(r->fabric, &line, 2, 100), 100 + XFER_SELF, "nobody's");
	uint64_t written = fabric_line_rmw(r->fabric, &line, 0, 1000);
	cr_expect_eq(fabric_line_read(r->fabric, &line, 2, 1005), written + XFER_REMOTE,
		     "waits for the RMW in flight");
	cr_expect_eq(fabric_line_read(r->fabric, &line, 1, 2000), 2000 + XFER_SOCKET);
	cr_expect_eq(fabric_line_read(r->fabric, &line, 0, 2000), 2000);
	cr_expect_eq(line.writer, 0);
	cr_expect_eq(line.busy_until, written);
	cr_expect_eq(fabric_line_rmw(r->fabric, &line, 0, 3000), 3000 + XFER_SELF);
	rig_free(r);
}

Test(fabric, free_null_is_noop)
{
	fabric_free(NULL);
}

/* A signal's kind reaches the receiver as the sender gave it; an IPI's is 0. */
Test(fabric_ipi, a_signal_carries_its_kind)
{
	struct rig *r = rig_new();

	fabric_send_signal(r->fabric, 0, 4, 0, 7); /* LAT_SMT */
	fabric_send_ipi(r->fabric, 0, 1, 0);        /* LAT_SOCKET */
	engine_run(r->engine, ENGINE_NEVER, ENGINE_NEVER);
	cr_assert_eq(r->n, 2);
	cr_expect_eq(r->cpu[0], 4);
	cr_expect_eq(r->kind[0], 7);
	cr_expect_eq(r->time[0], LAT_SMT);
	cr_expect_eq(r->cpu[1], 1);
	cr_expect_eq(r->kind[1], 0);
	rig_free(r);
}
