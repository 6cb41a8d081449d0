/*
 * What every op of a task needs: the variables its expressions see (its
 * loop variables, $thread, $task, $cpus, the workload's params), run-time
 * errors, and stepping with the engine before an op other CPUs can observe.
 */
#include "interp_impl.h"
#include "tlbsim/util/error.h"

bool interp_task_lookup(void *ctx, const char *name, int64_t *value)
{
	const struct itask *ts = ctx;
	for (unsigned d = ts->depth; d-- > 0;) {
		const struct frame *f = &ts->frames[d];
		if (f->var && strcmp(f->var, name) == 0) {
			*value = f->iter;
			return true;
		}
	}
	if (strcmp(name, "thread") == 0) {
		*value = ts->thread;
		return true;
	}
	if (strcmp(name, "task") == 0) {
		*value = ts->task.id;
		return true;
	}
	if (strcmp(name, "cpus") == 0) {
		*value = ts->interp->k->machine->nr_cpus;
		return true;
	}
	return workload_param(ts->interp->w, name, value);
}

void interp_fail(struct interp *ip, const struct itask *ts, const struct op *op, const char *fmt,
		 ...)
{
	if (!ip->error) {
		va_list args;
		va_start(args, fmt);
		char *msg = g_strdup_vprintf(fmt, args);
		va_end(args);
		g_set_error(&ip->error, TLBSIM_ERROR, TLBSIM_ERROR_INVALID,
			    "%s: %s (task %s/%u at %.0f ns)", op ? op->path : "workload", msg,
			    ts->task.name, ts->thread,
			    topology_cycles_to_ns(ip->k->machine->topology, engine_now(ip->k->engine)));
		g_free(msg);
	}
	engine_stop(ip->k->engine);
}

bool interp_eval(struct itask *ts, const struct op *op, const struct expr *expr, int64_t min,
		 int64_t max, const char *what, int64_t *out)
{
	GError *error = NULL;
	if (!expr_eval(expr, interp_task_lookup, ts, out, &error)) {
		interp_fail(ts->interp, ts, op, "%s: %s", what, error->message);
		g_error_free(error);
		return false;
	}
	if (*out < min || *out > max) {
		interp_fail(ts->interp, ts, op,
			    "%s is %" G_GINT64_FORMAT ", expected [%" G_GINT64_FORMAT
			    ", %" G_GINT64_FORMAT "] (\"%s\")",
			    what, *out, min, max, expr_text(expr));
		return false;
	}
	return true;
}

bool interp_in_step(struct kernel *k, struct cpu *cpu, uint64_t local, uint64_t now)
{
	if (local == now)
		return true;
	sched_continue_at(k, cpu, local, WORK_USER);
	return false;
}
