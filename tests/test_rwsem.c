/*
 * Reader-writer semaphores (src/kernel/rwsem.c), driven by hand on
 * tests/data/tiny-2socket.json: seen from cpu 0, cpu 4 is its SMT sibling,
 * cpu 1 shares its socket, cpu 2 is on the other socket; a line moves
 * self/smt/socket/remote = 20/40/100/300 cycles (a line nobody wrote yet
 * costs the self transfer).  Grants are recorded with their times, so every
 * figure below is the sum of those transfers.  The last tests give the
 * semaphore a scheduler (two kernel threads on tiny-2cpu.json), so that its
 * waiters sleep and are woken as in a simulation.
 */
#include <criterion/criterion.h>
#include <glib.h>
#include "support.h"
#include "tlbsim/kernel/rwsem.h"
#include "tlbsim/kernel/sched.h"

enum { SELF = 20, SMT = 40, SOCKET = 100, REMOTE = 300 };
#define MAX_GRANTS 64

struct grant {
	unsigned cpu;
	uint64_t time;
};

struct rig {
	struct topology *topology;
	struct kernel k;
	unsigned n;
	struct grant grants[MAX_GRANTS];
	struct ctx {
		struct rig *rig;
		unsigned cpu;
	} ctx[8];
};

static void no_deliver(void *ctx, unsigned cpu, unsigned kind)
{
	(void)kind;
	(void)ctx;
	(void)cpu;
}

static void rig_init(struct rig *r)
{
	*r = (struct rig){.topology = support_topology("tiny-2socket.json")};
	r->k.engine = engine_new(NR_LANES(topology_nr_cpus(r->topology)));
	r->k.machine = machine_new(r->topology, r->k.engine, no_deliver, NULL);
	kernel_init_inflight(&r->k);
	for (unsigned c = 0; c < 8; c++)
		r->ctx[c] = (struct ctx){.rig = r, .cpu = c};
}

static void rig_free(struct rig *r)
{
	/* Every waiter was granted: nothing left in flight. */
	cr_expect_eq(g_hash_table_size(r->k.inflight), 0);
	kernel_free_inflight(&r->k);
	machine_free(r->k.machine);
	engine_free(r->k.engine);
	topology_free(r->topology);
}

static void record(struct kernel *k, void *ctx, uint64_t time)
{
	(void)k;
	struct ctx *c = ctx;
	struct rig *r = c->rig;
	cr_assert_lt(r->n, MAX_GRANTS);
	r->grants[r->n++] = (struct grant){.cpu = c->cpu, .time = time};
}

static struct cpu *cpu(struct rig *r, unsigned id)
{
	return &r->k.machine->cpus[id];
}

static void rd(struct rig *r, struct rw_semaphore *sem, unsigned c, uint64_t now)
{
	down_read(&r->k, cpu(r, c), sem, now, (struct kcont){.fn = record, .ctx = &r->ctx[c]});
}

static void wr(struct rig *r, struct rw_semaphore *sem, unsigned c, uint64_t now)
{
	down_write(&r->k, cpu(r, c), sem, now, (struct kcont){.fn = record, .ctx = &r->ctx[c]});
}

static void expect_grant(const struct rig *r, unsigned i, unsigned c, uint64_t time)
{
	cr_assert_gt(r->n, i, "grant %u never came", i);
	cr_expect_eq(r->grants[i].cpu, c, "grant %u went to cpu %u, not %u", i, r->grants[i].cpu, c);
	cr_expect_eq(r->grants[i].time, time, "grant %u at %lu, not %lu", i,
		     (unsigned long)r->grants[i].time, (unsigned long)time);
}

