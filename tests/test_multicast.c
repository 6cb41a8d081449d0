/*
 * The "multicast" transport (src/kernel/multicast.c, Barrelfish's NUMA-aware
 * multicast) on tiny-2socket (2 sockets x 2 cores x 2 threads, 2.5 GHz; a
 * line transfer 100 within a socket, 300 across; INVLPG 100).
 */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>
#include "support.h"
#include "tlbsim/util/histogram.h"

/* cpu 0 munmaps one populated page while readers on cpus 1 (socket 0), 2
 * and 3 (socket 1) run the mm. */
static char *one_page_munmap(void)
{
	return g_strdup(
	    "{\"name\": \"one-page\","
	    " \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"},"
	    "              {\"name\": \"own\", \"size\": 4096, \"populate\": \"all\"}],"
	    " \"tasks\": ["
	    "  {\"name\": \"unmapper\", \"cpu\": 0, \"program\": ["
	    "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
	    "    {\"op\": \"compute\", \"cycles\": 100000},"
	    "    {\"op\": \"munmap\", \"region\": \"victim\"},"
	    "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
	    "  {\"name\": \"reader\", \"count\": 3, \"cpu\": \"$thread + 1\", \"program\": ["
	    "    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
	    "    {\"op\": \"access\", \"region\": \"own\", \"pattern\": \"sequential\", \"pages\": "
	    "1,"
	    "     \"while_flag\": \"run\", \"cycles\": 10}]}]}");
}

static uint64_t op_cycles(const struct support_run *r)
{
	return histogram_max(r->result->op_cycles);
}

/*
 * Spinning monitors (multicast_poll_ns 0).  A target's flush_tlb_func() reads
 * the mm's tlb_gen line (cpu 0 wrote it: 100 on socket 0, 300 on socket 1)
 * and INVLPGs the page (100): F = 200 on cpu 1, 400 on cpus 2 and 3.  From
 * T, when cpu 0 starts sending:
 *   cpu 0 -> cpu 2, socket 1's aggregator, first (another socket): its
 *   write pulls the channel's line over (300)                  -> T+300
 *   cpu 0 -> cpu 1, socket 0's aggregator (100)                -> T+400
 *   cpu 2 at T+300: reads the request (300), forwards it to cpu 3 (100,
 *   landed at T+700), flushes (400)                            -> T+1100
 *   cpu 3 at T+700: reads (100), flushes (400), replies (100)  -> T+1300
 *   cpu 2 at T+1300: reads the reply (100), replies (300)      -> T+1700
 *   cpu 1 at T+400: reads (100), flushes (200), replies (100)  -> T+800
 *   cpu 0 spins from T+400: cpu 2's reply seen T+1700+300      -> T+2000,
 *   then cpu 1's (100)                                         -> T+2100
 * linux-6.8 sends IPIs instead (test_smp works the same steps):
 *   csds 100 + 300 + 300, ICR writes at T+900, T+1100, T+1300;
 *   arrivals (1500 same socket, 2500 across) T+2400, T+3600, T+3800;
 *   entry 300 + F: unlocks T+2900, T+4300, T+4500; seen in order
 *   T+3000, T+4600, T+4900.
 * The rest of the munmap is the same under both: 8260 - 4900 = 3360, so the
 * multicast call takes 3360 + 2100 = 5460 cycles.  The targets' handling:
 * cpu 1 100 + 200 + 100 = 400, cpu 3 100 + 400 + 100 = 600, cpu 2 300 +
 * 100 + 400, then 100 + 300 at its second poll: 1200.  Under IPIs each adds
 * entry and exit (600) to F.
 */
