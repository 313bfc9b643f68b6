/*
 * catcache: a model of an emulated x86 host's L2 and L3 caches with
 * Intel Cache Allocation Technology (CAT), for measuring whether a
 * pseudo-locked region stays in its cache
 *
 * TCG has no cache, so nothing else here can tell a region that stays
 * resident from one that is evicted.  This plugin keeps a
 * set-associative LRU model of every L2 and L3 instance that the
 * emulated CPU reports in CPUID leaf 4 (sets, ways, line size, and which
 * vCPUs share it), fed with the physical address of every data access:
 *
 * - a lookup hits in any way; a fill may only allocate into the ways of
 *   the accessing vCPU's class of service (IA32_PQR_ASSOC and the
 *   capacity bitmasks), which it reads from the RDT emulation's
 *   "org.qemu.i386.rdt" registers after every WRMSR, so the rules of
 *   which writes are valid stay in one place (target/i386/rdt.c);
 * - WBINVD and INVD empty the executing vCPU's L2 and L3 instances;
 * - a store invalidates the line in every other instance of each level
 *   (coherence between modules and between sockets).
 *
 * - CLFLUSH and CLFLUSHOPT drop their line from every instance: TCG
 *   does not access their operand, so the plugin computes its address
 *   from the registers and translates it (qemu_plugin_translate_vaddr(),
 *   which the fork adds to QEMU 10.0).  Only 64-bit code is decoded.
 *
 * L1 caches, page walks, instruction fetches, DMA, prefetchers and
 * speculation are not modelled: every data access looks up the L2.
 *
 * The model feeds the vCPUs' performance counters, so that the emulated
 * host's own tools (perf, the kernel's pseudo_lock_measure) count its
 * hits and misses: with -cpu ...,pmu=on,x-tcg-pmu=on each vCPU has the writable
 * registers "org.qemu.i386.cache-events" (target/i386/pmu.c), into which
 * the plugin writes the vCPU's running totals of loads and stores that
 * hit or missed each level, by user or kernel code, just before the vCPU
 * executes RDPMC, RDMSR or WRMSR: the instructions that read the counters
 * or change what they count.
 *
 * It also answers cache monitoring (CMT; -cpu ...,l3-cmt=on): each line
 * remembers the RMID (IA32_PQR_ASSOC) of the vCPU that filled it, each
 * instance counts the lines it holds per RMID, and before a RDMSR of
 * IA32_QM_CTR the plugin writes the count of the RMID and event chosen
 * in IA32_QM_EVTSEL, in the vCPU's L3, into "l3_occupancy" of the RDT
 * feature, which RDMSR then returns.
 *
 * Software in the emulated host drives the model through a CPUID leaf
 * that no CPU defines, EAX = 0x63616368 ("cach"), EBX = command:
 *   1  arm: model from now on (until then only CPUID and WRMSR are
 *      instrumented; arming and disarming retranslate all code)
 *   2  disarm
 *   3  open a window on this vCPU, labelled by ECX:EDX (8 characters),
 *      that counts the vCPU's accesses to the virtual addresses
 *      [RSI, RSI + RDI) (all of them if RDI is 0): the interrupts that
 *      the vCPU takes meanwhile still use the caches, but do not count
 *   4  close this vCPU's window and log its counts
 *   5  open the shared window, labelled by ECX:EDX, that counts every
 *      vCPU's accesses to the virtual addresses [RSI, RSI + RDI): a
 *      process's accesses to its mapping whichever vCPU runs it, such as
 *      a nested guest's through the QEMU that runs it (what another
 *      process has at those addresses counts too: the log gives the
 *      physical span of what was counted)
 *   6  close it and log its counts, a line for each vCPU that accessed
 *      the range (with the class the vCPU is in at that moment)
 * Any code of the emulated host may use the leaf, its user space too:
 * the rig's probes and QEMU's residency measurement are processes.  The
 * plugin is a measuring instrument for a host that its user controls,
 * not something to load under an untrusted guest: such a guest could
 * arm and disarm it in a loop, and each time all translated code of
 * the machine is thrown away.
 * The kernel's own measurements, and its locking of a region, turn the
 * prefetchers off through MSR_MISC_FEATURE_CONTROL: each such stretch
 * is a window too ("prefetch-off"), logged with its physical range.
 * At exit each cache instance logs its hits and misses, in all and by
 * class of service.
 *
 * Arguments: armed=on (model from the start).  The log goes through
 * QEMU's log: -d plugin [-D FILE].  Each line starts with "catcache:".
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define CATCACHE_CPUID_LEAF     0x63616368u
#define CMD_ARM                 1
#define CMD_DISARM              2
#define CMD_WINDOW_OPEN         3
#define CMD_WINDOW_CLOSE        4
#define CMD_SHARED_WINDOW_OPEN  5
#define CMD_SHARED_WINDOW_CLOSE 6

#define RDT_FEATURE             "org.qemu.i386.rdt"
#define EVENTS_FEATURE          "org.qemu.i386.cache-events"
#define NO_TAG                  UINT64_MAX
#define MAX_CLOSIDS             64
#define MAX_RMIDS               1024
#define MSR_IA32_QM_CTR         0xc8e
#define QM_EVENT_L3_OCCUPANCY   1

/* One instance of a cache level, shared by the vCPUs whose id it has */
typedef struct Cache {
    int level;
    uint32_t id;
    uint32_t sets;
    uint32_t ways;
    uint32_t line_shift;
    uint32_t cbm_len;           /* 0: no cache allocation at this level */
    uint64_t clos_ways[MAX_CLOSIDS];    /* ways each class may fill */
    uint64_t *tag;              /* sets * ways line numbers, NO_TAG empty */
    uint16_t *owner;            /* the RMID that filled each line */
    uint64_t occupancy[MAX_RMIDS];  /* lines held, by RMID */
    uint64_t *used;             /* LRU: when each way was last used */
    uint64_t clock;
    GMutex lock;
    uint64_t hits;
    uint64_t misses;
    uint64_t clos_hits[MAX_CLOSIDS];    /* the same by class of service */
    uint64_t clos_misses[MAX_CLOSIDS];
} Cache;