Test(rwsem, topology_distances)
{
	struct rig r;
	rig_init(&r);
	const struct fabric *f = r.k.machine->fabric;
	cr_assert_eq(fabric_line_transfer(f, 0, 4), SMT);
	cr_assert_eq(fabric_line_transfer(f, 0, 1), SOCKET);
	cr_assert_eq(fabric_line_transfer(f, 1, 4), SOCKET);
	cr_assert_eq(fabric_line_transfer(f, 0, 2), REMOTE);
	cr_assert_eq(fabric_line_transfer(f, 2, 1), REMOTE);
	rig_free(&r);
}

/*
 * Two readers share the lock at once, but not its line: the second one's RMW
 * waits for the first's and pulls the line over from cpu 0.
 */
Test(rwsem, readers_share_the_lock_and_bounce_its_line)
{
	struct rig r;
	rig_init(&r);
	struct rw_semaphore sem;
	init_rwsem(&sem);
	rd(&r, &sem, 0, 0);
	rd(&r, &sem, 1, 0);
	cr_assert_eq(r.n, 2, "both granted without waiting for each other");
	expect_grant(&r, 0, 0, SELF);
	expect_grant(&r, 1, 1, SELF + SOCKET);
	cr_expect_eq(sem.readers, 2);
	cr_expect_eq(rwsem_nr_waiters(&sem), 0);
	/* Releasing is an RMW too: cpu 0 pulls the line back. */
	cr_expect_eq(up_read(&r.k, cpu(&r, 0), &sem, 1000), 1000 + SOCKET);
	cr_expect_eq(up_read(&r.k, cpu(&r, 1), &sem, 2000), 2000 + SOCKET);
	cr_expect_eq(sem.readers, 0);
	rig_free(&r);
}

/*
 * A writer waits for every reader; the last release grants it, a line
 * transfer after the release's own RMW.
 */
Test(rwsem, writer_waits_for_the_readers)
{
	struct rig r;
	rig_init(&r);
	struct rw_semaphore sem;
	init_rwsem(&sem);
	rd(&r, &sem, 0, 0);
	rd(&r, &sem, 1, 0);
	wr(&r, &sem, 2, 50);
	cr_assert_eq(r.n, 2, "the writer waits");
	cr_expect_eq(rwsem_nr_waiters(&sem), 1);
	/* cpu 0 leaves (the line from cpu 1): the writer still waits. */
	cr_expect_eq(up_read(&r.k, cpu(&r, 0), &sem, 1000), 1000 + SOCKET);
	cr_assert_eq(r.n, 2);
	/* cpu 1 leaves (the line from cpu 0), and cpu 2 takes it across sockets. */
	cr_expect_eq(up_read(&r.k, cpu(&r, 1), &sem, 2000), 2000 + SOCKET);
	cr_assert_eq(r.n, 3);
	expect_grant(&r, 2, 2, 2000 + SOCKET + REMOTE);
	cr_expect(sem.writer);
	cr_expect_eq(sem.readers, 0);
	cr_expect_eq(rwsem_nr_waiters(&sem), 0);
	/* Readers wait for it in turn. */
	rd(&r, &sem, 0, 3000);
	cr_assert_eq(r.n, 3);
	cr_expect_eq(up_write(&r.k, cpu(&r, 2), &sem, 4000), 4000 + SELF);
	expect_grant(&r, 3, 0, 4000 + SELF + REMOTE);
	cr_expect_not(sem.writer);
	up_read(&r.k, cpu(&r, 0), &sem, 5000);
	rig_free(&r);
}

/*
 * down_read_trylock(): taken with one RMW when free or shared with readers;
 * refused, with a load and without queueing, while a writer holds it or
 * waits for it (the kernel's RWSEM_READ_FAILED_MASK).
 */
