#ifndef TLBSIM_COUNTERS_H
#define TLBSIM_COUNTERS_H
/*
 * Event counters, one flat struct per CPU; run totals are the sum.  Names follow
 * the kernel's /proc/vmstat items where one exists, so a run can be held beside
 * a real vmstat delta.  Precise definitions (and the identities the tests hold)
 * are in README.md, section "Counters".
 *
 * X-macro: the list below is the single place a counter is declared; the CSV
 * writer, the summing code and the per-CPU report all expand it.
 */
#include <stdint.h>

/*
 * tlb_flush_events by the tracepoint's reason (enum tlb_flush_reason, in its
 * order), each followed by how many of them flushed everything (pages == -1,
 * end == FLUSH_ALL).  Their sum is tlb_flush_events.  A list of its own so
 * the CSV's column table places them with one line too.
 */
#define COUNTERS_FLUSH_REASONS(X)                                                              \
	X(tlb_flush_task_switch)         /* TLB_FLUSH_ON_TASK_SWITCH */                            \
	X(tlb_flush_task_switch_full)                                                              \
	X(tlb_remote_shootdown)          /* TLB_REMOTE_SHOOTDOWN: flush_tlb_func on a target */    \
	X(tlb_remote_shootdown_full)                                                               \
	X(tlb_local_shootdown)           /* TLB_LOCAL_SHOOTDOWN */                                 \
	X(tlb_local_shootdown_full)                                                                \
	X(tlb_local_mm_shootdown)        /* TLB_LOCAL_MM_SHOOTDOWN: the initiator's own */         \
	X(tlb_local_mm_shootdown_full)                                                             \
	X(tlb_remote_send_ipi)           /* TLB_REMOTE_SEND_IPI: the initiator, before its IPIs */ \
	X(tlb_remote_send_ipi_full)                                                                \
	X(tlb_remote_wrong_cpu)          /* TLB_REMOTE_WRONG_CPU: an IPI for an mm not loaded */   \
	X(tlb_remote_wrong_cpu_full)                                                               \
	X(tlb_broadcast)                 /* TLB_BROADCAST: tlbsim's own (TLBI IS, INVLPGB) */      \
	X(tlb_broadcast_full)