/*
 * The events that feed the performance counters, numbered as the
 * registers of EVENTS_FEATURE are
 */
#define CACHE_EVENTS            16
#define CACHE_EVENT(level, store, miss, os) \
    (((((level) - 2) * 2 + (store)) * 2 + (miss)) * 2 + (os))

static const char *const cache_event_names[CACHE_EVENTS] = {
    "l2_load_hits_usr", "l2_load_hits_os",
    "l2_load_misses_usr", "l2_load_misses_os",
    "l2_store_hits_usr", "l2_store_hits_os",
    "l2_store_misses_usr", "l2_store_misses_os",
    "l3_load_hits_usr", "l3_load_hits_os",
    "l3_load_misses_usr", "l3_load_misses_os",
    "l3_store_hits_usr", "l3_store_hits_os",
    "l3_store_misses_usr", "l3_store_misses_os",
};

/* What a window counts */
typedef struct Counts {
    uint64_t accesses;
    uint64_t hits[4];           /* by the level that served them */
    uint64_t misses;            /* served by memory */
    uint64_t foreign;           /* hits in ways the class may not fill */
    uint64_t lo;                /* physical range of the accesses */
    uint64_t hi;
} Counts;

typedef struct Vcpu {
    Cache *cache[4];            /* [2] and [3]; NULL if absent */
    uint32_t clos;
    uint32_t rmid;
    uint64_t misc_feature_control;

    struct qemu_plugin_register *pqr_assoc;
    struct qemu_plugin_register *misc;
    struct qemu_plugin_register *qm_evtsel;     /* NULL: no monitoring */
    struct qemu_plugin_register *l3_occupancy;
    struct qemu_plugin_register *cbm[4][MAX_CLOSIDS];
    struct qemu_plugin_register *gpr[16];   /* by x86 register number */
    struct qemu_plugin_register *seg_base[2];   /* fs_base, gs_base */

    bool window_open;
    char label[9];
    uint64_t window_start;      /* virtual range the window counts */
    uint64_t window_end;
    Counts window;
    unsigned shared_generation; /* of the shared window in shared */
    Counts shared;
    bool prefetch_off;
    uint64_t prefetch_windows;
    Counts prefetch;
    uint64_t clflush;           /* lines flushed */
    uint64_t clflush_unresolved;    /* of which no address was found */

    /* Accesses by level, load or store, hit or miss: see CACHE_EVENT() */
    uint64_t events[CACHE_EVENTS];
    uint64_t events_fed[CACHE_EVENTS];  /* what the counters last got */
    struct qemu_plugin_register *event_reg[CACHE_EVENTS];
} Vcpu;

/*
 * The memory operand of a CLFLUSH or CLFLUSHOPT, decoded once per
 * encoding (and, RIP-relative, per address)
 */
typedef struct FlushOperand {
    int8_t base;                /* register number, or -1 */
    int8_t index;               /* register number, or -1 */
    uint8_t scale;
    int8_t seg_base;            /* 0 fs_base, 1 gs_base, -1 none */
    bool addr32;                /* 0x67: a 32-bit effective address */
    int64_t disp;               /* RIP-relative: the whole address */
} FlushOperand;

#define GPR_RAX 0
#define GPR_RCX 1
#define GPR_RDX 2
#define GPR_RBX 3
#define GPR_RSI 6
#define GPR_RDI 7

static GHashTable *flush_operands;      /* GBytes of one -> the one */
static GMutex flush_operands_lock;

static Vcpu *vcpus;
static unsigned max_vcpus;
/*
 * The cache instances, made as vCPUs first need them: at most an L2 and
 * an L3 per vCPU, so the array never moves.  cache_get() adds under
 * caches_lock and publishes the count with a release store; the vCPUs
 * that walk the instances read it with an acquire load, without the
 * lock, and never see an entry that is not there yet.
 */
static Cache **caches;
static unsigned caches_max;
static unsigned caches_len;             /* __atomic, as above */
static GMutex caches_lock;
static int armed;              /* g_atomic_int_*() */
static qemu_plugin_id_t plugin_id;
/*
 * Whether translated code reports memory accesses, WBINVD and CLFLUSH:
 * only while armed, so that an unarmed model costs a machine no more
 * than the few instructions it watches (CPUID, WRMSR).  Changing it
 * flushes the translated code (qemu_plugin_reset()).
 */
static bool instrumented;

static void plugin_retranslate(qemu_plugin_id_t id);

/*
 * The shared window: each vCPU counts into its own Vcpu.shared, which it
 * resets itself when it first sees a new generation, so that no vCPU
 * writes another's counts.  Opening and closing take shared_window_lock
 * (a vCPU's CPUID); the counting vCPUs only read the atomics.
 */
static GMutex shared_window_lock;
static unsigned shared_generation;      /* g_atomic_int_*(); 0: none yet */
static int shared_open;                 /* g_atomic_int_*() */
static uint64_t shared_start;           /* qatomic_*_u64() */
static uint64_t shared_end;
static char shared_label[9];

static bool have_rdt = true;

/* Per vCPU: its state must be read again (it executed a WRMSR) */
static struct qemu_plugin_scoreboard *dirty_board;
static qemu_plugin_u64 dirty;

