/*
 * Intel RDT cache allocation (CAT) for emulated x86 CPUs
 *
 * Reports L2 and/or L3 cache allocation in CPUID leaf 0x10 and keeps the
 * state of the MSRs that an operating system uses to partition a cache:
 * IA32_PQR_ASSOC (the class of service of each logical processor), the
 * capacity bitmask of each class per cache instance, and the prefetcher
 * controls that Linux toggles while it pseudo-locks a region.  Writes
 * follow the rules of the Intel SDM (vol. 3B, "Cache Allocation
 * Technology"), including #GP on bad values, so that guest software
 * such as Linux resctrl can be tested without the hardware.  The cache
 * itself is not modelled: masks change no timing or eviction behaviour.
 *
 * The capacity bitmasks belong to a cache instance, not to a logical
 * processor.  Each instance's masks are kept here once; the vCPUs that
 * share the instance hold copies (CPUX86State), which RDMSR reads and
 * migration carries, refreshed under one lock whenever the instance's
 * masks change.  So a vCPU that arrives later (hot-plug) starts with its
 * siblings' masks, and two vCPUs writing at once cannot leave their
 * copies different.
 *
 * The same state, with the geometry of the caches, is also a read-only
 * register set for gdb and TCG plugins (x86_rdt_gdb_init()): a cache
 * model reads its classes of service and masks from here rather than
 * decoding WRMSR a second time.
 *
 * With l3-cmt=on (TCG only), cache monitoring too: CPUID leaf 0xF offers
 * L3 occupancy, IA32_PQR_ASSOC takes an RMID, and IA32_QM_CTR reports
 * the occupancy of the RMID and event chosen in IA32_QM_EVTSEL.  TCG has
 * no cache to measure, so the figure is the cache model's (the catcache
 * plugin): before the vCPU executes RDMSR of IA32_QM_CTR, the plugin
 * writes the number of lines of the vCPU's L3 that the RMID filled and
 * that are still there into the register "l3_occupancy" of this
 * feature, the one register of it that can be written.  Without such a
 * write since the last change of IA32_QM_EVTSEL, IA32_QM_CTR says the
 * data is unavailable (bit 62), as the SDM lets hardware do.  The
 * upscaling factor is the line size: the count is in lines.
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/error-report.h"
#include "qemu/lockable.h"
#include "qapi/error.h"
#include "hw/core/cpu.h"
#include "hw/i386/topology.h"
#include "rdt.h"
#ifndef CONFIG_USER_ONLY
#include "exec/gdbstub.h"
#include "gdbstub/helpers.h"
#include "migration/vmstate.h"
#include "system/kvm.h"
#include "system/reset.h"
#include "system/tcg.h"
#endif
#ifdef CONFIG_KVM
#include "kvm/kvm_i386.h"
#endif

#ifndef CONFIG_USER_ONLY
static void rdt_machine_reset(void *opaque);
static bool rdt_machine_reset_registered;
#endif

bool x86_rdt_enabled(X86CPU *cpu)
{
    return cpu->rdt_l2_cat || cpu->rdt_l3_cat || cpu->rdt_l3_cmt;
}

static bool rdt_cat_enabled(X86CPU *cpu)
{
    return cpu->rdt_l2_cat || cpu->rdt_l3_cat;
}

/* The classes of service IA32_PQR_ASSOC takes: only 0 without CAT */
static uint32_t rdt_closids(X86CPU *cpu)
{
    return rdt_cat_enabled(cpu) ? cpu->rdt_closids : 1;
}

/* The RMIDs IA32_PQR_ASSOC takes: only 0 without monitoring */
static uint32_t rdt_rmids(X86CPU *cpu)
{
    return cpu->rdt_l3_cmt ? cpu->rdt_rmids : 1;
}

/* Whether IA32_PQR_ASSOC may hold @val: reserved bits clear, both in range */
static bool rdt_pqr_assoc_valid(X86CPU *cpu, uint64_t val)
{
    return !((uint32_t)val & ~PQR_ASSOC_RMID_MASK) &&
           (val & PQR_ASSOC_RMID_MASK) < rdt_rmids(cpu) &&
           (val >> PQR_ASSOC_CLOSID_SHIFT) < rdt_closids(cpu);
}

static CPUCacheInfo *rdt_cache(X86CPU *cpu, int level)
{
    return level == 2 ? cpu->env.cache_info_cpuid4.l2_cache
                      : cpu->env.cache_info_cpuid4.l3_cache;
}

/* Length of the capacity bitmask: one bit per way unless set by the user */
static uint32_t rdt_cbm_len(X86CPU *cpu, int level)
{
    uint32_t len = level == 2 ? cpu->rdt_l2_cbm_len : cpu->rdt_l3_cbm_len;

    return len ? len : rdt_cache(cpu, level)->associativity;
}