#define COUNTERS_FOREACH(X)                                                                    \
	X(accesses)                      /* user memory accesses performed */                     \
	X(tlb_lookups)                   /* translations requested; == accesses */                 \
	X(tlb_hits)                      /* found in some TLB level */                             \
	X(tlb_misses)                    /* missed every level; == lookups - hits */               \
	X(stlb_hits)                     /* missed level 1, hit level 2 */                         \
	X(page_walks)                    /* tlb_misses + walks redone after a page fault */        \
	X(walk_wait_cycles)              /* cycles accesses waited for the core's busy walkers */  \
	X(walk_loads)                    /* page-table lines walks loaded through the data caches */\
	X(walk_load_cycles)              /* what they added to page_walk (beyond resident_cycles) */\
	X(page_faults)                   /* not-present PTE on access */                           \
	X(stale_hits)                    /* hits on an entry older than a completed PTE change */  \
	X(stale_reuse)                   /* of those, on a frame allocated again since the fill */ \
	X(stale_pwc)                     /* cached PDEs left pointing at a freed PTE page */        \
	X(stale_entries)                 /* entries older than a PTE change when it returned */   \
	X(nr_tlb_remote_flush)           /* vmstat: shootdown requests sent (one per call) */      \
	X(nr_tlb_remote_flush_received)  /* vmstat: flush_tlb_func runs on a target */             \
	X(nr_tlb_local_flush_all)        /* vmstat: initiator's own full flushes */                \
	X(nr_tlb_local_flush_one)        /* vmstat: initiator's own single-page flushes */         \
	X(local_flush_cycles)            /* initiator's own flush in flush_tlb_mm_range (x86) */   \
	X(invlpg)                        /* single-page invalidations executed, any CPU, any path */\
	X(tlb_flush_all)                 /* full flushes executed (CR3 writes with flush), any path */\
	X(tlb_entries_invalidated)       /* valid TLB entries removed by invalidations */          \
	X(tlb_flush_events)              /* tlb:tlb_flush tracepoint hits */                       \
	COUNTERS_FLUSH_REASONS(X)        /* ... by reason, and of them those with pages == -1 */   \
	X(ipis_sent)                     /* interrupts sent by this CPU */                         \
	X(ipis_received)                 /* interrupts taken by this CPU */                        \
	X(irq_cycles)                    /* cycles spent in IPI handlers */                        \
	X(context_switches)              /* task switches, idle included */                        \
	X(switch_mm)                     /* switches that changed the loaded mm */                 \
	X(nr_migrations)                 /* tasks moved here from another CPU (se.nr_migrations) */\
	X(cpumask_atomics)               /* atomic set/clear on an mm_cpumask */                   \
	X(switch_mm_cycles)              /* cycles in switch_mm/enter_lazy_tlb (CR3, atomics) */   \
	X(tlbi_broadcasts)               /* broadcast invalidations issued (TLBI IS, INVLPGB) */   \
	X(sbi_rfences)                   /* SBI remote-fence calls into firmware */                \
	X(pages_reclaimed)               /* PTEs unmapped by reclaim (MADV_PAGEOUT) */             \
	X(lru_lock_acquisitions)         /* LRU lock taken (batch drains, page frees) */           \
	X(lru_lock_cycles)               /* cycles waiting for and holding the LRU lock */         \
	X(mmap_lock_acquisitions)        /* mmap_lock taken, for reading or writing */             \
	X(mmap_lock_wait_cycles)         /* cycles from asking for mmap_lock to holding it */      \
	X(vma_lock_acquisitions)         /* per-VMA locks taken (faults; vma_start_write) */       \
	X(vma_lock_wait_cycles)          /* cycles from asking for a VMA lock to holding it */     \
	X(vma_lock_abort)                /* faults that gave up the VMA lock for mmap_lock */      \
	X(syscalls)                      /* munmap/mmap/mprotect/madvise calls */                  \
	X(latr_states_saved)             /* LATR: flushes posted in this CPU's ring, not sent */   \
	X(latr_states_flushed)           /* LATR: posted flushes this CPU applied in a sweep */    \
	X(latr_fallback_ipis)            /* LATR: flushes sent as IPIs because the ring was full */\
	X(latr_sweep_cycles)             /* LATR: cycles sweeping the rings (ticks, switches) */   \
	X(rar_requests)                  /* RAR: flushes this CPU sent as Remote Action Requests */\
	X(rar_actions)                   /* RAR: actions this CPU's microcode performed */         \
	X(didi_lookups)                  /* DiDi: TLB-directory lookups this CPU's flushes made */ \
	X(didi_invalidations)            /* DiDi: invalidations the directory sent to sharers */   \
	X(abis_flush_skipped)            /* ABIS: gathered flushes dropped, no PTE accessed */     \
	X(abis_local_only)               /* ABIS: gathered flushes kept local, accessor = self */  \
	X(multicast_messages)            /* multicast: URPC messages this CPU wrote */             \
	X(multicast_requests)            /* multicast: flush requests it received and ran */      \
	X(multicast_aggregations)        /* multicast: requests it forwarded to its socket */      \
	X(pti_user_flushes_deferred)     /* PTI: user-PCID ranges left for the return to user */   \
	X(pti_user_flush_all)            /* PTI: returns to user that flushed the whole user PCID */

struct counters {
#define COUNTERS_FIELD(name) uint64_t name;
	COUNTERS_FOREACH(COUNTERS_FIELD)
#undef COUNTERS_FIELD
};

/* dst += src, field by field. */
void counters_add(struct counters *dst, const struct counters *src);
/* dst += now - then, field by field. */
void counters_add_delta(struct counters *dst, const struct counters *now,
			const struct counters *then);
/* Names in declaration order, NULL-terminated. */
extern const char *const counters_names[];
/* Field by index (declaration order), for table-driven output. */
uint64_t counters_get(const struct counters *c, unsigned index);
unsigned counters_count(void);

#endif