Test(rwsem, trylock_refuses_a_writer_held_or_waiting_lock_without_queueing)
{
	struct rig r;
	rig_init(&r);
	struct rw_semaphore sem;
	init_rwsem(&sem);
	uint64_t done = 0;
	cr_expect(down_read_trylock(&r.k, cpu(&r, 0), &sem, 0, &done));
	cr_expect_eq(done, SELF);
	cr_expect(down_read_trylock(&r.k, cpu(&r, 1), &sem, 100, &done));
	cr_expect_eq(done, 100 + SOCKET);
	cr_expect_eq(sem.readers, 2);
	/* A writer queues behind the two readers: new readers are refused. */
	wr(&r, &sem, 2, 200);
	cr_assert_eq(r.n, 0);
	cr_expect_not(down_read_trylock(&r.k, cpu(&r, 4), &sem, 300, &done));
	cr_expect_eq(done, 300 + SOCKET, "a load of the line cpu 1 wrote");
	cr_expect_eq(sem.readers, 2);
	cr_expect_eq(rwsem_nr_waiters(&sem), 1, "the refused reader did not queue");
	up_read(&r.k, cpu(&r, 0), &sem, 1000);
	uint64_t released = up_read(&r.k, cpu(&r, 1), &sem, 2000);
	cr_assert_eq(r.n, 1);
	expect_grant(&r, 0, 2, released + REMOTE);
	/* Held for writing: refused too, after the line's RMW in flight. */
	cr_expect_not(down_read_trylock(&r.k, cpu(&r, 0), &sem, released, &done));
	cr_expect_eq(done, released + REMOTE + REMOTE);
	cr_expect_eq(rwsem_nr_waiters(&sem), 0);
	uint64_t free_at = up_write(&r.k, cpu(&r, 2), &sem, 5000);
	cr_expect(down_read_trylock(&r.k, cpu(&r, 6), &sem, 6000, &done));
	cr_expect_eq(done, 6000 + SMT);
	cr_expect_gt(6000, free_at);
	up_read(&r.k, cpu(&r, 6), &sem, 7000);
	rig_free(&r);
}

/*
 * FIFO: a reader that comes after a queued writer waits for it even though
 * only readers hold the lock; the writer's release lets it in.
 */
Test(rwsem, reader_behind_a_queued_writer_waits)
{
	struct rig r;
	rig_init(&r);
	struct rw_semaphore sem;
	init_rwsem(&sem);
	rd(&r, &sem, 0, 0);
	wr(&r, &sem, 2, 10);
	rd(&r, &sem, 1, 30);
	cr_assert_eq(r.n, 1, "the writer waits for cpu 0, the reader for the writer");
	cr_expect_eq(rwsem_nr_waiters(&sem), 2);
	cr_expect_eq(up_read(&r.k, cpu(&r, 0), &sem, 500), 500 + SELF);
	cr_assert_eq(r.n, 2, "the writer only");
	expect_grant(&r, 1, 2, 500 + SELF + REMOTE);
	cr_expect_eq(rwsem_nr_waiters(&sem), 1);
	cr_expect_eq(up_write(&r.k, cpu(&r, 2), &sem, 1000), 1000 + SELF);
	cr_assert_eq(r.n, 3);
	expect_grant(&r, 2, 1, 1000 + SELF + REMOTE);
	up_read(&r.k, cpu(&r, 1), &sem, 2000);
	rig_free(&r);
}

/*
 * A release lets in every reader at the head of the queue, up to the next
 * writer, each with its own RMW in queue order; the readers behind that
 * writer wait for it.
 */