/*
 * Set the CPUID[7,0].EBX bit @bit (the feature @bit_name) and raise the
 * CPUID level to @level, as @needs ("l3-cmt needs") says they must be;
 * but a user's @bit_name=off, or a lower level=, says there is no such
 * feature: refuse rather than turn it back on.  Linux ignores the
 * enumeration leaves unless the maximum basic leaf reaches them.
 */
static bool rdt_require_cpuid(X86CPU *cpu, uint32_t bit, const char *bit_name,
                              uint32_t level, const char *needs,
                              Error **errp)
{
    CPUX86State *env = &cpu->env;

    if ((env->user_features[FEAT_7_0_EBX] & bit) &&
        !(env->features[FEAT_7_0_EBX] & bit)) {
        error_setg(errp, "%s %s, but %s=off", needs, bit_name, bit_name);
        return false;
    }
    env->features[FEAT_7_0_EBX] |= bit;
    if (env->cpuid_level != UINT32_MAX && env->cpuid_level < level) {
        error_setg(errp, "%s CPUID level 0x%x or higher, but level=0x%x",
                   needs, level, env->cpuid_level);
        return false;
    }
    env->cpuid_min_level = MAX(env->cpuid_min_level, level);
    return true;
}

/* Cache monitoring: check its options, and offer it in CPUID */
static bool rdt_expand_cmt(X86CPU *cpu, Error **errp)
{
    if (!cpu->enable_l3_cache) {
        error_setg(errp, "l3-cmt needs an L3 cache, but l3-cache=off");
        return false;
    }
#ifndef CONFIG_USER_ONLY
    if (!tcg_enabled()) {
        error_setg(errp, "l3-cmt reports what a cache model counts, which "
                   "only TCG runs");
        error_append_hint(errp, "Use -accel tcg with the catcache plugin.\n");
        return false;
    }
#endif
    if (cpu->rdt_rmids < 1 || cpu->rdt_rmids > X86_RDT_MAX_RMIDS) {
        error_setg(errp, "rdt-rmids must be between 1 and %d, not %u",
                   X86_RDT_MAX_RMIDS, cpu->rdt_rmids);
        return false;
    }
    return rdt_require_cpuid(cpu, CPUID_7_0_EBX_RDT_M, "rdt-m", 0xf,
                             "l3-cmt needs", errp);
}

bool x86_rdt_expand_features(X86CPU *cpu, Error **errp)
{
    ERRP_GUARD();
    CPUX86State *env = &cpu->env;

    if (!x86_rdt_enabled(cpu)) {
        return true;
    }
    if (!IS_INTEL_CPU(env)) {
        error_setg(errp, "l2-cat, l3-cat and l3-cmt need an Intel CPU model");
        return false;
    }
    if (cpu->rdt_l3_cmt && !rdt_expand_cmt(cpu, errp)) {
        return false;
    }
    if (!rdt_cat_enabled(cpu)) {
        return true;
    }
    if (cpu->cache_info_passthrough) {
        error_setg(errp, "l2-cat and l3-cat cannot be combined with "
                   "host-cache-info=on");
        return false;
    }
    if (cpu->rdt_l3_cat && !cpu->enable_l3_cache) {
        error_setg(errp, "l3-cat needs an L3 cache, but l3-cache=off");
        return false;
    }
    if (cpu->rdt_closids < 1 || cpu->rdt_closids > X86_RDT_MAX_CLOSIDS) {
        error_setg(errp, "rdt-closids must be between 1 and %d, not %u",
                   X86_RDT_MAX_CLOSIDS, cpu->rdt_closids);
        return false;
    }
    if (cpu->rdt_l2_cbm_len > 32 || cpu->rdt_l3_cbm_len > 32) {
        error_setg(errp, "l2-cbm-len and l3-cbm-len are at most 32 bits");
        return false;
    }
#ifdef CONFIG_KVM
    /* KVM hands the allocation MSRs to QEMU through its MSR filter */
    if (kvm_enabled() && !kvm_has_user_msr_filter()) {
        error_setg(errp, "l2-cat and l3-cat need KVM's user-space MSR "
                   "filter (KVM_CAP_X86_MSR_FILTER, Linux 5.10 or later)");
        error_append_hint(errp, "Use -accel tcg, or a newer host kernel.\n");
        return false;
    }
#endif

    if (!rdt_require_cpuid(cpu, CPUID_7_0_EBX_RDT_A, "rdt-a", 0x10,
                           "l2-cat and l3-cat need", errp)) {
        return false;
    }

#ifndef CONFIG_USER_ONLY
    if (!rdt_machine_reset_registered) {
        qemu_register_reset(rdt_machine_reset, NULL);
        rdt_machine_reset_registered = true;
    }
#endif
    return true;
}