static inline uint64_t qatomic_get_u64(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void qatomic_set_u64(uint64_t *p, uint64_t val)
{
    __atomic_store_n(p, val, __ATOMIC_RELAXED);
}

static void G_GNUC_PRINTF(1, 2) catlog(const char *fmt, ...)
{
    g_autofree char *text = NULL;
    g_autofree char *line = NULL;
    va_list ap;

    va_start(ap, fmt);
    text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    line = g_strdup_printf("catcache: %s\n", text);
    qemu_plugin_outs(line);
}

static uint64_t read_reg(struct qemu_plugin_register *reg)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    uint64_t val = 0;
    int len = qemu_plugin_read_register(reg, buf);

    if (len > 0) {
        memcpy(&val, buf->data, MIN((size_t)len, sizeof(val)));
    }
    return GUINT64_FROM_LE(val);
}

/*
 * Write @val into a 64-bit register; whether the target took it.  Only
 * from a callback registered with QEMU_PLUGIN_CB_RW_REGS (or a vCPU
 * init/exit one): qemu_plugin_write_register() refuses the write (-1)
 * from any other, as it refuses a register the target keeps (0).
 */
static bool write_reg(struct qemu_plugin_register *reg, uint64_t val)
{
    g_autoptr(GByteArray) buf = g_byte_array_sized_new(sizeof(val));

    val = GUINT64_TO_LE(val);
    g_byte_array_append(buf, (const guint8 *)&val, sizeof(val));
    return qemu_plugin_write_register(reg, buf) > 0;
}

/* The instance (@level, @id), made on first use */
static Cache *cache_get(int level, uint32_t id, uint32_t sets, uint32_t ways,
                        uint32_t line_size, uint32_t cbm_len)
{
    Cache *c;
    unsigned i;

    g_mutex_lock(&caches_lock);
    for (i = 0; i < caches_len; i++) {
        c = caches[i];
        if (c->level == level && c->id == id) {
            g_mutex_unlock(&caches_lock);
            return c;
        }
    }
    c = g_new0(Cache, 1);
    c->level = level;
    c->id = id;
    c->sets = sets;
    c->ways = ways;
    c->line_shift = __builtin_ctz(line_size);
    c->cbm_len = cbm_len;
    c->tag = g_new(uint64_t, (size_t)sets * ways);
    c->owner = g_new0(uint16_t, (size_t)sets * ways);
    c->used = g_new0(uint64_t, (size_t)sets * ways);
    memset(c->tag, 0xff, sizeof(uint64_t) * sets * ways);
    /* Until a class's mask is read, it may fill any way, as at reset */
    for (i = 0; i < MAX_CLOSIDS; i++) {
        c->clos_ways[i] = ways >= 64 ? UINT64_MAX : (1ULL << ways) - 1;
    }
    g_mutex_init(&c->lock);
    g_assert(caches_len < caches_max);
    caches[caches_len] = c;
    __atomic_store_n(&caches_len, caches_len + 1, __ATOMIC_RELEASE);
    g_mutex_unlock(&caches_lock);
    catlog("L%d cache %u: %u sets, %u ways, %u-byte lines, %s", level, id,
         sets, ways, line_size,
         cbm_len ? "cache allocation" : "no cache allocation");
    return c;
}

/*
 * The ways a capacity bitmask lets fills take: with a CBM as long as the
 * associativity (what rdt.c reports by default) bit i is way i;
 * otherwise each bit stands for an equal share of the ways.
 */
static uint64_t cbm_to_ways(const Cache *c, uint64_t cbm)
{
    uint64_t ways = 0;
    uint32_t w;

    if (!c->cbm_len) {
        return c->ways >= 64 ? UINT64_MAX : (1ULL << c->ways) - 1;
    }
    for (w = 0; w < c->ways && w < 64; w++) {
        if (cbm & (1ULL << ((uint64_t)w * c->cbm_len / c->ways))) {
            ways |= 1ULL << w;
        }
    }
    return ways;
}

static void counts_reset(Counts *n)
{
    memset(n, 0, sizeof(*n));
    n->lo = UINT64_MAX;
}

static void counts_log(const char *what, unsigned vcpu, const Vcpu *v,
                       const Counts *n)
{
    uint64_t hits = n->hits[2] + n->hits[3];

    catlog("%s vcpu %u clos %u: accesses %" PRIu64 " hits %" PRIu64
         " (L2 %" PRIu64 ", L3 %" PRIu64 ") misses %" PRIu64
         " hit-rate %.2f%% other-ways %" PRIu64 " range 0x%" PRIx64
         "-0x%" PRIx64, what, vcpu, v->clos, n->accesses, hits, n->hits[2],
         n->hits[3], n->misses,
         n->accesses ? 100.0 * hits / n->accesses : 0.0, n->foreign,
         n->accesses ? n->lo : 0, n->accesses ? n->hi : 0);
}

/*
 * Read the vCPU's class of service, the masks of its caches (they belong
 * to the cache: a vCPU that writes one changes it for all that share the
 * cache) and the prefetcher controls again; a change of the controls
 * opens or closes a prefetch-off window.
 */
