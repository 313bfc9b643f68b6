/*
 * Architectural performance monitoring for TCG vCPUs, fed by a cache model
 *
 * TCG runs no caches, so it has nothing of its own to count.  With
 * x-tcg-pmu=on (and pmu=on, which it needs), a TCG vCPU reports version
 * 2 of architectural performance monitoring in CPUID leaf 0xA and keeps
 * the counter MSRs, and its general-purpose counters count the cache
 * events that a model of the caches in a TCG plugin
 * (contrib/plugins/catcache.c) supplies: per vCPU, the loads and stores
 * that hit or missed the L2 and the L3.
 *
 * The plugin writes its running totals into the vCPU's writable gdb
 * feature "org.qemu.i386.cache-events" just before each RDPMC, RDMSR and
 * WRMSR that the vCPU executes.  Each write adds what happened since the
 * last one to every counter that is enabled and selects that event.  So a
 * counter is exact whenever software reads it or changes what it counts,
 * and no access pays for counters it does not feed.  Without a plugin
 * that writes them, the counters keep what software wrote.
 *
 * The events counted (all others count nothing):
 *   0x2E LONGEST_LAT_CACHE: umask 0x4F references and 0x41 misses,
 *        loads and stores at the last level (the L3 if the CPU reports
 *        one, else the L2), as the architectural events define them;
 *   0xD1 MEM_LOAD_UOPS_RETIRED: umask 0x02 L2 hits and 0x10 L2 misses
 *        (Goldmont and the big cores); on a CPU with an L3 also 0x04 L3
 *        hits and 0x20 L3 misses;
 *   0xB7 and 0xBB OFFCORE_RESPONSE, with MSR_OFFCORE_RSP_0 or _1: the
 *        demand data reads (request bit 0) and RFOs (bit 1) at the last
 *        level; "any response" (bit 16) counts all of them, a narrower
 *        choice of responses counts those that missed (Linux's LLC-loads
 *        and LLC-load-misses).
 * The model has no L1, so every load it sees is an L2 access.  CPUID
 * reports cycles, instructions and the branch events unavailable, and
 * the three fixed counters (the architecture requires them with version
 * 2) count nothing.  Overflow sets IA32_PERF_GLOBAL_STATUS but raises no
 * interrupt: counting works (perf stat), sampling does not.  Edge
 * detect, invert and the counter mask are not modelled: a counter with
 * any of them counts nothing.  USR and OS choose by the privilege of the
 * code that made the access, which the model takes from where the code
 * lies: in the upper half of the address space, the kernel's (so it is
 * for Linux and other systems that put their kernel there).
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "hw/core/cpu.h"
#include "system/tcg.h"
#include "pmu.h"
#ifndef CONFIG_USER_ONLY
#include "exec/gdbstub.h"
#include "gdbstub/helpers.h"
#include "migration/vmstate.h"
#endif

#define PMU_COUNTER_MASK        MAKE_64BIT_MASK(0, X86_PMU_COUNTER_BITS)

/* IA32_PERFEVTSELx */
#define EVTSEL_EVENT(v)         ((v) & 0xff)
#define EVTSEL_UMASK(v)         (((v) >> 8) & 0xff)
#define EVTSEL_USR              BIT_ULL(16)
#define EVTSEL_OS               BIT_ULL(17)
#define EVTSEL_EDGE             BIT_ULL(18)
#define EVTSEL_EN               BIT_ULL(22)
#define EVTSEL_INV              BIT_ULL(23)
#define EVTSEL_CMASK            MAKE_64BIT_MASK(24, 8)
#define EVTSEL_VALID            MAKE_64BIT_MASK(0, 32)

/* The fixed counters' enable fields in IA32_FIXED_CTR_CTRL, 4 bits each */
#define FIXED_CTR_CTRL_VALID    MAKE_64BIT_MASK(0, 4 * X86_PMU_FIXED_COUNTERS)

/* IA32_PERF_GLOBAL_CTRL and _STATUS: a bit per counter */
#define GLOBAL_FIXED_SHIFT      32
#define GLOBAL_VALID    (MAKE_64BIT_MASK(0, X86_PMU_GP_COUNTERS) | \
                         MAKE_64BIT_MASK(GLOBAL_FIXED_SHIFT, \
                                         X86_PMU_FIXED_COUNTERS))

/* RDPMC's ECX: bit 30 selects the fixed counters */
#define RDPMC_FIXED             BIT(30)

/* CPUID.0xA:EBX, a set bit for an architectural event not available */
#define ARCH_EVENTS             7
#define ARCH_EVENT_LLC_REFS     BIT(3)
#define ARCH_EVENT_LLC_MISSES   BIT(4)