Test(rwsem, release_grants_the_readers_up_to_the_next_writer)
{
	struct rig r;
	rig_init(&r);
	struct rw_semaphore sem;
	init_rwsem(&sem);
	wr(&r, &sem, 0, 0);
	rd(&r, &sem, 1, 5);
	rd(&r, &sem, 4, 6);
	wr(&r, &sem, 2, 7);
	rd(&r, &sem, 5, 8);
	cr_assert_eq(r.n, 1);
	expect_grant(&r, 0, 0, SELF);
	cr_expect_eq(up_write(&r.k, cpu(&r, 0), &sem, 100), 100 + SELF);
	cr_assert_eq(r.n, 3);
	expect_grant(&r, 1, 1, 100 + SELF + SOCKET);
	expect_grant(&r, 2, 4, 100 + SELF + SOCKET + SOCKET);
	cr_expect_eq(sem.readers, 2);
	cr_expect_eq(rwsem_nr_waiters(&sem), 2);
	up_read(&r.k, cpu(&r, 1), &sem, 1000); /* 1000 + 100: the line at cpu 4 */
	cr_assert_eq(r.n, 3);
	/* The last reader out (the line at cpu 1) lets the writer in. */
	cr_expect_eq(up_read(&r.k, cpu(&r, 4), &sem, 2000), 2000 + SOCKET);
	expect_grant(&r, 3, 2, 2000 + SOCKET + REMOTE);
	cr_expect_eq(up_write(&r.k, cpu(&r, 2), &sem, 3000), 3000 + SELF);
	/* cpu 5 is on cpu 2's socket: thread 1 of core 1 of socket 1. */
	expect_grant(&r, 4, 5, 3000 + SELF + fabric_line_transfer(r.k.machine->fabric, 2, 5));
	up_read(&r.k, cpu(&r, 5), &sem, 4000);
	rig_free(&r);
}

/* A waiter that asked later than the release (its time ahead of the clock)
 * is granted from when it asked, not before. */
Test(rwsem, grant_never_precedes_the_request)
{
	struct rig r;
	rig_init(&r);
	struct rw_semaphore sem;
	init_rwsem(&sem);
	wr(&r, &sem, 0, 0);
	rd(&r, &sem, 1, 5000);
	cr_expect_eq(up_write(&r.k, cpu(&r, 0), &sem, 100), 100 + SELF);
	expect_grant(&r, 1, 1, 5000 + SOCKET);
	up_read(&r.k, cpu(&r, 1), &sem, 6000);
	rig_free(&r);
}

/*
 * Busy lines queue RMWs even without exclusion: a release's RMW that starts
 * while the line is still busy with another's waits for it.
 */
Test(rwsem, release_waits_for_the_busy_line)
{
	struct rig r;
	rig_init(&r);
	struct rw_semaphore sem;
	init_rwsem(&sem);
	rd(&r, &sem, 0, 0);     /* line busy until 20 */
	rd(&r, &sem, 2, 0);     /* until 20 + 300 */
	cr_expect_eq(up_read(&r.k, cpu(&r, 0), &sem, 100), SELF + REMOTE + REMOTE);
	up_read(&r.k, cpu(&r, 2), &sem, 1000);
	rig_free(&r);
}

/* downgrade_write(): the writer becomes a reader and the readers queued at
 * the head come in with it; a queued writer still waits for them all. */
Test(rwsem, downgrade_lets_the_queued_readers_in)
{
	struct rig r;
	rig_init(&r);
	struct rw_semaphore sem;
	init_rwsem(&sem);
	wr(&r, &sem, 0, 0);
	rd(&r, &sem, 1, 10);
	wr(&r, &sem, 2, 20);
	cr_expect_eq(downgrade_write(&r.k, cpu(&r, 0), &sem, 100), 100 + SELF);
	cr_assert_eq(r.n, 2);
	expect_grant(&r, 1, 1, 100 + SELF + SOCKET);
	cr_expect_not(sem.writer);
	cr_expect_eq(sem.readers, 2);
	cr_expect_eq(rwsem_nr_waiters(&sem), 1);
	up_read(&r.k, cpu(&r, 0), &sem, 1000);
	cr_assert_eq(r.n, 2);
	cr_expect_eq(up_read(&r.k, cpu(&r, 1), &sem, 2000), 2000 + SOCKET);
	expect_grant(&r, 2, 2, 2000 + SOCKET + REMOTE);
	up_write(&r.k, cpu(&r, 2), &sem, 3000);
	rig_free(&r);
}

