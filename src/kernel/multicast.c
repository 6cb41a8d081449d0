/*
 * The "multicast" transport: Barrelfish's NUMA-aware multicast (Baumann et
 * al., "The Multikernel", SOSP'09; beyond.md section 7, [B1]-[B3]) carrying a
 * Linux flush: unmap agreement by messages between per-core monitors, not IPIs.
 *
 * Models: the initiator writes one message per socket that has targets, to
 * that socket's aggregator (its lowest-numbered target), the other sockets
 * first and its own last (the farthest packages first: the machine files
 * know one remote distance, so "farthest" is "not the initiator's socket",
 * then socket order).  A receiver handles a message at its next poll
 * (message_poll: no interrupt entry or exit, only the handling's cycles,
 * taken from its task like an interrupt's).  The aggregator forwards the
 * request to its socket's other targets, then runs flush_tlb_func(); each of
 * them flushes and replies to it; at its first poll after the last reply it
 * reads them and replies once to the initiator, which spins on its
 * aggregators' replies in send order and goes on after the last (a one-phase
 * commit: completion remote_flush_done).
 * Costs: messages are URPC channel writes: one cache line per channel, a
 * channel per pair of cores, so nothing else contends for it.  A send is the
 * sender's write to a line the receiver read last (one line transfer, the
 * sender stalls for it as for a csd's RMW); a receive is the receiver's read
 * of a line the sender wrote (one line transfer, in its handling).  A poll
 * finds a message half an interval (multicast_poll_ns) after it landed on
 * average; the model charges that mean, so no phase between the CPUs' polls
 * is invented.  The aggregator's forwarding and aggregation cost only their
 * messages' line transfers: they are stores and loads, nothing else.
 * Simplifies: empty polls cost nothing (an L1 hit on an unchanged line); an
 * aggregator reads all its replies at one poll, one line transfer each; a
 * receiver with interrupts off, or in a handler, handles the message when
 * it ends (smp_local_irq()).
 * Invariant: the initiator goes on only after every target has run its
 * flush and every reply has reached it.
 */
#include <glib.h>
#include "tlbsim/kernel/shootdown.h"
#include "tlbsim/kernel/smp.h"

struct mc_flush;

/* One socket's share: its aggregator and the targets it forwards to. */
struct mc_group {
	struct mc_flush *f;
	unsigned *cpus; /* cpus[0] is the aggregator */
	unsigned nr;
	unsigned pending;       /* the aggregator's own flush and its peers' replies */
	uint64_t *replied;      /* as cpus: the aggregator's flush end, the peers' replies */
	uint64_t reply_written; /* the aggregator's reply to the initiator */
};

struct mc_flush {
	struct kernel *k;
	struct flush_tlb_info *info;
	unsigned initiator;
	uint64_t sent_at; /* the initiator's last send: its spin starts there */
	unsigned nr_groups, pending;
	struct mc_group *groups; /* in send order */
	unsigned *cpus;          /* every target, grouped */
	uint64_t *replied;
};

/* When a receiver's poll finds a message that landed at @landed. */
static uint64_t mc_noticed(const struct kernel *k, uint64_t landed)
{
	uint64_t poll = topology_ns_to_cycles(k->machine->topology, k->policy->multicast_poll_ns);
	return landed + poll / 2;
}

static uint64_t mc_transfer(const struct kernel *k, unsigned from, unsigned to)
{
	return fabric_line_transfer(k->machine->fabric, from, to);
}

static uint64_t mc_request(struct kernel *k, struct cpu *cpu, uint64_t now, void *data);
static uint64_t mc_collect(struct kernel *k, struct cpu *cpu, uint64_t now, void *data);

static void mc_request_noticed(void *target, uint64_t cpu_id)
{
	struct mc_group *g = target;
	smp_local_irq(g->f->k, &g->f->k->machine->cpus[cpu_id], mc_request, g);
}

static void mc_replies_noticed(void *target, uint64_t cpu_id)
{
	struct mc_group *g = target;
	smp_local_irq(g->f->k, &g->f->k->machine->cpus[cpu_id], mc_collect, g);
}

/* @from writes a message into @to's channel from @now: returns when the
 * write is done, the message landed. */
static uint64_t mc_send(struct kernel *k, unsigned from, unsigned to, uint64_t now)
{
	k->machine->cpus[from].counters.multicast_messages++;
	return now + mc_transfer(k, to, from);
}

/* mc_send() of @g's request; @to's poll finds it and runs mc_request(). */
static uint64_t mc_send_request(struct kernel *k, struct mc_group *g, unsigned from, unsigned to,
				uint64_t now)
{
	uint64_t landed = mc_send(k, from, to, now);
	engine_schedule(k->engine, kernel_global_time(k, mc_noticed(k, landed)),
			fabric_cpu_lane(to), mc_request_noticed, g, to);
	return landed;
}

static void mc_flush_free(struct kernel *k, struct mc_flush *f)
{
	kernel_release(k, f->groups);
	kernel_release(k, f->cpus);
	kernel_release(k, f->replied);
	kernel_release(k, f);
}

/* A group's reply is written: after the last, the initiator's spin ends. */
static void mc_group_replied(struct kernel *k, struct mc_group *g, uint64_t written)
{
	struct mc_flush *f = g->f;
	g->reply_written = written;
	if (--f->pending > 0)
		return;
	uint64_t t = f->sent_at;
	for (unsigned i = 0; i < f->nr_groups; i++)
		t = MAX(t, f->groups[i].reply_written) +
		    mc_transfer(k, f->groups[i].cpus[0], f->initiator);
	struct flush_tlb_info *info = f->info;
	mc_flush_free(k, f);
	shootdown_complete(k, info, t);
}