void x86_rdt_cpuid(X86CPU *cpu, uint32_t count, uint32_t *eax,
                   uint32_t *ebx, uint32_t *ecx, uint32_t *edx)
{
    int level = 0;

    *eax = *ebx = *ecx = *edx = 0;
    switch (count) {
    case 0:
        *ebx = (cpu->rdt_l3_cat ? CPUID_10_0_EBX_L3_CAT : 0) |
               (cpu->rdt_l2_cat ? CPUID_10_0_EBX_L2_CAT : 0);
        return;
    case 1:
        level = cpu->rdt_l3_cat ? 3 : 0;
        break;
    case 2:
        level = cpu->rdt_l2_cat ? 2 : 0;
        break;
    }
    if (level) {
        /*
         * No shareable bits (EBX), capacity bitmasks must be contiguous
         * and there is no code/data prioritization (ECX): like the parts
         * that support pseudo-locking.
         */
        *eax = rdt_cbm_len(cpu, level) - 1;
        *edx = cpu->rdt_closids - 1;
    }
}

void x86_rdt_mon_cpuid(X86CPU *cpu, uint32_t count, uint32_t *eax,
                       uint32_t *ebx, uint32_t *ecx, uint32_t *edx)
{
    *eax = *ebx = *ecx = *edx = 0;
    if (!cpu->rdt_l3_cmt) {
        return;
    }
    switch (count) {
    case 0:
        /* The highest RMID of any resource; the L3 is the only one */
        *ebx = cpu->rdt_rmids - 1;
        *edx = CPUID_F_0_EDX_L3_MON;
        break;
    case 1:
        /* Bytes per unit of IA32_QM_CTR: the count is in lines */
        *ebx = rdt_cache(cpu, 3)->line_size;
        *ecx = cpu->rdt_rmids - 1;
        *edx = CPUID_F_1_EDX_L3_OCCUPANCY;
        break;
    }
}

/*
 * Which capacity bitmask MSR @msr is, if any: the level and the class.
 * The architectural ranges hold masks for 128 (L3) and 64 (L2) classes;
 * those beyond the CPU's CLOSID count are still ours, to raise #GP.
 */
static bool rdt_mask_msr(X86CPU *cpu, uint32_t msr, int *level,
                         unsigned *closid)
{
    if (cpu->rdt_l3_cat && msr >= MSR_IA32_L3_QOS_MASK_0 &&
        msr < MSR_IA32_L3_QOS_MASK_0 + X86_RDT_L3_MASK_MSRS) {
        *level = 3;
        *closid = msr - MSR_IA32_L3_QOS_MASK_0;
        return true;
    }
    if (cpu->rdt_l2_cat && msr >= MSR_IA32_L2_QOS_MASK_0 &&
        msr < MSR_IA32_L2_QOS_MASK_0 + X86_RDT_L2_MASK_MSRS) {
        *level = 2;
        *closid = msr - MSR_IA32_L2_QOS_MASK_0;
        return true;
    }
    return false;
}

bool x86_rdt_msr_is_emulated(X86CPU *cpu, uint32_t msr)
{
    int level;
    unsigned closid;

    if (!x86_rdt_enabled(cpu)) {
        return false;
    }
    return msr == MSR_IA32_PQR_ASSOC || msr == MSR_IA32_MISC_FEATURE_CONTROL ||
           (cpu->rdt_l3_cmt &&
            (msr == MSR_IA32_QM_EVTSEL || msr == MSR_IA32_QM_CTR)) ||
           rdt_mask_msr(cpu, msr, &level, &closid);
}

static uint64_t *rdt_mask_slot(X86CPU *cpu, int level, unsigned closid)
{
    return level == 2 ? &cpu->env.msr_l2_qos_mask[closid]
                      : &cpu->env.msr_l3_qos_mask[closid];
}

/* The instance of the level-@level cache that @cpu uses, as Linux sees it */
static uint32_t rdt_cache_instance(X86CPU *cpu, int level)
{
    X86CPUTopoInfo *topo = &cpu->env.topo_info;
    unsigned shift;

    switch (rdt_cache(cpu, level)->share_level) {
    case CPU_TOPOLOGY_LEVEL_THREAD:
        shift = 0;
        break;
    case CPU_TOPOLOGY_LEVEL_CORE:
        shift = apicid_core_offset(topo);
        break;
    case CPU_TOPOLOGY_LEVEL_MODULE:
        shift = apicid_module_offset(topo);
        break;
    case CPU_TOPOLOGY_LEVEL_DIE:
        shift = apicid_die_offset(topo);
        break;
    default:
        shift = apicid_pkg_offset(topo);
        break;
    }
    return cpu->apic_id >> shift;
}

/*
 * A valid capacity bitmask is not empty, fits in the CBM length and is
 * one run of ones, since these CPUs do not support sparse masks.
 */