/* MSR_OFFCORE_RSP_x: request types and the "any response" bit */
#define OFFCORE_DEMAND_DATA_RD  BIT_ULL(0)
#define OFFCORE_DEMAND_RFO      BIT_ULL(1)
#define OFFCORE_ANY_RESPONSE    BIT_ULL(16)
#define OFFCORE_RESPONSES       (~MAKE_64BIT_MASK(0, 16))
/* The bits the MSRs hold on the CPUs that Linux programs them on */
#define OFFCORE_VALID           MAKE_64BIT_MASK(0, 38)

bool x86_pmu_emulated(X86CPU *cpu)
{
    /*
     * Not pmu=on alone: upstream's "max" model sets it, and TCG gives a
     * guest no PMU for it; that stays so unless asked for.
     */
    return cpu->tcg_pmu && cpu->enable_pmu && tcg_enabled();
}

void x86_pmu_cpuid(X86CPU *cpu, uint32_t *eax, uint32_t *ebx,
                   uint32_t *ecx, uint32_t *edx)
{
    /* Version 2, its counters, their width, the events' vector length */
    *eax = 2 | X86_PMU_GP_COUNTERS << 8 | X86_PMU_COUNTER_BITS << 16 |
           ARCH_EVENTS << 24;
    *ebx = MAKE_64BIT_MASK(0, ARCH_EVENTS) &
           ~(ARCH_EVENT_LLC_REFS | ARCH_EVENT_LLC_MISSES);
    *ecx = 0;
    *edx = X86_PMU_FIXED_COUNTERS | X86_PMU_COUNTER_BITS << 5;
}

/* The level whose misses go to memory: the L3 if the CPU reports one */
static int pmu_last_level(X86CPU *cpu)
{
    return cpu->enable_l3_cache && cpu->env.cache_info_cpuid4.l3_cache ?
           3 : 2;
}

/*
 * Whether the counter selected by @evtsel counts an access at @level (a
 * load or a @store, a @miss or a hit there, by kernel code if @os)
 */
static bool pmu_event_counts(X86CPU *cpu, uint64_t evtsel, int level,
                             bool store, bool miss, bool os)
{
    CPUX86State *env = &cpu->env;
    unsigned umask = EVTSEL_UMASK(evtsel);
    bool has_l3 = pmu_last_level(cpu) == 3;
    uint64_t rsp;

    if (!(evtsel & (os ? EVTSEL_OS : EVTSEL_USR)) ||
        evtsel & (EVTSEL_EDGE | EVTSEL_INV | EVTSEL_CMASK)) {
        return false;
    }
    switch (EVTSEL_EVENT(evtsel)) {
    case 0x2e:          /* LONGEST_LAT_CACHE */
        if (level != pmu_last_level(cpu)) {
            return false;
        }
        return umask == 0x4f || (umask == 0x41 && miss);
    case 0xd1:          /* MEM_LOAD_UOPS_RETIRED */
        if (store) {
            return false;
        }
        if (level == 2) {
            return umask & (miss ? 0x10 : 0x02);
        }
        return has_l3 && (umask & (miss ? 0x20 : 0x04));
    case 0xb7:          /* OFFCORE_RESPONSE_0, and _1 on Goldmont */
    case 0xbb:          /* OFFCORE_RESPONSE_1 */
        if (level != pmu_last_level(cpu)) {
            return false;
        }
        if (EVTSEL_EVENT(evtsel) == 0xbb || umask == 0x02) {
            rsp = env->msr_offcore_rsp[1];
        } else if (umask == 0x01) {
            rsp = env->msr_offcore_rsp[0];
        } else {
            return false;
        }
        if (!(rsp & (store ? OFFCORE_DEMAND_RFO : OFFCORE_DEMAND_DATA_RD))) {
            return false;
        }
        return rsp & OFFCORE_ANY_RESPONSE ? true :
               miss && (rsp & OFFCORE_RESPONSES);
    }
    return false;
}

/* Add @delta events of kind @event to the counters that count them */
static void pmu_count(X86CPU *cpu, int event, uint64_t delta)
{
    CPUX86State *env = &cpu->env;
    int level = 2 + event / 8;
    bool store = event & 4, miss = event & 2, os = event & 1;
    unsigned i;

    for (i = 0; i < X86_PMU_GP_COUNTERS; i++) {
        uint64_t before = env->msr_gp_counters[i];

        if (!(env->msr_gp_evtsel[i] & EVTSEL_EN) ||
            !(env->msr_global_ctrl & BIT_ULL(i)) ||
            !pmu_event_counts(cpu, env->msr_gp_evtsel[i], level, store,
                              miss, os)) {
            continue;
        }
        env->msr_gp_counters[i] = (before + delta) & PMU_COUNTER_MASK;
        if (env->msr_gp_counters[i] < before ||
            delta > PMU_COUNTER_MASK) {
            env->msr_global_status |= BIT_ULL(i);
        }
    }
}