/* @g->cpus[@slot] is done at @at: the aggregator's own flush (slot 0) or a
 * peer's reply written.  After the last, the aggregator's poll finds them. */
static void mc_group_one_done(struct kernel *k, struct mc_group *g, unsigned slot, uint64_t at)
{
	g->replied[slot] = at;
	if (--g->pending > 0)
		return;
	uint64_t last = 0;
	for (unsigned i = 0; i < g->nr; i++)
		last = MAX(last, g->replied[i]);
	unsigned agg = g->cpus[0];
	engine_schedule(k->engine, kernel_global_time(k, mc_noticed(k, last)), fabric_cpu_lane(agg),
			mc_replies_noticed, g, agg);
}

/* A request found at a poll: read it, forward it (the aggregator), flush,
 * and reply (the aggregator only when it has no peers: else mc_collect()). */
static uint64_t mc_request(struct kernel *k, struct cpu *cpu, uint64_t now, void *data)
{
	struct mc_group *g = data;
	struct mc_flush *f = g->f;
	unsigned agg = g->cpus[0];
	bool aggregator = cpu->id == agg;
	uint64_t t = now + mc_transfer(k, aggregator ? f->initiator : agg, cpu->id);
	cpu->counters.multicast_requests++;
	if (aggregator && g->nr > 1)
		cpu->counters.multicast_aggregations++;
	for (unsigned i = 1; aggregator && i < g->nr; i++)
		t = mc_send_request(k, g, cpu->id, g->cpus[i], t);
	t += shootdown_remote_flush(k, cpu, t, f->info);
	if (aggregator && g->nr == 1) {
		uint64_t written = mc_send(k, cpu->id, f->initiator, t);
		mc_group_replied(k, g, written); /* may free g */
		return written - now;
	}
	if (aggregator) {
		mc_group_one_done(k, g, 0, t);
		return t - now;
	}
	unsigned slot = 1;
	while (g->cpus[slot] != cpu->id)
		slot++;
	uint64_t written = mc_send(k, cpu->id, agg, t);
	mc_group_one_done(k, g, slot, written);
	return written - now;
}

/* Every peer has replied: read the replies, reply once to the initiator. */
static uint64_t mc_collect(struct kernel *k, struct cpu *cpu, uint64_t now, void *data)
{
	struct mc_group *g = data;
	uint64_t t = now;
	for (unsigned i = 1; i < g->nr; i++)
		t = MAX(t, g->replied[i]) + mc_transfer(k, g->cpus[i], cpu->id);
	uint64_t written = mc_send(k, cpu->id, g->f->initiator, t);
	mc_group_replied(k, g, written); /* may free g */
	return written - now;
}

/* The send order: other sockets first (in socket order), the initiator's last. */
static unsigned mc_socket_rank(const struct topology *topo, unsigned self_socket, unsigned socket)
{
	return socket == self_socket ? topo->sockets : socket;
}

/* Group @targets by socket into @f, in send order; the groups' cpus keep the
 * targets' order, so each aggregator is its socket's first target. */
static void mc_group_targets(struct kernel *k, struct mc_flush *f, const unsigned *targets,
			     unsigned nr)
{
	const struct topology *topo = k->machine->topology;
	unsigned self = topology_cpu_socket(topo, f->initiator);
	unsigned *count = g_new0(unsigned, topo->sockets + 1);
	for (unsigned i = 0; i < nr; i++)
		count[mc_socket_rank(topo, self, topology_cpu_socket(topo, targets[i]))]++;
	f->groups = kernel_alloc(k, (topo->sockets + 1) * sizeof(*f->groups));
	unsigned first = 0;
	for (unsigned r = 0; r <= topo->sockets; r++) {
		if (count[r] == 0)
			continue;
		f->groups[f->nr_groups++] = (struct mc_group){
		    .f = f,
		    .cpus = f->cpus + first,
		    .replied = f->replied + first,
		    .nr = 0,
		    .pending = count[r],
		    .reply_written = UINT64_MAX,
		};
		count[r] = f->nr_groups; /* now: the group's index + 1 */
		first += f->groups[f->nr_groups - 1].pending;
	}
	for (unsigned i = 0; i < nr; i++) {
		unsigned r = mc_socket_rank(topo, self, topology_cpu_socket(topo, targets[i]));
		struct mc_group *g = &f->groups[count[r] - 1];
		g->cpus[g->nr++] = targets[i];
	}
	g_free(count);
}

static void multicast_send(struct kernel *k, struct cpu *cpu, const unsigned *targets, unsigned nr,
			   struct flush_tlb_info *info, uint64_t now)
{
	if (nr == 0) {
		shootdown_complete(k, info, now);
		return;
	}
	struct mc_flush *f = kernel_alloc(k, sizeof(*f));
	*f = (struct mc_flush){.k = k, .info = info, .initiator = cpu->id};
	f->cpus = kernel_alloc(k, nr * sizeof(*f->cpus));
	f->replied = kernel_alloc(k, nr * sizeof(*f->replied));
	mc_group_targets(k, f, targets, nr);
	f->pending = f->nr_groups;
	uint64_t t = now;
	for (unsigned i = 0; i < f->nr_groups; i++)
		t = mc_send_request(k, &f->groups[i], cpu->id, f->groups[i].cpus[0], t);
	f->sent_at = t;
	info->local_done = t + info->local_cost; /* the local flush runs after the messages */
}

const struct flush_transport_ops flush_transport_multicast = {
    .name = "multicast",
    .imitates = "Barrelfish's NUMA-aware multicast (SOSP'09): per-socket aggregators, "
		"URPC messages polled by the monitors",
    .local_flush_start = LOCAL_FLUSH_BY_TRANSPORT,
    .send = multicast_send,
};