static void vcpu_read_state(unsigned vcpu)
{
    Vcpu *v = &vcpus[vcpu];
    uint64_t misc, pqr_assoc;
    unsigned clos;
    int level;

    pqr_assoc = read_reg(v->pqr_assoc);
    v->clos = (uint32_t)(pqr_assoc >> 32) % MAX_CLOSIDS;
    v->rmid = (uint32_t)pqr_assoc % MAX_RMIDS;
    for (level = 2; level <= 3; level++) {
        Cache *c = v->cache[level];

        for (clos = 0; c && c->cbm_len && clos < MAX_CLOSIDS; clos++) {
            if (v->cbm[level][clos]) {
                qatomic_set_u64(&c->clos_ways[clos],
                                cbm_to_ways(c, read_reg(v->cbm[level][clos])));
            }
        }
    }
    misc = read_reg(v->misc);
    if (!v->misc_feature_control && misc) {
        v->prefetch_off = true;
        counts_reset(&v->prefetch);
    } else if (v->misc_feature_control && !misc && v->prefetch_off) {
        g_autofree char *what = g_strdup_printf("prefetch-off window %" PRIu64,
                                                ++v->prefetch_windows);

        v->prefetch_off = false;
        if (g_atomic_int_get(&armed)) {
            counts_log(what, vcpu, v, &v->prefetch);
        }
    }
    v->misc_feature_control = misc;
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
    g_autoptr(GArray) regs = qemu_plugin_get_registers();
    g_autoptr(GHashTable) byname = g_hash_table_new(g_str_hash, g_str_equal);
    static const char *const gprs[16] = {
        "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"
    };
    Vcpu *v;
    unsigned i;
    int level;

    if (vcpu >= max_vcpus) {
        return;
    }
    v = &vcpus[vcpu];
    for (i = 0; i < regs->len; i++) {
        qemu_plugin_reg_descriptor *r =
            &g_array_index(regs, qemu_plugin_reg_descriptor, i);
        unsigned e;

        if (!strcmp(r->feature, EVENTS_FEATURE)) {
            for (e = 0; e < CACHE_EVENTS; e++) {
                if (!strcmp(r->name, cache_event_names[e])) {
                    v->event_reg[e] = r->handle;
                }
            }
            continue;
        }
        /* The general registers by name, ours by feature and name */
        if (!g_hash_table_contains(byname, r->name) &&
            (!strcmp(r->feature, RDT_FEATURE) ||
             !g_str_has_prefix(r->name, "l"))) {
            g_hash_table_insert(byname, (gpointer)r->name, r->handle);
        }
    }
    for (i = 0; i < 16; i++) {
        v->gpr[i] = g_hash_table_lookup(byname, gprs[i]);
    }
    v->seg_base[0] = g_hash_table_lookup(byname, "fs_base");
    v->seg_base[1] = g_hash_table_lookup(byname, "gs_base");
    v->pqr_assoc = g_hash_table_lookup(byname, "pqr_assoc");
    v->misc = g_hash_table_lookup(byname, "misc_feature_control");
    v->qm_evtsel = g_hash_table_lookup(byname, "qm_evtsel");
    v->l3_occupancy = g_hash_table_lookup(byname, "l3_occupancy");
    if (!v->pqr_assoc || !v->misc) {
        if (have_rdt) {
            catlog("vcpu %u has no %s registers: the CPU needs l2-cat=on or "
                 "l3-cat=on; nothing is modelled", vcpu, RDT_FEATURE);
        }
        have_rdt = false;
        return;
    }

    for (level = 2; level <= 3; level++) {
        g_autofree char *id_name = g_strdup_printf("l%d_id", level);
        g_autofree char *sets_name = g_strdup_printf("l%d_sets", level);
        g_autofree char *ways_name = g_strdup_printf("l%d_ways", level);
        g_autofree char *line_name = g_strdup_printf("l%d_line_size", level);
        g_autofree char *len_name = g_strdup_printf("l%d_cbm_len", level);
        uint32_t sets = read_reg(g_hash_table_lookup(byname, sets_name));
        uint32_t ways = read_reg(g_hash_table_lookup(byname, ways_name));
        uint32_t line = read_reg(g_hash_table_lookup(byname, line_name));

        if (!sets || !ways || ways > 64 || !line || (line & (line - 1))) {
            continue;
        }
        v->cache[level] = cache_get(level,
            read_reg(g_hash_table_lookup(byname, id_name)), sets, ways, line,
            read_reg(g_hash_table_lookup(byname, len_name)));
        for (i = 0; i < MAX_CLOSIDS; i++) {
            g_autofree char *cbm = g_strdup_printf("l%d_cbm%u", level, i);

            v->cbm[level][i] = g_hash_table_lookup(byname, cbm);
        }
    }
    counts_reset(&v->window);
    counts_reset(&v->prefetch);
    vcpu_read_state(vcpu);
}

/*
 * Look @line up in @c for class @clos: the way that holds it, or -1 after
 * filling it into a way of @ways_mask
 */
static int cache_access(Cache *c, uint64_t line, uint32_t clos,
                        uint32_t rmid, uint64_t ways_mask)
{
    uint64_t set = line % c->sets;
    uint64_t *tag = &c->tag[set * c->ways];
    uint64_t *used = &c->used[set * c->ways];
    uint32_t w, victim = UINT32_MAX;
    int hit = -1;

    g_mutex_lock(&c->lock);
    c->clock++;
    for (w = 0; w < c->ways; w++) {
        if (tag[w] == line) {
            used[w] = c->clock;
            hit = w;
            break;
        }
    }
    if (hit >= 0) {
        c->hits++;
        c->clos_hits[clos]++;
    } else {
        c->misses++;
        c->clos_misses[clos]++;
        /* The least recently used of the ways this class may fill */
        for (w = 0; w < c->ways; w++) {
            if (!(ways_mask & (1ULL << w))) {
                continue;
            }
            if (tag[w] == NO_TAG) {
                victim = w;
                break;
            }
            if (victim == UINT32_MAX || used[w] < used[victim]) {
                victim = w;
            }
        }
        if (victim != UINT32_MAX) {
            uint16_t *owner = &c->owner[set * c->ways + victim];

            if (tag[victim] != NO_TAG) {
                c->occupancy[*owner]--;
            }
            tag[victim] = line;
            used[victim] = c->clock;
            *owner = rmid;
            c->occupancy[rmid]++;
        }
    }
    g_mutex_unlock(&c->lock);
    return hit;
}