static bool rdt_cbm_valid(uint64_t cbm, uint32_t cbm_len)
{
    if (!cbm || (cbm >> cbm_len)) {
        return false;
    }
    /* Adding the lowest set bit clears a single run of ones entirely */
    return ((cbm + (cbm & -cbm)) & cbm) == 0;
}

/* Whether @cpu has cache allocation for the level-@level cache */
static bool rdt_level_enabled(X86CPU *cpu, int level)
{
    return level == 2 ? cpu->rdt_l2_cat : cpu->rdt_l3_cat;
}

/* The masks of one cache instance, of which its vCPUs hold copies */
typedef struct RdtCacheInstance {
    int level;
    uint32_t id;
    uint64_t reset_mask;
    uint64_t mask[X86_RDT_MAX_CLOSIDS];
} RdtCacheInstance;

/* Guards rdt_instances and every vCPU's copy of the masks */
static QemuMutex rdt_lock;
static GPtrArray *rdt_instances;

static void __attribute__((constructor)) rdt_lock_init(void)
{
    qemu_mutex_init(&rdt_lock);
}

/* The instance of @cpu's level-@level cache; created, reset, if new */
static RdtCacheInstance *rdt_instance_of(X86CPU *cpu, int level)
{
    uint32_t id = rdt_cache_instance(cpu, level);
    RdtCacheInstance *inst;
    unsigned i;

    if (!rdt_instances) {
        rdt_instances = g_ptr_array_new_with_free_func(g_free);
    }
    for (i = 0; i < rdt_instances->len; i++) {
        inst = g_ptr_array_index(rdt_instances, i);
        if (inst->level == level && inst->id == id) {
            return inst;
        }
    }
    inst = g_new0(RdtCacheInstance, 1);
    inst->level = level;
    inst->id = id;
    /* The masks reset to all ones: every class may use the whole cache */
    inst->reset_mask = MAKE_64BIT_MASK(0, rdt_cbm_len(cpu, level));
    for (i = 0; i < X86_RDT_MAX_CLOSIDS; i++) {
        inst->mask[i] = inst->reset_mask;
    }
    g_ptr_array_add(rdt_instances, inst);
    return inst;
}

static void rdt_copy_masks(X86CPU *cpu, const RdtCacheInstance *inst)
{
    unsigned i;

    for (i = 0; i < X86_RDT_MAX_CLOSIDS; i++) {
        qatomic_set(rdt_mask_slot(cpu, inst->level, i), inst->mask[i]);
    }
}

/* Refresh the copies of every vCPU that shares @inst; rdt_lock held */
static void rdt_instance_publish(const RdtCacheInstance *inst)
{
    CPUState *cs;

    CPU_FOREACH(cs) {
        X86CPU *sibling = X86_CPU(cs);

        if (rdt_level_enabled(sibling, inst->level) &&
            rdt_cache_instance(sibling, inst->level) == inst->id) {
            rdt_copy_masks(sibling, inst);
        }
    }
}

/*
 * A vCPU's reset gives it its caches' current masks: they are the
 * cache's state, which only a reset of the machine clears (see
 * rdt_machine_reset()), not a vCPU's reset, INIT or hot-plug.
 */
void x86_rdt_reset(X86CPU *cpu)
{
    int level;

    for (level = 2; level <= 3; level++) {
        if (rdt_level_enabled(cpu, level)) {
            QEMU_LOCK_GUARD(&rdt_lock);
            rdt_copy_masks(cpu, rdt_instance_of(cpu, level));
        }
    }
}

#ifndef CONFIG_USER_ONLY
/*
 * The machine's reset resets the caches.  It may run before or after
 * the vCPUs' own reset handlers: either way every copy ends all ones.
 */
static void rdt_machine_reset(void *opaque)
{
    unsigned i, c;

    QEMU_LOCK_GUARD(&rdt_lock);
    for (i = 0; rdt_instances && i < rdt_instances->len; i++) {
        RdtCacheInstance *inst = g_ptr_array_index(rdt_instances, i);

        for (c = 0; c < X86_RDT_MAX_CLOSIDS; c++) {
            inst->mask[c] = inst->reset_mask;
        }
        rdt_instance_publish(inst);
    }
}
#endif

/*
 * IA32_QM_CTR: an error for an event or RMID that does not exist, else
 * what the cache model last reported, if it did since IA32_QM_EVTSEL
 * changed
 */
static uint64_t rdt_qm_ctr(X86CPU *cpu)
{
    CPUX86State *env = &cpu->env;

    if ((env->msr_qm_evtsel & QM_EVTSEL_EVENT_MASK) != QM_EVENT_L3_OCCUPANCY ||
        (env->msr_qm_evtsel >> QM_EVTSEL_RMID_SHIFT) >= cpu->rdt_rmids) {
        return QM_CTR_ERROR;
    }
    if (!env->rdt_qm_fed) {
        return QM_CTR_UNAVAILABLE;
    }
    return env->rdt_qm_occupancy & ~(QM_CTR_ERROR | QM_CTR_UNAVAILABLE);
}