bool x86_pmu_msr_is_emulated(X86CPU *cpu, uint32_t msr)
{
    if (!x86_pmu_emulated(cpu)) {
        return false;
    }
    return (msr >= MSR_P6_EVNTSEL0 &&
            msr < MSR_P6_EVNTSEL0 + X86_PMU_GP_COUNTERS) ||
           (msr >= MSR_P6_PERFCTR0 &&
            msr < MSR_P6_PERFCTR0 + X86_PMU_GP_COUNTERS) ||
           (msr >= MSR_CORE_PERF_FIXED_CTR0 &&
            msr < MSR_CORE_PERF_FIXED_CTR0 + X86_PMU_FIXED_COUNTERS) ||
           msr == MSR_CORE_PERF_FIXED_CTR_CTRL ||
           msr == MSR_CORE_PERF_GLOBAL_STATUS ||
           msr == MSR_CORE_PERF_GLOBAL_CTRL ||
           msr == MSR_CORE_PERF_GLOBAL_OVF_CTRL ||
           msr == MSR_OFFCORE_RSP_0 || msr == MSR_OFFCORE_RSP_1;
}

bool x86_pmu_rdmsr(X86CPU *cpu, uint32_t msr, uint64_t *val)
{
    CPUX86State *env = &cpu->env;

    if (msr >= MSR_P6_EVNTSEL0 &&
        msr < MSR_P6_EVNTSEL0 + X86_PMU_GP_COUNTERS) {
        *val = env->msr_gp_evtsel[msr - MSR_P6_EVNTSEL0];
    } else if (msr >= MSR_P6_PERFCTR0 &&
               msr < MSR_P6_PERFCTR0 + X86_PMU_GP_COUNTERS) {
        *val = env->msr_gp_counters[msr - MSR_P6_PERFCTR0];
    } else if (msr >= MSR_CORE_PERF_FIXED_CTR0 &&
               msr < MSR_CORE_PERF_FIXED_CTR0 + X86_PMU_FIXED_COUNTERS) {
        *val = env->msr_fixed_counters[msr - MSR_CORE_PERF_FIXED_CTR0];
    } else if (msr == MSR_CORE_PERF_FIXED_CTR_CTRL) {
        *val = env->msr_fixed_ctr_ctrl;
    } else if (msr == MSR_CORE_PERF_GLOBAL_STATUS) {
        *val = env->msr_global_status;
    } else if (msr == MSR_CORE_PERF_GLOBAL_CTRL) {
        *val = env->msr_global_ctrl;
    } else if (msr == MSR_CORE_PERF_GLOBAL_OVF_CTRL) {
        *val = 0;
    } else if (msr == MSR_OFFCORE_RSP_0 || msr == MSR_OFFCORE_RSP_1) {
        *val = env->msr_offcore_rsp[msr - MSR_OFFCORE_RSP_0];
    } else {
        return false;
    }
    return true;
}

bool x86_pmu_wrmsr(X86CPU *cpu, uint32_t msr, uint64_t val)
{
    CPUX86State *env = &cpu->env;

    if (msr >= MSR_P6_EVNTSEL0 &&
        msr < MSR_P6_EVNTSEL0 + X86_PMU_GP_COUNTERS) {
        if (val & ~EVTSEL_VALID) {
            return false;
        }
        env->msr_gp_evtsel[msr - MSR_P6_EVNTSEL0] = val;
    } else if (msr >= MSR_P6_PERFCTR0 &&
               msr < MSR_P6_PERFCTR0 + X86_PMU_GP_COUNTERS) {
        /*
         * Without full-width writes (IA32_PERF_CAPABILITIES, not offered
         * here) WRMSR sets the low 32 bits and sign-extends bit 31
         */
        env->msr_gp_counters[msr - MSR_P6_PERFCTR0] =
            (uint64_t)(int64_t)(int32_t)val & PMU_COUNTER_MASK;
    } else if (msr >= MSR_CORE_PERF_FIXED_CTR0 &&
               msr < MSR_CORE_PERF_FIXED_CTR0 + X86_PMU_FIXED_COUNTERS) {
        env->msr_fixed_counters[msr - MSR_CORE_PERF_FIXED_CTR0] =
            val & PMU_COUNTER_MASK;
    } else if (msr == MSR_CORE_PERF_FIXED_CTR_CTRL) {
        if (val & ~FIXED_CTR_CTRL_VALID) {
            return false;
        }
        env->msr_fixed_ctr_ctrl = val;
    } else if (msr == MSR_CORE_PERF_GLOBAL_CTRL) {
        if (val & ~GLOBAL_VALID) {
            return false;
        }
        env->msr_global_ctrl = val;
    } else if (msr == MSR_CORE_PERF_GLOBAL_OVF_CTRL) {
        if (val & ~GLOBAL_VALID) {
            return false;
        }
        env->msr_global_status &= ~val;
    } else if (msr == MSR_OFFCORE_RSP_0 || msr == MSR_OFFCORE_RSP_1) {
        if (val & ~OFFCORE_VALID) {
            return false;
        }
        env->msr_offcore_rsp[msr - MSR_OFFCORE_RSP_0] = val;
    } else {
        /* IA32_PERF_GLOBAL_STATUS is read-only */
        return false;
    }
    return true;
}