/* Empty the way @slot (set * ways + way) of @c, which holds a line */
static void cache_drop(Cache *c, uint64_t slot)
{
    c->occupancy[c->owner[slot]]--;
    c->tag[slot] = NO_TAG;
}

/* Drop @line from every instance of @level but @mine (coherence) */
static void cache_invalidate_others(int level, const Cache *mine,
                                    uint64_t line)
{
    unsigned i, n = __atomic_load_n(&caches_len, __ATOMIC_ACQUIRE);
    uint32_t w;

    for (i = 0; i < n; i++) {
        Cache *c = caches[i];
        uint64_t *tag;

        if (c == mine || c->level != level) {
            continue;
        }
        tag = &c->tag[(line % c->sets) * c->ways];
        g_mutex_lock(&c->lock);
        for (w = 0; w < c->ways; w++) {
            if (tag[w] == line) {
                cache_drop(c, tag - c->tag + w);
            }
        }
        g_mutex_unlock(&c->lock);
    }
}

/* Empty @c; the number of lines it held */
static uint64_t cache_flush(Cache *c)
{
    uint64_t i, lines = 0;

    g_mutex_lock(&c->lock);
    for (i = 0; i < (uint64_t)c->sets * c->ways; i++) {
        if (c->tag[i] != NO_TAG) {
            lines++;
            cache_drop(c, i);
        }
    }
    g_mutex_unlock(&c->lock);
    return lines;
}

static void count(Counts *n, int served_by, bool foreign, uint64_t addr)
{
    n->accesses++;
    n->foreign += foreign;
    if (served_by) {
        n->hits[served_by]++;
    } else {
        n->misses++;
    }
    n->lo = MIN(n->lo, addr);
    n->hi = MAX(n->hi, addr + 1);
}

/* @udata: non-NULL for an access by kernel code (see vcpu_tb_trans()) */
static void vcpu_mem(unsigned int vcpu, qemu_plugin_meminfo_t info,
                     uint64_t vaddr, void *udata)
{
    bool os = udata;
    struct qemu_plugin_hwaddr *hw;
    Vcpu *v;
    uint64_t addr;
    int level, served_by = 0;
    bool foreign = false, store;

    if (!g_atomic_int_get(&armed)) {
        return;
    }
    hw = qemu_plugin_get_hwaddr(info, vaddr);
    if (!hw || qemu_plugin_hwaddr_is_io(hw) || vcpu >= max_vcpus) {
        return;
    }
    v = &vcpus[vcpu];
    addr = qemu_plugin_hwaddr_phys_addr(hw);
    store = qemu_plugin_mem_is_store(info);
    for (level = 2; level <= 3; level++) {
        Cache *c = v->cache[level];
        uint64_t line, ways;
        int way;

        if (!c) {
            continue;
        }
        line = addr >> c->line_shift;
        if (store) {
            cache_invalidate_others(level, c, line);
        }
        ways = qatomic_get_u64(&c->clos_ways[v->clos]);
        way = cache_access(c, line, v->clos, v->rmid, ways);
        v->events[CACHE_EVENT(level, store, way < 0, os)]++;
        if (way >= 0) {
            served_by = level;
            foreign = !(ways & (1ULL << way));
            /* Not inclusive: an L2 hit leaves the L3 alone */
            break;
        }
    }
    if (v->window_open && vaddr - v->window_start <
        v->window_end - v->window_start) {
        count(&v->window, served_by, foreign, addr);
    }
    if (v->prefetch_off) {
        count(&v->prefetch, served_by, foreign, addr);
    }
    if (g_atomic_int_get(&shared_open) &&
        vaddr - qatomic_get_u64(&shared_start) <
        qatomic_get_u64(&shared_end) - qatomic_get_u64(&shared_start)) {
        unsigned generation = g_atomic_int_get(&shared_generation);

        if (v->shared_generation != generation) {
            counts_reset(&v->shared);
            v->shared_generation = generation;
        }
        count(&v->shared, served_by, foreign, addr);
    }
}

/*
 * At the first TB after one of the vCPU's WRMSRs (WRMSR ends its TB):
 * the MSR has its new value.  Clear the flag before reading, so that a
 * later WRMSR is not lost.
 */
static void vcpu_state_changed(unsigned int vcpu, void *udata)
{
    qemu_plugin_u64_set(dirty, vcpu, 0);
    if (vcpu < max_vcpus && vcpus[vcpu].pqr_assoc) {
        vcpu_read_state(vcpu);
    }
}

/*
 * Before RDMSR of IA32_QM_CTR: the lines of the vCPU's L3 that the RMID
 * of IA32_QM_EVTSEL filled.  Another event, or an RMID beyond the CPU's,
 * is IA32_QM_CTR's to refuse.
 */
static void vcpu_feed_occupancy(Vcpu *v)
{
    uint64_t evtsel = read_reg(v->qm_evtsel);
    uint32_t rmid = (uint32_t)(evtsel >> 32) % MAX_RMIDS;
    Cache *c = v->cache[3];
    uint64_t lines = 0;

    if ((evtsel & 0xff) != QM_EVENT_L3_OCCUPANCY) {
        return;
    }
    if (c) {
        g_mutex_lock(&c->lock);
        lines = c->occupancy[rmid];
        g_mutex_unlock(&c->lock);
    }
    write_reg(v->l3_occupancy, lines);
}

/*
 * Before RDPMC, RDMSR and WRMSR: give the vCPU's performance counters
 * what the model counted since the last time
 */