/*
 * Determinism and exclusion: a mixed sequence of requests and releases on
 * the eight CPUs (drawn from a fixed LCG, not the host) gives the same grants,
 * to the cycle, twice; and no write hold overlaps any other hold.
 */
struct hold {
	unsigned cpu;
	bool write;
	uint64_t from, to;
};

enum { MAX_HOLDS = 256 };

struct mixed {
	struct hold holds[MAX_HOLDS];
	unsigned nr_holds;
};

static void mixed_release(struct rig *r, struct rw_semaphore *sem, struct mixed *m,
			  unsigned c, bool write, uint64_t now, unsigned grant)
{
	uint64_t from = r->grants[grant].time, at = MAX(now, from);
	uint64_t to = (write ? up_write : up_read)(&r->k, cpu(r, c), sem, at);
	cr_assert_lt(m->nr_holds, MAX_HOLDS);
	m->holds[m->nr_holds++] = (struct hold){.cpu = c, .write = write, .from = from, .to = to};
}

static void mixed_run(struct rig *r, struct mixed *m)
{
	struct rw_semaphore sem;
	init_rwsem(&sem);
	uint64_t x = 12345, now = 0;
	/* Per CPU: -1 idle, else the index its grant will have (or has). */
	int grant[8];
	bool write[8] = {false};
	unsigned asked = 0; /* requests made: grants come in request order per CPU */
	for (unsigned c = 0; c < 8; c++)
		grant[c] = -1;
	for (unsigned step = 0; step < 400 && asked < MAX_GRANTS; step++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		unsigned c = (unsigned)(x >> 33) % 8;
		now += (x >> 20) % 64;
		if (grant[c] == -1) {
			write[c] = (x >> 40) % 4 == 0;
			grant[c] = -2; /* asked, index unknown until granted */
			asked++;
			(write[c] ? wr : rd)(r, &sem, c, now);
			continue;
		}
		/* Release it if its grant has come (the latest grant of c). */
		int g = -1;
		for (unsigned i = 0; i < r->n; i++)
			if (r->grants[i].cpu == c)
				g = (int)i;
		if (g < 0)
			continue;
		mixed_release(r, &sem, m, c, write[c], now, (unsigned)g);
		r->grants[g].cpu = 100 + c; /* used up */
		grant[c] = -1;
	}
	/* Drain: release every holder until nobody holds or waits. */
	for (bool any = true; any;) {
		any = false;
		for (unsigned i = 0; i < r->n; i++) {
			unsigned c = r->grants[i].cpu;
			if (c >= 8)
				continue;
			mixed_release(r, &sem, m, c, write[c], now, i);
			r->grants[i].cpu = 100 + c;
			grant[c] = -1;
			any = true;
		}
	}
	cr_expect_eq(r->n, asked, "every request was granted once");
	cr_expect_eq(sem.readers, 0);
	cr_expect_not(sem.writer);
	cr_expect_eq(rwsem_nr_waiters(&sem), 0);
}

Test(rwsem, same_requests_same_grants_and_writers_exclusive)
{
	struct rig a, b;
	struct mixed ma = {0}, mb = {0};
	rig_init(&a);
	rig_init(&b);
	mixed_run(&a, &ma);
	mixed_run(&b, &mb);
	cr_assert_gt(a.n, 20, "the sequence granted something");
	cr_assert_eq(a.n, b.n);
	for (unsigned i = 0; i < a.n; i++) {
		cr_expect_eq(a.grants[i].cpu, b.grants[i].cpu, "grant %u", i);
		cr_expect_eq(a.grants[i].time, b.grants[i].time, "grant %u", i);
	}
	unsigned writes = 0, shared = 0;
	for (unsigned i = 0; i < ma.nr_holds; i++) {
		const struct hold *h = &ma.holds[i];
		writes += h->write;
		for (unsigned j = 0; j < ma.nr_holds; j++) {
			const struct hold *o = &ma.holds[j];
			bool overlap = i != j && h->from < o->to && o->from < h->to;
			cr_expect(!(overlap && (h->write || o->write)),
				  "hold %u (cpu %u, %s, %lu-%lu) overlaps hold %u (cpu %u, %lu-%lu)", i,
				  h->cpu, h->write ? "write" : "read", (unsigned long)h->from,
				  (unsigned long)h->to, j, o->cpu, (unsigned long)o->from,
				  (unsigned long)o->to);
			shared += overlap && !h->write && !o->write;
		}
	}
	cr_expect_gt(writes, 0, "the sequence has writers");
	cr_expect_gt(shared, 0, "and readers sharing the lock");
	rig_free(&a);
	rig_free(&b);
}

