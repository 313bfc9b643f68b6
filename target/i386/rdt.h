/*
 * Intel RDT cache allocation (CAT) and cache monitoring (CMT) for
 * emulated x86 CPUs
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef TARGET_I386_RDT_H
#define TARGET_I386_RDT_H

#include "cpu.h"

#define MSR_IA32_MISC_FEATURE_CONTROL   0x1a4
#define MSR_IA32_QM_EVTSEL              0xc8d
#define MSR_IA32_QM_CTR                 0xc8e
#define MSR_IA32_PQR_ASSOC              0xc8f
#define MSR_IA32_L3_QOS_MASK_0          0xc90
#define MSR_IA32_L2_QOS_MASK_0          0xd10

/* Size of the architectural ranges of capacity bitmask MSRs */
#define X86_RDT_L3_MASK_MSRS            128
#define X86_RDT_L2_MASK_MSRS            64

/* CPUID.(EAX=0x10,ECX=0):EBX, the resources that can be allocated */
#define CPUID_10_0_EBX_L3_CAT           (1U << 1)
#define CPUID_10_0_EBX_L2_CAT           (1U << 2)

/* Prefetcher disable bits of MSR_IA32_MISC_FEATURE_CONTROL */
#define MISC_FEATURE_CONTROL_VALID      0xfULL

/* The CLOSID field of IA32_PQR_ASSOC and its RMID field */
#define PQR_ASSOC_CLOSID_SHIFT          32
#define PQR_ASSOC_RMID_MASK             0x3ffULL
#define X86_RDT_MAX_RMIDS               1024

/* IA32_QM_EVTSEL: an event and an RMID; IA32_QM_CTR: its count */
#define QM_EVTSEL_EVENT_MASK            0xffULL
#define QM_EVTSEL_RMID_SHIFT            32
#define QM_EVENT_L3_OCCUPANCY           1
#define QM_CTR_ERROR                    (1ULL << 63)
#define QM_CTR_UNAVAILABLE              (1ULL << 62)

/* CPUID.(EAX=0xF,ECX=0):EDX and (ECX=1):EDX */
#define CPUID_F_0_EDX_L3_MON            (1U << 1)
#define CPUID_F_1_EDX_L3_OCCUPANCY      (1U << 0)

bool x86_rdt_enabled(X86CPU *cpu);
bool x86_rdt_expand_features(X86CPU *cpu, Error **errp);
void x86_rdt_cpuid(X86CPU *cpu, uint32_t count, uint32_t *eax,
                   uint32_t *ebx, uint32_t *ecx, uint32_t *edx);
/* CPUID leaf 0xF, cache monitoring */
void x86_rdt_mon_cpuid(X86CPU *cpu, uint32_t count, uint32_t *eax,
                       uint32_t *ebx, uint32_t *ecx, uint32_t *edx);
void x86_rdt_reset(X86CPU *cpu);
bool x86_rdt_msr_is_emulated(X86CPU *cpu, uint32_t msr);
bool x86_rdt_rdmsr(X86CPU *cpu, uint32_t msr, uint64_t *val);
bool x86_rdt_wrmsr(X86CPU *cpu, uint32_t msr, uint64_t val);

#ifndef CONFIG_USER_ONLY
extern const VMStateDescription vmstate_x86_rdt;

/*
 * Register the state as the read-only gdb feature "org.qemu.i386.rdt"
 * (which TCG plugins read too), for a vCPU with cache allocation
 */
void x86_rdt_gdb_init(X86CPU *cpu);
#endif

#endif