static void vcpu_feed_counters(unsigned int vcpu, void *udata)
{
    Vcpu *v;
    unsigned e;

    if (vcpu >= max_vcpus) {
        return;
    }
    v = &vcpus[vcpu];
    if (v->l3_occupancy && v->gpr[GPR_RCX] &&
        (uint32_t)read_reg(v->gpr[GPR_RCX]) == MSR_IA32_QM_CTR) {
        vcpu_feed_occupancy(v);
    }
    for (e = 0; e < CACHE_EVENTS; e++) {
        if (v->event_reg[e] && v->events[e] != v->events_fed[e] &&
            write_reg(v->event_reg[e], v->events[e])) {
            v->events_fed[e] = v->events[e];
        }
    }
}

static void vcpu_wbinvd(unsigned int vcpu, void *udata)
{
    Vcpu *v;
    int level;

    if (vcpu >= max_vcpus || !g_atomic_int_get(&armed)) {
        return;
    }
    v = &vcpus[vcpu];
    for (level = 2; level <= 3; level++) {
        if (v->cache[level]) {
            uint64_t lines = cache_flush(v->cache[level]);

            catlog("%s vcpu %u: L%d cache %u emptied, %" PRIu64 " lines",
                   udata ? "invd" : "wbinvd", vcpu, level,
                   v->cache[level]->id, lines);
        }
    }
}

/* Drop @addr's line from every instance of every level */
static void cache_flush_line(uint64_t addr)
{
    unsigned i, n = __atomic_load_n(&caches_len, __ATOMIC_ACQUIRE);
    uint32_t w;

    for (i = 0; i < n; i++) {
        Cache *c = caches[i];
        uint64_t line = addr >> c->line_shift;
        uint64_t *tag = &c->tag[(line % c->sets) * c->ways];

        g_mutex_lock(&c->lock);
        for (w = 0; w < c->ways; w++) {
            if (tag[w] == line) {
                cache_drop(c, tag - c->tag + w);
            }
        }
        g_mutex_unlock(&c->lock);
    }
}

/* Before a CLFLUSH or CLFLUSHOPT: the address of its operand */
static void vcpu_clflush(unsigned int vcpu, void *udata)
{
    const FlushOperand *op = udata;
    uint64_t vaddr = op->disp, addr;
    Vcpu *v;

    if (vcpu >= max_vcpus || !g_atomic_int_get(&armed)) {
        return;
    }
    v = &vcpus[vcpu];
    v->clflush++;
    if (op->base >= 0) {
        vaddr += read_reg(v->gpr[op->base]);
    }
    if (op->index >= 0) {
        vaddr += read_reg(v->gpr[op->index]) << op->scale;
    }
    /* In 64-bit code, 0x67 wraps the effective address at 4 GiB */
    if (op->addr32) {
        vaddr = (uint32_t)vaddr;
    }
    if (op->seg_base >= 0 && v->seg_base[op->seg_base]) {
        vaddr += read_reg(v->seg_base[op->seg_base]);
    }
    if (!qemu_plugin_translate_vaddr(vaddr, &addr)) {
        /* It faults instead (#PF), and flushes nothing */
        v->clflush_unresolved++;
        return;
    }
    cache_flush_line(addr);
}

/*
 * Decode the memory operand of a CLFLUSH or CLFLUSHOPT at @modrm (64-bit
 * code: ModRM, SIB, displacement, REX.X/B in @rex, segment override
 * @seg, 0x64 or 0x65), the instruction at @vaddr being @len bytes.  The
 * result is shared by every translation of the same operand.
 */
static const FlushOperand *decode_flush_operand(const uint8_t *modrm,
                                                const uint8_t *end,
                                                uint8_t rex, uint8_t seg,
                                                bool addr32, uint64_t vaddr,
                                                size_t len)
{
    FlushOperand op;
    const uint8_t *p = modrm + 1;
    unsigned mod = *modrm >> 6, rm = *modrm & 7;
    bool rip = false;
    g_autoptr(GBytes) key = NULL;
    FlushOperand *shared;

    /* The key is the whole struct, padding included */
    memset(&op, 0, sizeof(op));
    op.base = op.index = op.seg_base = -1;
    if (rm == 4) {
        uint8_t sib;

        if (p >= end) {
            return NULL;
        }
        sib = *p++;
        op.scale = sib >> 6;
        op.index = ((sib >> 3) & 7) | ((rex & 2) << 2);
        if (op.index == 4) {
            op.index = -1;      /* no index */
        }
        op.base = (sib & 7) | ((rex & 1) << 3);
        if ((sib & 7) == 5 && mod == 0) {
            op.base = -1;       /* disp32, no base */
            mod = 2;
        }
    } else if (rm == 5 && mod == 0) {
        rip = true;
        mod = 2;
    } else {
        op.base = rm | ((rex & 1) << 3);
    }
    if (mod == 1 && p < end) {
        op.disp = (int8_t)*p;
    } else if (mod == 2 && p + 4 <= end) {
        int32_t disp;

        memcpy(&disp, p, 4);
        op.disp = (int32_t)GUINT32_FROM_LE(disp);
    } else if (mod != 0) {
        return NULL;
    }
    if (rip) {
        op.disp += vaddr + len;
    }
    op.seg_base = seg == 0x64 ? 0 : seg == 0x65 ? 1 : -1;
    op.addr32 = addr32;

    key = g_bytes_new(&op, sizeof(op));
    g_mutex_lock(&flush_operands_lock);
    shared = g_hash_table_lookup(flush_operands, key);
    if (!shared) {
        shared = g_memdup2(&op, sizeof(op));
        g_hash_table_insert(flush_operands, g_bytes_ref(key), shared);
    }
    g_mutex_unlock(&flush_operands_lock);
    return shared;
}