/* --------------------------------------------------------------------------
 * Sleeping waiters, with a scheduler
 * ------------------------------------------------------------------------ */

/*
 * tiny-2cpu.json (one socket, two cores: a line moves 100 cycles between
 * them, an IPI takes 1500, a switch 2000) with linux-4.5's policy and two
 * kernel threads, the holder pinned to cpu 0 and the waiter to cpu 1.  The
 * holder takes the lock on its first run, holds it HOLD cycles and releases
 * it; the waiter asks ASK_AFTER into its first run, sleeps, and once granted
 * holds the lock for HOLD cycles too.  Every time below is a sum of the
 * topology's costs from the release's RMW on.
 */
#define HOLD 10000
#define ASK_AFTER 1000

struct sleep_rig {
	struct topology *topology;
	struct policy *policy;
	struct kernel k;
	struct rw_semaphore sem;
	bool holder_writes, waiter_writes;
	struct task holder, waiter;
	unsigned holder_runs, waiter_runs;
	uint64_t released;      /* the holder's release RMW done */
	uint64_t waiter_asked;  /* when the waiter called down_*() */
	uint64_t waiter_granted;
	bool waiter_slept;
};

static void take(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, bool write,
		 uint64_t now, struct kcont granted)
{
	if (write)
		down_write(k, cpu, sem, now, granted);
	else
		down_read(k, cpu, sem, now, granted);
}

static uint64_t release(struct kernel *k, struct cpu *cpu, struct rw_semaphore *sem, bool write,
			uint64_t now)
{
	return write ? up_write(k, cpu, sem, now) : up_read(k, cpu, sem, now);
}

static void no_ipi_delivery(void *ctx, unsigned cpu, unsigned kind)
{
	(void)kind;
	(void)ctx;
	cr_assert_fail("cpu %u got a delivered IPI: the wakeup is priced, not sent", cpu);
}

static void holder_granted(struct kernel *k, void *ctx, uint64_t time)
{
	(void)ctx;
	sched_continue_at(k, &k->machine->cpus[0], time + HOLD, WORK_KERNEL);
}

static void holder_run(struct kernel *k, struct task *task, struct cpu *cpu, uint64_t now)
{
	struct sleep_rig *r = task->data;
	struct kcont granted = {.fn = holder_granted, .ctx = r};
	switch (r->holder_runs++) {
	case 0:
		take(k, cpu, &r->sem, r->holder_writes, now, granted);
		break;
	case 1:
		r->released = release(k, cpu, &r->sem, r->holder_writes, now);
		sched_exit(k, cpu, r->released);
		break;
	default:
		cr_assert_fail("the holder runs twice");
	}
}

static void waiter_granted(struct kernel *k, void *ctx, uint64_t time)
{
	struct sleep_rig *r = ctx;
	r->waiter_granted = time;
	sched_continue_at(k, &k->machine->cpus[1], time + HOLD, WORK_KERNEL);
}