bool x86_rdt_rdmsr(X86CPU *cpu, uint32_t msr, uint64_t *val)
{
    CPUX86State *env = &cpu->env;
    int level;
    unsigned closid;

    if (msr == MSR_IA32_PQR_ASSOC) {
        *val = env->msr_pqr_assoc;
    } else if (msr == MSR_IA32_QM_EVTSEL && cpu->rdt_l3_cmt) {
        *val = env->msr_qm_evtsel;
    } else if (msr == MSR_IA32_QM_CTR && cpu->rdt_l3_cmt) {
        *val = rdt_qm_ctr(cpu);
    } else if (msr == MSR_IA32_MISC_FEATURE_CONTROL) {
        *val = env->msr_misc_feature_control;
    } else if (rdt_mask_msr(cpu, msr, &level, &closid) &&
               closid < cpu->rdt_closids) {
        *val = qatomic_read(rdt_mask_slot(cpu, level, closid));
    } else {
        return false;
    }
    return true;
}

bool x86_rdt_wrmsr(X86CPU *cpu, uint32_t msr, uint64_t val)
{
    CPUX86State *env = &cpu->env;
    RdtCacheInstance *inst;
    int level;
    unsigned closid;

    if (msr == MSR_IA32_PQR_ASSOC) {
        /* Without monitoring the RMID must be 0; bits 31:10 are reserved */
        if (!rdt_pqr_assoc_valid(cpu, val)) {
            return false;
        }
        env->msr_pqr_assoc = val;
        return true;
    }
    if (msr == MSR_IA32_QM_EVTSEL && cpu->rdt_l3_cmt) {
        /* Any event may be chosen; IA32_QM_CTR says if it exists */
        if (val & ~(QM_EVTSEL_EVENT_MASK |
                    PQR_ASSOC_RMID_MASK << QM_EVTSEL_RMID_SHIFT)) {
            return false;
        }
        env->msr_qm_evtsel = val;
        env->rdt_qm_fed = false;
        return true;
    }
    if (msr == MSR_IA32_QM_CTR) {
        return false;
    }
    if (msr == MSR_IA32_MISC_FEATURE_CONTROL) {
        if (val & ~MISC_FEATURE_CONTROL_VALID) {
            return false;
        }
        env->msr_misc_feature_control = val;
        return true;
    }
    if (!rdt_mask_msr(cpu, msr, &level, &closid) ||
        closid >= cpu->rdt_closids ||
        !rdt_cbm_valid(val, rdt_cbm_len(cpu, level))) {
        return false;
    }

    /*
     * The masks belong to the cache instance, not to the logical
     * processor: every vCPU that shares this cache sees the new value.
     */
    QEMU_LOCK_GUARD(&rdt_lock);
    inst = rdt_instance_of(cpu, level);
    inst->mask[closid] = val;
    rdt_instance_publish(inst);
    return true;
}

#ifndef CONFIG_USER_ONLY
static bool rdt_needed(void *opaque)
{
    return x86_rdt_enabled(opaque);
}

/*
 * What the source's CPU had: a destination with other classes of
 * service or mask lengths would give the guest MSRs that do not match
 * what it read from CPUID at boot, so it refuses the stream.
 */
typedef struct RdtGeometry {
    X86CPU *parent;
    uint32_t closids;
    uint32_t l2_cbm_len;        /* 0: no L2 cache allocation */
    uint32_t l3_cbm_len;        /* 0: no L3 cache allocation */
} RdtGeometry;

static void rdt_geometry_of(X86CPU *cpu, RdtGeometry *g)
{
    g->closids = cpu->rdt_closids;
    g->l2_cbm_len = cpu->rdt_l2_cat ? rdt_cbm_len(cpu, 2) : 0;
    g->l3_cbm_len = cpu->rdt_l3_cat ? rdt_cbm_len(cpu, 3) : 0;
}

static int rdt_geometry_pre_save(void *opaque)
{
    RdtGeometry *g = opaque;

    rdt_geometry_of(g->parent, g);
    return 0;
}

