/*
 * Architectural performance monitoring for TCG vCPUs, fed by a cache model
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef TARGET_I386_PMU_H
#define TARGET_I386_PMU_H

#include "cpu.h"

#define MSR_OFFCORE_RSP_0               0x1a6
#define MSR_OFFCORE_RSP_1               0x1a7

/* The counters a TCG vCPU with x-tcg-pmu=on has */
#define X86_PMU_GP_COUNTERS             4
#define X86_PMU_FIXED_COUNTERS          3
#define X86_PMU_COUNTER_BITS            48

/*
 * The cache events a model supplies, per vCPU: the index of
 * env->pmu_cache_events[] for an access at @level (2 or 3), a load or a
 * store, that hit or missed there, made by user (0) or kernel (1) code.
 */
#define X86_PMU_CACHE_EVENT(level, store, miss, os) \
    (((((level) - 2) * 2 + (store)) * 2 + (miss)) * 2 + (os))

/* Whether @cpu's counters are emulated here (TCG, x-tcg-pmu=on) */
bool x86_pmu_emulated(X86CPU *cpu);
void x86_pmu_cpuid(X86CPU *cpu, uint32_t *eax, uint32_t *ebx,
                   uint32_t *ecx, uint32_t *edx);
bool x86_pmu_msr_is_emulated(X86CPU *cpu, uint32_t msr);
/* false: the access raises #GP */
bool x86_pmu_rdmsr(X86CPU *cpu, uint32_t msr, uint64_t *val);
bool x86_pmu_wrmsr(X86CPU *cpu, uint32_t msr, uint64_t val);
bool x86_pmu_rdpmc(X86CPU *cpu, uint32_t index, uint64_t *val);

#ifndef CONFIG_USER_ONLY
extern const VMStateDescription vmstate_x86_pmu_offcore;

/*
 * Register the writable gdb feature "org.qemu.i386.cache-events", through
 * which a TCG plugin's cache model feeds the counters, for a vCPU whose
 * counters are emulated here
 */
void x86_pmu_gdb_init(X86CPU *cpu);
#endif

#endif
