#ifndef TLBSIM_PTI_H
#define TLBSIM_PTI_H
/*
 * x86 page-table isolation (PTI, 4.15+; arch/x86/entry/calling.h,
 * arch/x86/mm/tlb.c, arch/x86/include/asm/tlbflush.h), and the EuroSys'20
 * deferral of its user-PCID flushes (policy pti_user_flush "deferred").
 * Every function is a no-op returning 0 when the policy has no PTI.
 */
#include <stdbool.h>
#include <stdint.h>
#include "tlbsim/kernel/tlbflush.h"

/**
 * pti_enter_kernel() - SWITCH_TO_KERNEL_CR3 at a syscall, fault or interrupt
 * from user space: the cycles it adds (cr3_switch).
 */
uint64_t pti_enter_kernel(const struct kernel *k);

/**
 * pti_return_to_user() - SWITCH_TO_USER_CR3 on @cpu: the user-PCID flushes
 * pending for the loaded PCID are done (a whole PCID by leaving NOFLUSH
 * clear, a deferred range by INVLPGs after the switch); returns the cycles,
 * with the CR3 switch's if @to_user (false: an interrupt that returns to the
 * kernel applies what is pending without a switch, see pti.c).
 */
uint64_t pti_return_to_user(struct kernel *k, struct cpu *cpu, bool to_user);

/**
 * pti_flush() - flush_tlb_func()'s flush of @f on @cpu under PTI (@full: the
 * whole mm; @local: @cpu initiated it): the kernel PCID now, the user PCID
 * by INVPCID, a mark for the next return to user, or a deferred range.
 * Returns the cycles spent now.
 */
uint64_t pti_flush(struct kernel *k, struct cpu *cpu, const struct flush_tlb_info *f, bool full,
		   bool local);

#endif