static int rdt_geometry_post_load(void *opaque, int version_id)
{
    RdtGeometry *g = opaque;
    RdtGeometry here;
    int level;

    rdt_geometry_of(g->parent, &here);
    for (level = 2; level <= 3; level++) {
        uint32_t source = level == 2 ? g->l2_cbm_len : g->l3_cbm_len;
        uint32_t len = level == 2 ? here.l2_cbm_len : here.l3_cbm_len;

        if (source != len) {
            error_report("cpu/rdt-cat: the source's CPU has L%d capacity "
                         "bitmasks of %" PRIu32 " bits, this one of %" PRIu32
                         " (0: no L%d cache allocation); start this QEMU "
                         "with the source's l%d-cat and l%d-cbm-len",
                         level, source, len, level, level, level);
            return -EINVAL;
        }
    }
    if (g->closids != here.closids) {
        error_report("cpu/rdt-cat: the source's CPU has %" PRIu32 " classes "
                     "of service, this one %" PRIu32 "; start this QEMU "
                     "with the source's rdt-closids", g->closids,
                     here.closids);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription vmstate_rdt_geometry_tmp = {
    .name = "cpu/rdt-cat/geometry-tmp",
    .pre_save = rdt_geometry_pre_save,
    .post_load = rdt_geometry_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(closids, RdtGeometry),
        VMSTATE_UINT32(l2_cbm_len, RdtGeometry),
        VMSTATE_UINT32(l3_cbm_len, RdtGeometry),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * A subsection, so that a stream from a source without it (an older
 * build of this fork) still loads, only unchecked
 */
static const VMStateDescription vmstate_x86_rdt_geometry = {
    .name = "cpu/rdt-cat/geometry",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rdt_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_WITH_TMP(X86CPU, RdtGeometry, vmstate_rdt_geometry_tmp),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * Cache monitoring: the event and RMID chosen, and the source's number of
 * RMIDs, which the destination must have (the guest read it from CPUID).
 * The occupancy itself is the cache model's, which does not migrate: the
 * destination's model reports from what it sees.
 */
static bool rdt_cmt_needed(void *opaque)
{
    return X86_CPU(opaque)->rdt_l3_cmt;
}

typedef struct RdtCmtGeometry {
    X86CPU *parent;
    uint32_t rmids;
} RdtCmtGeometry;

static int rdt_cmt_geometry_pre_save(void *opaque)
{
    RdtCmtGeometry *g = opaque;

    g->rmids = g->parent->rdt_rmids;
    return 0;
}

static int rdt_cmt_geometry_post_load(void *opaque, int version_id)
{
    RdtCmtGeometry *g = opaque;
    X86CPU *cpu = g->parent;

    if (!cpu->rdt_l3_cmt) {
        error_report("cpu/rdt-cat/cmt: the source's CPU has L3 cache "
                     "monitoring with %" PRIu32 " RMIDs, this one has none; "
                     "start this QEMU with l3-cmt=on,rdt-rmids=%" PRIu32,
                     g->rmids, g->rmids);
        return -EINVAL;
    }
    if (g->rmids != cpu->rdt_rmids) {
        error_report("cpu/rdt-cat/cmt: the source's CPU has L3 cache "
                     "monitoring with %" PRIu32 " RMIDs, this one with %"
                     PRIu32 "; start this QEMU with rdt-rmids=%" PRIu32,
                     g->rmids, cpu->rdt_rmids, g->rmids);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription vmstate_rdt_cmt_geometry_tmp = {
    .name = "cpu/rdt-cat/cmt/geometry-tmp",
    .pre_save = rdt_cmt_geometry_pre_save,
    .post_load = rdt_cmt_geometry_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(rmids, RdtCmtGeometry),
        VMSTATE_END_OF_LIST()
    }
};

static int rdt_cmt_post_load(void *opaque, int version_id)
{
    X86CPU *cpu = opaque;
    uint64_t evtsel = cpu->env.msr_qm_evtsel;

    if (evtsel & ~(QM_EVTSEL_EVENT_MASK |
                   PQR_ASSOC_RMID_MASK << QM_EVTSEL_RMID_SHIFT)) {
        error_report("cpu/rdt-cat/cmt: CPU %d's IA32_QM_EVTSEL 0x%" PRIx64
                     " has reserved bits set", CPU(cpu)->cpu_index, evtsel);
        return -EINVAL;
    }
    /* Until the destination's model reports, the count is unavailable */
    cpu->env.rdt_qm_fed = false;
    return 0;
}

static const VMStateDescription vmstate_x86_rdt_cmt = {
    .name = "cpu/rdt-cat/cmt",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rdt_cmt_needed,
    .post_load = rdt_cmt_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_WITH_TMP(X86CPU, RdtCmtGeometry,
                         vmstate_rdt_cmt_geometry_tmp),
        VMSTATE_UINT64(env.msr_qm_evtsel, X86CPU),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The stream's state must be what the SDM lets software write: the same
 * checks as WRMSR.  Then it becomes the state of this vCPU's caches.
 */
static int rdt_post_load(void *opaque, int version_id)
{
    X86CPU *cpu = opaque;
    CPUX86State *env = &cpu->env;
    CPUState *cs = CPU(cpu);
    unsigned closid;
    int level;

    if (!rdt_pqr_assoc_valid(cpu, env->msr_pqr_assoc)) {
        error_report("cpu/rdt-cat: CPU %d's IA32_PQR_ASSOC 0x%" PRIx64
                     " names an RMID above %u or a class of service above "
                     "%u", cs->cpu_index, env->msr_pqr_assoc,
                     rdt_rmids(cpu) - 1, rdt_closids(cpu) - 1);
        return -EINVAL;
    }
    if (env->msr_misc_feature_control & ~MISC_FEATURE_CONTROL_VALID) {
        error_report("cpu/rdt-cat: CPU %d's MSR_MISC_FEATURE_CONTROL 0x%"
                     PRIx64 " has reserved bits set", cs->cpu_index,
                     env->msr_misc_feature_control);
        return -EINVAL;
    }
    for (level = 2; level <= 3; level++) {
        if (!rdt_level_enabled(cpu, level)) {
            continue;
        }
        for (closid = 0; closid < cpu->rdt_closids; closid++) {
            uint64_t cbm = *rdt_mask_slot(cpu, level, closid);

            if (!rdt_cbm_valid(cbm, rdt_cbm_len(cpu, level))) {
                error_report("cpu/rdt-cat: CPU %d's L%d capacity bitmask "
                             "of class %u, 0x%" PRIx64 ", is not a run of "
                             "ones within %u bits", cs->cpu_index, level,
                             closid, cbm, rdt_cbm_len(cpu, level));
                return -EINVAL;
            }
        }
    }

    for (level = 2; level <= 3; level++) {
        RdtCacheInstance *inst;

        if (!rdt_level_enabled(cpu, level)) {
            continue;
        }
        QEMU_LOCK_GUARD(&rdt_lock);
        inst = rdt_instance_of(cpu, level);
        for (closid = 0; closid < cpu->rdt_closids; closid++) {
            inst->mask[closid] = *rdt_mask_slot(cpu, level, closid);
        }
        rdt_instance_publish(inst);
    }
    return 0;
}

const VMStateDescription vmstate_x86_rdt = {
    .name = "cpu/rdt-cat",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rdt_needed,
    .post_load = rdt_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(env.msr_pqr_assoc, X86CPU),
        VMSTATE_UINT64(env.msr_misc_feature_control, X86CPU),
        VMSTATE_UINT64_ARRAY(env.msr_l2_qos_mask, X86CPU,
                             X86_RDT_MAX_CLOSIDS),
        VMSTATE_UINT64_ARRAY(env.msr_l3_qos_mask, X86CPU,
                             X86_RDT_MAX_CLOSIDS),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_x86_rdt_geometry,
        &vmstate_x86_rdt_cmt,
        NULL
    }
};
#endif

#ifndef CONFIG_USER_ONLY
/*
 * The registers of the "org.qemu.i386.rdt" feature, in order; then the
 * capacity bitmask of each class of service, L2 first, then L3.  An
 * instance id is Linux's cache id; a level without cache allocation has
 * a CBM length of 0 and masks of 0; a cache that CPUID leaf 4 does not
 * report has 0 sets.  Without cache monitoring qm_evtsel and
 * l3_occupancy are 0; l3_occupancy is the only one that can be written.
 */
enum {
    RDT_GDB_PQR_ASSOC,
    RDT_GDB_MISC_FEATURE_CONTROL,
    RDT_GDB_L2_ID,
    RDT_GDB_L2_SETS,
    RDT_GDB_L2_WAYS,
    RDT_GDB_L2_LINE_SIZE,
    RDT_GDB_L2_CBM_LEN,
    RDT_GDB_L3_ID,
    RDT_GDB_L3_SETS,
    RDT_GDB_L3_WAYS,
    RDT_GDB_L3_LINE_SIZE,
    RDT_GDB_L3_CBM_LEN,
    RDT_GDB_QM_EVTSEL,
    RDT_GDB_L3_OCCUPANCY,
    RDT_GDB_FIXED_REGS,
};

static const char *const rdt_gdb_fixed_names[RDT_GDB_FIXED_REGS] = {
    "pqr_assoc", "misc_feature_control",
    "l2_id", "l2_sets", "l2_ways", "l2_line_size", "l2_cbm_len",
    "l3_id", "l3_sets", "l3_ways", "l3_line_size", "l3_cbm_len",
    "qm_evtsel", "l3_occupancy",
};

/* Whether CPUID leaf 4 reports a level-@level cache for @cpu */
static bool rdt_has_cache(X86CPU *cpu, int level)
{
    return rdt_cache(cpu, level) && (level == 2 || cpu->enable_l3_cache);
}

static uint32_t rdt_gdb_cache_field(X86CPU *cpu, int level, int field)
{
    CPUCacheInfo *cache = rdt_cache(cpu, level);

    if (!rdt_has_cache(cpu, level)) {
        return 0;
    }
    switch (field) {
    case RDT_GDB_L2_ID:
        return rdt_cache_instance(cpu, level);
    case RDT_GDB_L2_SETS:
        return cache->sets;
    case RDT_GDB_L2_WAYS:
        return cache->associativity;
    case RDT_GDB_L2_LINE_SIZE:
        return cache->line_size;
    default:
        return rdt_level_enabled(cpu, level) ? rdt_cbm_len(cpu, level) : 0;
    }
}

static int rdt_gdb_read(CPUState *cs, GByteArray *buf, int n)
{
    X86CPU *cpu = X86_CPU(cs);
    int level;

    switch (n) {
    case RDT_GDB_PQR_ASSOC:
        return gdb_get_reg64(buf, cpu->env.msr_pqr_assoc);
    case RDT_GDB_MISC_FEATURE_CONTROL:
        return gdb_get_reg64(buf, cpu->env.msr_misc_feature_control);
    case RDT_GDB_L2_ID ... RDT_GDB_L2_CBM_LEN:
        return gdb_get_reg32(buf, rdt_gdb_cache_field(cpu, 2, n));
    case RDT_GDB_L3_ID ... RDT_GDB_L3_CBM_LEN:
        return gdb_get_reg32(buf, rdt_gdb_cache_field(cpu, 3, n -
                                                      RDT_GDB_L3_ID +
                                                      RDT_GDB_L2_ID));
    case RDT_GDB_QM_EVTSEL:
        return gdb_get_reg64(buf, cpu->env.msr_qm_evtsel);
    case RDT_GDB_L3_OCCUPANCY:
        return gdb_get_reg64(buf, cpu->env.rdt_qm_occupancy);
    }
    n -= RDT_GDB_FIXED_REGS;
    level = n < (int)cpu->rdt_closids ? 2 : 3;
    n %= cpu->rdt_closids;
    return gdb_get_reg64(buf, rdt_level_enabled(cpu, level) ?
                         qatomic_read(rdt_mask_slot(cpu, level, n)) : 0);
}

/*
 * The registers are a view of the MSRs, which only WRMSR changes; but
 * "l3_occupancy" is where a cache model answers the next RDMSR of
 * IA32_QM_CTR (see the top of the file)
 */
static int rdt_gdb_write(CPUState *cs, uint8_t *buf, int n)
{
    X86CPU *cpu = X86_CPU(cs);

    if (n != RDT_GDB_L3_OCCUPANCY || !cpu->rdt_l3_cmt) {
        return 0;
    }
    cpu->env.rdt_qm_occupancy = ldq_le_p(buf);
    cpu->env.rdt_qm_fed = true;
    return 8;
}

/*
 * One feature serves every vCPU with the same number of classes of
 * service at the same register base: they describe the same registers.
 */
typedef struct RdtGdbFeature {
    GDBFeature feature;
    uint32_t closids;
    int base_reg;
} RdtGdbFeature;

static GPtrArray *rdt_gdb_features;

static const GDBFeature *rdt_gdb_feature(uint32_t closids, int base_reg)
{
    GDBFeatureBuilder builder;
    RdtGdbFeature *f;
    unsigned i;
    int level;
    int regnum = 0;

    if (!rdt_gdb_features) {
        rdt_gdb_features = g_ptr_array_new();
    }
    for (i = 0; i < rdt_gdb_features->len; i++) {
        f = g_ptr_array_index(rdt_gdb_features, i);
        if (f->closids == closids && f->base_reg == base_reg) {
            return &f->feature;
        }
    }

    f = g_new0(RdtGdbFeature, 1);
    f->closids = closids;
    f->base_reg = base_reg;
    gdb_feature_builder_init(&builder, &f->feature, "org.qemu.i386.rdt",
                             "i386-rdt.xml", base_reg);
    for (i = 0; i < RDT_GDB_FIXED_REGS; i++) {
        bool msr = i <= RDT_GDB_MISC_FEATURE_CONTROL ||
                   i >= RDT_GDB_QM_EVTSEL;

        gdb_feature_builder_append_reg(&builder, rdt_gdb_fixed_names[i],
                                       msr ? 64 : 32, regnum++,
                                       msr ? "uint64" : "uint32", "rdt");
    }
    for (level = 2; level <= 3; level++) {
        for (i = 0; i < closids; i++) {
            /* The builder keeps the name: it lives as long as the feature */
            gdb_feature_builder_append_reg(&builder,
                                           g_strdup_printf("l%d_cbm%u",
                                                           level, i),
                                           64, regnum++, "uint64", "rdt");
        }
    }
    gdb_feature_builder_end(&builder);
    g_ptr_array_add(rdt_gdb_features, f);
    return &f->feature;
}

void x86_rdt_gdb_init(X86CPU *cpu)
{
    CPUState *cs = CPU(cpu);

    if (!x86_rdt_enabled(cpu)) {
        return;
    }
    QEMU_LOCK_GUARD(&rdt_lock);
    gdb_register_coprocessor(cs, rdt_gdb_read, rdt_gdb_write,
                             rdt_gdb_feature(cpu->rdt_closids,
                                             cs->gdb_num_regs),
                             0);
}
#endif