Test(multicast, two_sockets_worked_by_hand)
{
	char *w = one_page_munmap();
	const char *const spin[] = {"multicast_poll_ns=0", NULL};
	struct support_run m = support_run("tiny-2socket.json", "barrelfish-multicast", spin, w);
	struct support_run l = support_run("tiny-2socket.json", "linux-6.8", NULL, w);
	cr_assert_eq(op_cycles(&l), 8260);
	cr_assert_eq(op_cycles(&m), 5460);
	cr_assert_eq(CPU(m, 0, multicast_messages), 2, "one per socket");
	cr_assert_eq(CPU(m, 2, multicast_messages), 2, "forward and reply");
	cr_assert_eq(CPU(m, 2, multicast_aggregations), 1);
	cr_assert_eq(CPU(m, 1, multicast_aggregations), 0, "no peer on socket 0");
	cr_assert_eq(CPU(m, 1, multicast_messages), 1);
	cr_assert_eq(CPU(m, 3, multicast_messages), 1);
	const uint64_t handling[] = {0, 400, 1200, 600};
	for (unsigned c = 0; c < 4; c++)
		cr_assert_eq(CPU(m, c, irq_cycles), handling[c], "cpu %u", c);
	for (unsigned c = 1; c < 4; c++) {
		cr_assert_eq(CPU(m, c, multicast_requests), 1, "cpu %u", c);
		cr_assert_eq(CPU(m, c, nr_tlb_remote_flush_received), 1, "cpu %u", c);
	}
	cr_assert_eq(m.result->total.ipis_sent, 0);
	cr_assert_eq(m.result->total.ipis_received, 0);
	cr_assert_eq(m.result->total.stale_hits, 0);
	support_run_free(&m);
	support_run_free(&l);
	g_free(w);
}

/*
 * Polls 400 ns (1000 cycles) apart: each message waits 500 on average.
 * Socket 1's path to the answer has three (cpu 2's request, cpu 3's, and
 * cpu 2's second poll for the reply), socket 0's one: the call takes 1500
 * more; the handling itself is unchanged.
 */
Test(multicast, polls_on_the_critical_path)
{
	char *w = one_page_munmap();
	const char *const poll[] = {"multicast_poll_ns=400", NULL};
	struct support_run m = support_run("tiny-2socket.json", "barrelfish-multicast", poll, w);
	cr_assert_eq(op_cycles(&m), 5460 + 1500);
	cr_assert_eq(CPU(m, 2, irq_cycles), 1200);
	cr_assert_eq(m.result->total.stale_hits, 0);
	support_run_free(&m);
	g_free(w);
}

/*
 * One socket (tiny-2cpu, 1 GHz, a line transfer 100, INVLPG 100): the tree
 * is one aggregator, cpu 1, which has no peer: a request and a reply.
 */
Test(multicast, one_socket_one_aggregator)
{
	char *w =
	    g_strdup("{\"name\": \"one-page\","
		     " \"regions\": [{\"name\": \"victim\", \"size\": 4096, \"populate\": \"all\"},"
		     "              {\"name\": \"own\", \"size\": 4096, \"populate\": \"all\"}],"
		     " \"tasks\": ["
		     "  {\"name\": \"unmapper\", \"cpu\": 0, \"program\": ["
		     "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 1},"
		     "    {\"op\": \"compute\", \"cycles\": 100000},"
		     "    {\"op\": \"munmap\", \"region\": \"victim\"},"
		     "    {\"op\": \"set_flag\", \"flag\": \"run\", \"value\": 0}]},"
		     "  {\"name\": \"reader\", \"cpu\": 1, \"program\": ["
		     "    {\"op\": \"wait_flag\", \"flag\": \"run\", \"value\": 1},"
		     "    {\"op\": \"access\", \"region\": \"own\", \"pattern\": \"sequential\","
		     "     \"pages\": 1, \"while_flag\": \"run\", \"cycles\": 10}]}]}");
	struct support_run m = support_run("tiny-2cpu.json", "barrelfish-multicast", NULL, w);
	cr_assert_eq(CPU(m, 0, multicast_messages), 1);
	cr_assert_eq(CPU(m, 1, multicast_messages), 1);
	cr_assert_eq(m.result->total.multicast_aggregations, 0);
	cr_assert_eq(m.result->total.ipis_sent, 0);
	cr_assert_eq(m.result->total.stale_hits, 0);
	support_run_free(&m);
	g_free(w);
}

/* Only x86's flush handler is modelled behind the messages. */
Test(multicast, refused_off_x86)
{
	int code = 0;
	char *w = g_strdup("{\"name\": \"idle\", \"tasks\": [{\"name\": \"t\", \"cpu\": 0,"
			   " \"program\": [{\"op\": \"compute\", \"cycles\": 10}]}]}");
	char *msg = support_run_error("tiny-arm64.json", "barrelfish-multicast", NULL, w, &code);
	cr_assert(strstr(msg, "policy barrelfish-multicast is for x86"), "%s", msg);
	g_free(msg);
	g_free(w);
}
