/*
 * memory-backend-pseudolock: query-pseudolock-residency and
 * info pseudolock-residency
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * How much of a region is in its cache, measured where it matters: in
 * QEMU's own mapping.  A thread on the CPUs of the region's cache reads
 * every line once, in random order (so that no prefetcher guesses the
 * next), and times each read with the TSC; the reply is the histogram
 * of the latencies and the share under a hit threshold.  Reads from
 * those CPUs hit the locked ways and change nothing; reads from other
 * CPUs would take the lines out, which is why the thread is pinned.
 */

#include "qemu/osdep.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "qapi/qapi-commands-pseudolock.h"
#include "qemu/thread.h"
#include "system/hostmem-pseudolock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>

#define RESIDENCY_LINE_SIZE     64
#define RESIDENCY_BUCKETS       24      /* up to 2^24 cycles and beyond */

/* The leaf and commands of contrib/plugins/catcache.c */
#define CATCACHE_LEAF           0x63616368u
#define CATCACHE_WINDOW_OPEN    3
#define CATCACHE_WINDOW_CLOSE   4

typedef struct ResidencyRun {
    const uint8_t *base;
    uint64_t lines;
    GArray *cpus;               /* of unsigned: where to run */
    bool hypervisor;

    /* Results */
    int err;                    /* errno of sched_setaffinity() */
    unsigned cpu;
    uint64_t *cycles;           /* one a read, in read order */
} ResidencyRun;

/* Whether CPUID.1:ECX says that we run under a hypervisor */
static bool residency_under_hypervisor(void)
{
    unsigned a, b, c, d;

    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1U << 31));
}

/*
 * Open (with the region's range) or close a window of the catcache
 * model, if the "host" is emulated with it; elsewhere this leaf is one
 * that no CPU defines, and the window is never asked for.
 */
static void residency_model_window(unsigned cmd, const void *base,
                                   uint64_t len)
{
#ifdef __x86_64__
    uint32_t a = CATCACHE_LEAF, b = cmd, c = 0, d = 0;

    if (cmd == CATCACHE_WINDOW_OPEN) {
        memcpy(&c, "qmp-", 4);
        memcpy(&d, "res\0", 4);
    }
    asm volatile("cpuid" : "+a"(a), "+b"(b), "+c"(c), "+d"(d)
                 : "S"(base), "D"(len) : "memory");
#endif
}

/* One read of @p, timed: the fences keep the load between the stamps */
static inline uint64_t residency_time_read(const volatile uint8_t *p)
{
    uint64_t start, end;

    _mm_lfence();
    start = __rdtsc();
    _mm_lfence();
    (void)*p;
    _mm_lfence();
    end = __rdtsc();
    return end - start;
}

/* Whether the calling thread may only run on CPUs of @cpus */
static bool residency_within(const cpu_set_t *cpus)
{
    cpu_set_t mine, both;

    if (sched_getaffinity(0, sizeof(mine), &mine) < 0) {
        return false;
    }
    CPU_AND(&both, &mine, cpus);
    return CPU_EQUAL(&both, &mine);
}

static void *residency_thread(void *opaque)
{
    ResidencyRun *run = opaque;
    g_autoptr(GRand) rand = g_rand_new();
    g_autofree uint64_t *order = g_new(uint64_t, run->lines);
    cpu_set_t set;
    uint64_t i;

    CPU_ZERO(&set);
    for (i = 0; i < run->cpus->len; i++) {
        CPU_SET(g_array_index(run->cpus, unsigned, i), &set);
    }
    /*
     * A thread already confined to the cache's CPUs (QEMU pinned there,
     * as libvirt's emulatorpin does) stays as it is: under a seccomp
     * sandbox with resourcecontrol=deny, it could not change its
     * affinity at all.
     */
    if (!residency_within(&set) &&
        sched_setaffinity(0, sizeof(set), &set) < 0) {
        run->err = errno;
        return NULL;
    }

    /* A random order of the lines (Fisher-Yates) */
    for (i = 0; i < run->lines; i++) {
        order[i] = i;
    }
    for (i = run->lines - 1; i > 0; i--) {
        uint64_t j = g_rand_int_range(rand, 0, i + 1);
        uint64_t tmp = order[i];

        order[i] = order[j];
        order[j] = tmp;
    }

    run->cpu = sched_getcpu();
    if (run->hypervisor) {
        residency_model_window(CATCACHE_WINDOW_OPEN, run->base,
                               run->lines * RESIDENCY_LINE_SIZE);
    }
    for (i = 0; i < run->lines; i++) {
        run->cycles[i] = residency_time_read(run->base +
                                             order[i] * RESIDENCY_LINE_SIZE);
    }
    if (run->hypervisor) {
        residency_model_window(CATCACHE_WINDOW_CLOSE, NULL, 0);
    }
    return NULL;
}

static int residency_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