/* Command 5: count every vCPU's accesses to [start, start + len) */
static void shared_window_open(const char *label, uint64_t start, uint64_t len)
{
    g_mutex_lock(&shared_window_lock);
    g_atomic_int_set(&shared_open, 0);
    g_strlcpy(shared_label, label, sizeof(shared_label));
    qatomic_set_u64(&shared_start, start);
    qatomic_set_u64(&shared_end, start + len);
    g_atomic_int_inc(&shared_generation);
    g_atomic_int_set(&shared_open, 1);
    g_mutex_unlock(&shared_window_lock);
    catlog("shared window %s opened: 0x%" PRIx64 "-0x%" PRIx64, label,
           start, start + len);
}

/*
 * Command 6: stop counting and log what each vCPU counted.  A vCPU that
 * was inside vcpu_mem() at that moment may add its access after the
 * line is logged: one access in millions, left uncounted.
 */
static void shared_window_close(void)
{
    g_autofree char *what = NULL;
    unsigned generation, i, vcpus_counted = 0;
    Counts all;

    g_mutex_lock(&shared_window_lock);
    if (!g_atomic_int_get(&shared_open)) {
        g_mutex_unlock(&shared_window_lock);
        return;
    }
    g_atomic_int_set(&shared_open, 0);
    generation = g_atomic_int_get(&shared_generation);
    counts_reset(&all);
    what = g_strdup_printf("window %s", shared_label);
    for (i = 0; i < max_vcpus; i++) {
        const Counts *n = &vcpus[i].shared;
        int level;

        if (vcpus[i].shared_generation != generation || !n->accesses) {
            continue;
        }
        counts_log(what, i, &vcpus[i], n);
        vcpus_counted++;
        all.accesses += n->accesses;
        all.misses += n->misses;
        all.foreign += n->foreign;
        all.lo = MIN(all.lo, n->lo);
        all.hi = MAX(all.hi, n->hi);
        for (level = 2; level <= 3; level++) {
            all.hits[level] += n->hits[level];
        }
    }
    catlog("shared window %s closed: %u vcpus, accesses %" PRIu64
           " hits %" PRIu64 " misses %" PRIu64 " range 0x%" PRIx64 "-0x%"
           PRIx64, shared_label, vcpus_counted, all.accesses,
           all.hits[2] + all.hits[3], all.misses,
           all.accesses ? all.lo : 0, all.accesses ? all.hi : 0);
    g_mutex_unlock(&shared_window_lock);
}

/* A window's label: the eight characters in ECX:EDX */
static void read_label(Vcpu *v, char label[9])
{
    uint64_t chars = (read_reg(v->gpr[GPR_RCX]) & 0xffffffff) |
                     (read_reg(v->gpr[GPR_RDX]) << 32);

    memcpy(label, &chars, 8);
    label[8] = 0;
    g_strdelimit(label, "\t\n\r ", '_');
}

static void vcpu_cpuid(unsigned int vcpu, void *udata)
{
    Vcpu *v;
    char label[9];

    if (vcpu >= max_vcpus || !vcpus[vcpu].gpr[GPR_RAX]) {
        return;
    }
    v = &vcpus[vcpu];
    if ((uint32_t)read_reg(v->gpr[GPR_RAX]) != CATCACHE_CPUID_LEAF) {
        return;
    }
    switch ((uint32_t)read_reg(v->gpr[GPR_RBX])) {
    case CMD_ARM:
        g_atomic_int_set(&armed, 1);
        catlog("armed by vcpu %u", vcpu);
        qemu_plugin_reset(plugin_id, plugin_retranslate);
        break;
    case CMD_DISARM:
        g_atomic_int_set(&armed, 0);
        catlog("disarmed by vcpu %u", vcpu);
        qemu_plugin_reset(plugin_id, plugin_retranslate);
        break;
    case CMD_WINDOW_OPEN:
        read_label(v, v->label);
        v->window_start = read_reg(v->gpr[GPR_RSI]);
        v->window_end = read_reg(v->gpr[GPR_RDI]) ?
            v->window_start + read_reg(v->gpr[GPR_RDI]) :
            v->window_start - 1;
        counts_reset(&v->window);
        v->window_open = true;
        break;
    case CMD_WINDOW_CLOSE:
        if (v->window_open) {
            g_autofree char *what = g_strdup_printf("window %s", v->label);

            v->window_open = false;
            counts_log(what, vcpu, v, &v->window);
        }
        break;
    case CMD_SHARED_WINDOW_OPEN:
        read_label(v, label);
        shared_window_open(label, read_reg(v->gpr[GPR_RSI]),
                           read_reg(v->gpr[GPR_RDI]));
        break;
    case CMD_SHARED_WINDOW_CLOSE:
        shared_window_close();
        break;
    }
}

/*
 * The instruction's opcode after its prefixes, or NULL if it has fewer
 * than two bytes from there; its REX byte in *@rex, its last segment
 * override in *@seg, whether it has an address-size override in *@addr32
 */
static const uint8_t *insn_opcode(const uint8_t *p, const uint8_t *end,
                                  uint8_t *rex, uint8_t *seg, bool *addr32)
{
    *rex = 0;
    *seg = 0;
    *addr32 = false;
    for (; p < end; p++) {
        switch (*p) {
        case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
            *seg = *p;
            continue;
        case 0x67:
            *addr32 = true;
            continue;
        case 0x66: case 0xf0: case 0xf2: case 0xf3:
            continue;
        }
        /* One translated instruction: a 0x4x byte before 0F is a REX */
        if ((*p & 0xf0) == 0x40 && p + 1 < end && p[1] == 0x0f) {
            *rex = *p;
            continue;
        }
        break;
    }
    return p + 1 < end ? p : NULL;
}