static void waiter_run(struct kernel *k, struct task *task, struct cpu *cpu, uint64_t now)
{
	struct sleep_rig *r = task->data;
	struct kcont granted = {.fn = waiter_granted, .ctx = r};
	switch (r->waiter_runs++) {
	case 0:
		sched_continue_at(k, cpu, now + ASK_AFTER, WORK_KERNEL);
		break;
	case 1:
		r->waiter_asked = now;
		take(k, cpu, &r->sem, r->waiter_writes, now, granted);
		/* Queued behind the holder, and so asleep (rwsem_queue() blocks a
		 * task that waits). */
		r->waiter_slept = rwsem_nr_waiters(&r->sem) == 1;
		break;
	case 2:
		sched_exit(k, cpu, release(k, cpu, &r->sem, r->waiter_writes, now));
		break;
	default:
		cr_assert_fail("the waiter runs three times");
	}
}

static const struct task_ops holder_ops = {.run = holder_run};
static const struct task_ops waiter_ops = {.run = waiter_run};

static void sleep_rig_run(struct sleep_rig *r, bool holder_writes, bool waiter_writes)
{
	*r = (struct sleep_rig){.holder_writes = holder_writes, .waiter_writes = waiter_writes,
				.topology = support_topology("tiny-2cpu.json"),
				.policy = support_policy("linux-4.5")};
	struct engine *engine = engine_new(NR_LANES(topology_nr_cpus(r->topology)));
	kernel_boot(&r->k, r->policy, engine,
		    machine_new(r->topology, engine, no_ipi_delivery, NULL));
	init_rwsem(&r->sem);
	r->holder = (struct task){.pinned_cpu = 0, .ops = &holder_ops, .data = r};
	r->waiter = (struct task){.pinned_cpu = 1, .ops = &waiter_ops, .data = r};
	sched_add_task(&r->k, &r->holder);
	sched_add_task(&r->k, &r->waiter);
	sched_start(&r->k);
	cr_assert_eq(engine_run(r->k.engine, ENGINE_NEVER, ENGINE_NEVER), ENGINE_EMPTY);

	cr_assert(r->waiter_slept, "the waiter found the lock held and queued");
	cr_assert_lt(r->waiter_asked, r->released, "it asked while the holder held the lock");
	cr_assert_eq(r->waiter_runs, 3, "the waiter held the lock and released it");
	cr_assert_eq(sched_nr_alive(&r->k), 0);
	cr_assert_eq(r->sem.readers, 0);
	cr_assert_not(r->sem.writer);
	cr_assert_eq(g_hash_table_size(r->k.inflight), 0);
}

static void sleep_rig_free(struct sleep_rig *r)
{
	struct machine *machine = r->k.machine;
	struct engine *engine = r->k.engine;
	kernel_shutdown(&r->k);
	machine_free(machine);
	engine_free(engine);
	policy_free(r->policy);
	topology_free(r->topology);
}

/*
 * A writer asleep on a reader's lock is woken by the release (an IPI's
 * latency after its RMW), switches back in, and takes the lock with an RMW
 * of its own (rwsem_try_write_lock()): the line comes from cpu 0, whose
 * release wrote it last.
 */
Test(rwsem, sleeping_writer_takes_the_lock_with_its_own_rmw)
{
	struct sleep_rig r;
	sleep_rig_run(&r, false, true);
	const struct topology_costs *c = &r.topology->costs;
	cr_expect_eq(r.waiter_granted - r.released,
		     c->ipi_latency[DIST_SOCKET] + c->context_switch + c->line_transfer[DIST_SOCKET]);
	sleep_rig_free(&r);
}

/*
 * A reader asleep on a writer's lock is counted in by the waker
 * (rwsem_mark_wake()): it holds the lock once it runs again, without an RMW.
 */
Test(rwsem, sleeping_reader_holds_the_lock_from_the_hand_off)
{
	struct sleep_rig r;
	sleep_rig_run(&r, true, false);
	const struct topology_costs *c = &r.topology->costs;
	cr_expect_eq(r.waiter_granted - r.released,
		     c->ipi_latency[DIST_SOCKET] + c->context_switch);
	sleep_rig_free(&r);
}