bool x86_pmu_rdpmc(X86CPU *cpu, uint32_t index, uint64_t *val)
{
    CPUX86State *env = &cpu->env;

    if (!x86_pmu_emulated(cpu)) {
        return false;
    }
    if (index & RDPMC_FIXED) {
        index &= ~RDPMC_FIXED;
        if (index >= X86_PMU_FIXED_COUNTERS) {
            return false;
        }
        *val = env->msr_fixed_counters[index];
        return true;
    }
    if (index >= X86_PMU_GP_COUNTERS) {
        return false;
    }
    *val = env->msr_gp_counters[index];
    return true;
}

#ifndef CONFIG_USER_ONLY
static bool pmu_offcore_needed(void *opaque)
{
    X86CPU *cpu = opaque;

    return cpu->env.msr_offcore_rsp[0] || cpu->env.msr_offcore_rsp[1];
}

/* The counters themselves travel in "cpu/msr_architectural_pmu" */
const VMStateDescription vmstate_x86_pmu_offcore = {
    .name = "cpu/pmu_offcore_rsp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = pmu_offcore_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64_ARRAY(env.msr_offcore_rsp, X86CPU, 2),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * "l2_load_hits_usr", "l2_load_hits_os", ..., "l3_store_misses_os", in
 * the order of X86_PMU_CACHE_EVENT()
 */
static const char *pmu_gdb_name(unsigned event)
{
    static char *names[X86_PMU_CACHE_EVENTS];

    if (!names[event]) {
        names[event] = g_strdup_printf("l%u_%s_%s_%s", 2 + event / 8,
                                       event & 4 ? "store" : "load",
                                       event & 2 ? "misses" : "hits",
                                       event & 1 ? "os" : "usr");
    }
    return names[event];
}

static int pmu_gdb_read(CPUState *cs, GByteArray *buf, int n)
{
    return gdb_get_reg64(buf, X86_CPU(cs)->env.pmu_cache_events[n]);
}

/*
 * A new running total from the model.  One lower than the last (a model
 * loaded again, or a vCPU reset) starts counting from there.
 */
static int pmu_gdb_write(CPUState *cs, uint8_t *buf, int n)
{
    X86CPU *cpu = X86_CPU(cs);
    uint64_t *total = &cpu->env.pmu_cache_events[n];
    uint64_t now = ldq_le_p(buf);

    if (now > *total) {
        pmu_count(cpu, n, now - *total);
    }
    *total = now;
    return 8;
}

/*
 * One feature serves every vCPU whose registers start at the same number:
 * they describe the same registers.  vCPUs are realized (hot-plugged ones
 * too) under the BQL, which guards the list.
 */
typedef struct PmuGdbFeature {
    GDBFeature feature;
    int base_reg;
} PmuGdbFeature;

static const GDBFeature *pmu_gdb_feature(int base_reg)
{
    static GPtrArray *features;
    GDBFeatureBuilder builder;
    PmuGdbFeature *f;
    unsigned i;

    if (!features) {
        features = g_ptr_array_new();
    }
    for (i = 0; i < features->len; i++) {
        f = g_ptr_array_index(features, i);
        if (f->base_reg == base_reg) {
            return &f->feature;
        }
    }
    f = g_new0(PmuGdbFeature, 1);
    f->base_reg = base_reg;
    gdb_feature_builder_init(&builder, &f->feature,
                             "org.qemu.i386.cache-events",
                             "i386-cache-events.xml", base_reg);
    for (i = 0; i < X86_PMU_CACHE_EVENTS; i++) {
        gdb_feature_builder_append_reg(&builder, pmu_gdb_name(i), 64, i,
                                       "uint64", "cache-events");
    }
    gdb_feature_builder_end(&builder);
    g_ptr_array_add(features, f);
    return &f->feature;
}

void x86_pmu_gdb_init(X86CPU *cpu)
{
    CPUState *cs = CPU(cpu);

    if (!x86_pmu_emulated(cpu)) {
        return;
    }
    gdb_register_coprocessor(cs, pmu_gdb_read, pmu_gdb_write,
                             pmu_gdb_feature(cs->gdb_num_regs), 0);
}
#endif