static void vcpu_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    size_t i;

    qemu_plugin_register_vcpu_tb_exec_cond_cb(tb, vcpu_state_changed,
                                              QEMU_PLUGIN_CB_R_REGS,
                                              QEMU_PLUGIN_COND_NE, dirty, 0,
                                              NULL);
    for (i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint8_t bytes[16];
        size_t len = qemu_plugin_insn_data(insn, bytes, sizeof(bytes));
        const uint8_t *op;
        const FlushOperand *operand;
        uint8_t rex, seg;
        bool addr32;

        /*
         * The performance counters' USR and OS filters want the privilege
         * of the code: code in the upper half of the address space is the
         * kernel's, as Linux lays it out (reading CS for each access would
         * cost more than the model)
         */
        if (instrumented) {
            bool os = qemu_plugin_insn_vaddr(insn) >> 63;

            qemu_plugin_register_vcpu_mem_cb(insn, vcpu_mem,
                                             QEMU_PLUGIN_CB_NO_REGS,
                                             QEMU_PLUGIN_MEM_RW,
                                             os ? (void *)1 : NULL);
        }
        op = insn_opcode(bytes, bytes + len, &rex, &seg, &addr32);
        if (!op || op[0] != 0x0f ||
            (!instrumented && op[1] != 0x30 && op[1] != 0x32 &&
             op[1] != 0x33 && op[1] != 0xa2)) {
            continue;
        }
        switch (op[1]) {
        case 0x30:      /* WRMSR */
            qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
                insn, QEMU_PLUGIN_INLINE_STORE_U64, dirty, 1);
            /* fall through */
        case 0x32:      /* RDMSR */
        case 0x33:      /* RDPMC */
            /* RW_REGS: vcpu_feed_counters() writes registers */
            qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_feed_counters,
                                                   QEMU_PLUGIN_CB_RW_REGS,
                                                   NULL);
            break;
        case 0x08:      /* INVD */
        case 0x09:      /* WBINVD */
            qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_wbinvd,
                                                   QEMU_PLUGIN_CB_NO_REGS,
                                                   op[1] == 0x08 ?
                                                   (void *)1 : NULL);
            break;
        case 0xa2:      /* CPUID */
            qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_cpuid,
                                                   QEMU_PLUGIN_CB_R_REGS,
                                                   NULL);
            break;
        case 0xae:      /* CLFLUSH, CLFLUSHOPT: 0F AE /7, memory operand */
            if (op + 2 >= bytes + len || (op[2] >> 6) == 3 ||
                ((op[2] >> 3) & 7) != 7) {
                break;
            }
            operand = decode_flush_operand(op + 2, bytes + len, rex, seg,
                                           addr32,
                                           qemu_plugin_insn_vaddr(insn),
                                           qemu_plugin_insn_size(insn));
            if (operand) {
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn, vcpu_clflush, QEMU_PLUGIN_CB_R_REGS,
                    (void *)operand);
            }
            break;
        }
    }
}

static void plugin_exit(qemu_plugin_id_t id, void *p)
{
    uint64_t clflush = 0, unresolved = 0;
    unsigned i;

    for (i = 0; i < caches_len; i++) {
        Cache *c = caches[i];
        unsigned clos;

        catlog("L%d cache %u: hits %" PRIu64 " misses %" PRIu64, c->level,
               c->id, c->hits, c->misses);
        for (clos = 0; clos < MAX_CLOSIDS; clos++) {
            if (c->clos_hits[clos] || c->clos_misses[clos]) {
                catlog("L%d cache %u clos %u: hits %" PRIu64 " misses %"
                       PRIu64, c->level, c->id, clos, c->clos_hits[clos],
                       c->clos_misses[clos]);
            }
        }
    }
    for (i = 0; i < max_vcpus; i++) {
        clflush += vcpus[i].clflush;
        unresolved += vcpus[i].clflush_unresolved;
    }
    catlog("CLFLUSH/CLFLUSHOPT: %" PRIu64 " lines flushed, %" PRIu64
           " unmapped", clflush, unresolved);
}

static void plugin_register(qemu_plugin_id_t id)
{
    qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, vcpu_tb_trans);
    qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
}

/*
 * After qemu_plugin_reset() (every vCPU stopped, the translated code and
 * the callbacks gone): translate anew for the armed state
 */
static void plugin_retranslate(qemu_plugin_id_t id)
{
    instrumented = g_atomic_int_get(&armed);
    plugin_register(id);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t *info,
                                           int argc, char **argv)
{
    int i;

    if (!info->system_emulation || strcmp(info->target_name, "x86_64")) {
        fprintf(stderr, "catcache: x86_64 system emulation only\n");
        return -1;
    }
    for (i = 0; i < argc; i++) {
        g_auto(GStrv) kv = g_strsplit(argv[i], "=", 2);
        bool on;

        if (g_strv_length(kv) == 2 && !strcmp(kv[0], "armed") &&
            qemu_plugin_bool_parse(kv[0], kv[1], &on)) {
            g_atomic_int_set(&armed, on);
        } else {
            fprintf(stderr, "catcache: unknown argument '%s' (armed=on|off)\n",
                    argv[i]);
            return -1;
        }
    }

    max_vcpus = info->system.max_vcpus;
    vcpus = g_new0(Vcpu, max_vcpus);
    caches_max = 2 * max_vcpus;
    caches = g_new0(Cache *, caches_max);
    flush_operands = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
                                           (GDestroyNotify)g_bytes_unref,
                                           g_free);
    dirty_board = qemu_plugin_scoreboard_new(sizeof(uint64_t));
    dirty = qemu_plugin_scoreboard_u64(dirty_board);

    plugin_id = id;
    instrumented = g_atomic_int_get(&armed);
    plugin_register(id);
    return 0;
}