PseudolockResidency *qmp_query_pseudolock_residency(const char *id,
                                                    bool has_threshold,
                                                    uint64_t threshold,
                                                    Error **errp)
{
    HostMemoryBackendPseudolock *pl = pseudolock_find_mapped(id, errp);
    g_autofree uint64_t *cycles = NULL;
    uint64_t buckets[RESIDENCY_BUCKETS + 1] = { 0 };
    PseudolockLatencyBucketList **tail;
    PseudolockResidency *reply;
    ResidencyRun run = { 0 };
    QemuThread thread;
    uint64_t i;

    if (!pl) {
        return NULL;
    }
    if (!pl->host_cpus) {
        error_setg(errp, "QEMU does not know the CPUs of the cache of "
                   "'%s' (it could not read resctrl when it mapped it)", id);
        return NULL;
    }

    run.base = pl->host;
    run.lines = pl->mapped_size / RESIDENCY_LINE_SIZE;
    run.cpus = pl->host_cpus;
    run.hypervisor = residency_under_hypervisor();
    run.cycles = cycles = g_new(uint64_t, run.lines);
    /* Its own thread: the caller's affinity stays as it is */
    qemu_thread_create(&thread, "pl-residency", residency_thread, &run,
                       QEMU_THREAD_JOINABLE);
    qemu_thread_join(&thread);
    if (run.err) {
        error_setg_errno(errp, run.err, "cannot run on the CPUs of the "
                         "cache of '%s'", id);
        error_append_hint(errp, "QEMU's cpuset or a seccomp sandbox with "
                          "resourcecontrol=deny keeps it off them.\n");
        return NULL;
    }

    reply = g_new0(PseudolockResidency, 1);
    reply->id = g_strdup(id);
    reply->reads = run.lines;
    reply->line_size = RESIDENCY_LINE_SIZE;
    reply->threshold_cycles = has_threshold ? threshold :
                              pl->cache_level == 3 ? 160 : 80;
    reply->cpu = run.cpu;
    reply->hypervisor = run.hypervisor;
    for (i = 0; i < run.lines; i++) {
        unsigned b = cycles[i] ? 63 - clz64(cycles[i]) : 0;

        buckets[MIN(b, RESIDENCY_BUCKETS)]++;
        reply->hits += cycles[i] <= reply->threshold_cycles;
    }
    qsort(cycles, run.lines, sizeof(*cycles), residency_cmp);
    reply->median_cycles = run.lines ? cycles[run.lines / 2] : 0;

    tail = &reply->histogram;
    for (i = 0; i <= RESIDENCY_BUCKETS; i++) {
        PseudolockLatencyBucket *bucket;

        if (!buckets[i]) {
            continue;
        }
        bucket = g_new0(PseudolockLatencyBucket, 1);
        bucket->min_cycles = i ? 1ULL << i : 0;
        bucket->max_cycles = i == RESIDENCY_BUCKETS ? UINT64_MAX :
                             (2ULL << i) - 1;
        bucket->reads = buckets[i];
        QAPI_LIST_APPEND(tail, bucket);
    }
    return reply;
}

#else

PseudolockResidency *qmp_query_pseudolock_residency(const char *id,
                                                    bool has_threshold,
                                                    uint64_t threshold,
                                                    Error **errp)
{
    error_setg(errp, "query-pseudolock-residency times reads with the x86 "
               "TSC, and this host is not x86");
    return NULL;
}

#endif

void hmp_info_pseudolock_residency(Monitor *mon, const QDict *qdict)
{
    const char *id = qdict_get_str(qdict, "id");
    bool has_threshold = qdict_haskey(qdict, "threshold");
    int64_t threshold = qdict_get_try_int(qdict, "threshold", 0);
    Error *err = NULL;
    g_autoptr(PseudolockResidency) r = NULL;
    PseudolockLatencyBucketList *b;
    uint64_t most = 1;

    /* HMP parses a signed number, which QMP's uint64 would wrap */
    if (threshold < 0) {
        error_setg(&err, "the threshold is a number of cycles, 0 or more, "
                   "not %" PRId64, threshold);
    } else {
        r = qmp_query_pseudolock_residency(id, has_threshold, threshold,
                                           &err);
    }
    if (hmp_handle_error(mon, err)) {
        return;
    }
    monitor_printf(mon, "%s: %" PRIu64 " reads of %u-byte lines on CPU %u, "
                   "%" PRIu64 " at most %" PRIu64 " cycles (%.2f%%), "
                   "median %" PRIu64 " cycles%s\n", r->id, r->reads,
                   r->line_size, r->cpu, r->hits, r->threshold_cycles,
                   r->reads ? 100.0 * r->hits / r->reads : 0.0,
                   r->median_cycles,
                   r->hypervisor ? " (under a hypervisor: the TSC does not "
                   "time the host's caches)" : "");
    for (b = r->histogram; b; b = b->next) {
        most = MAX(most, b->value->reads);
    }
    for (b = r->histogram; b; b = b->next) {
        g_autofree char *bar = g_strnfill(b->value->reads * 40 / most, '#');

        monitor_printf(mon, "  %8" PRIu64 "-%-8" PRIu64 " %8" PRIu64 " %s\n",
                       b->value->min_cycles, b->value->max_cycles,
                       b->value->reads, bar);
    }
}
