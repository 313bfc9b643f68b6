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
 *
 * On a real-time host those CPUs belong to FIFO vCPUs, and an ordinary
 * thread there may never run.  So nothing waits for the thread with
 * the BQL held: the QMP command is a coroutine that yields until the
 * thread is done or a deadline has passed, and then fails.  A thread
 * given up on keeps a reference to the backend (whose mapping stays
 * readable until it is finalized) and frees its run when it ends; until
 * then no second measurement of that backend starts.
 */

#include "qemu/osdep.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "qapi/qapi-commands-pseudolock.h"
#include "qemu/coroutine.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "system/hostmem-pseudolock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>

#define RESIDENCY_LINE_SIZE     64
#define RESIDENCY_BUCKETS       24      /* up to 2^24 cycles and beyond */
#define RESIDENCY_TIMEOUT_MS    5000    /* default of timeout-ms */

/* The leaf and commands of contrib/plugins/catcache.c */
#define CATCACHE_LEAF           0x63616368u
#define CATCACHE_WINDOW_OPEN    3
#define CATCACHE_WINDOW_CLOSE   4

typedef struct PseudolockResidencyRun ResidencyRun;

struct PseudolockResidencyRun {
    /* Set up before the thread starts, then only read */
    HostMemoryBackendPseudolock *pl;    /* a reference, until freed */
    const uint8_t *base;
    uint64_t lines;
    cpu_set_t cpus;             /* where to run */
    bool hypervisor;

    /* Results, written by the thread */
    int err;                    /* errno of sched_setaffinity() */
    unsigned cpu;
    uint64_t *cycles;           /* one a read, in read order */

    /* Under the BQL, in the main loop */
    Coroutine *co;              /* the command waiting; NULL once woken */
    bool done;                  /* the thread has ended */

    /* Set by the command when it gives up, read by the thread */
    bool given_up;              /* qatomic_*(): the reads may be skipped */
};

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

/* Free a run once both the thread and the command are done with it */
static void residency_run_free(ResidencyRun *run)
{
    assert(run->pl->residency == run);
    run->pl->residency = NULL;
    object_unref(OBJECT(run->pl));
    g_free(run->cycles);
    g_free(run);
}

/* Wake the command, if it still waits; whether it did */
static bool residency_wake(ResidencyRun *run)
{
    Coroutine *co = g_steal_pointer(&run->co);

    if (co) {
        aio_co_wake(co);
    }
    return co;
}

/*
 * The thread has ended: wake the command, or, if the deadline woke it
 * already (and it gave up there and then), clean up after it
 */
static void residency_done_bh(void *opaque)
{
    ResidencyRun *run = opaque;

    run->done = true;
    if (!residency_wake(run)) {
        residency_run_free(run);
    }
}

/* The deadline has passed: wake the command, which gives up */
static void residency_deadline(void *opaque)
{
    residency_wake(opaque);
}

static void *residency_thread(void *opaque)
{
    ResidencyRun *run = opaque;
    g_autoptr(GRand) rand = g_rand_new();
    g_autofree uint64_t *order = NULL;
    uint64_t i;

    /*
     * A thread already confined to the cache's CPUs (QEMU pinned there,
     * as libvirt's emulatorpin does) stays as it is: under a seccomp
     * sandbox with resourcecontrol=deny, it could not change its
     * affinity at all.
     */
    if (!residency_within(&run->cpus) &&
        sched_setaffinity(0, sizeof(run->cpus), &run->cpus) < 0) {
        run->err = errno;
        goto out;
    }
    /* No one waits for the figures any more: leave the cache alone */
    if (qatomic_read(&run->given_up)) {
        goto out;
    }

    order = g_new(uint64_t, run->lines);
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
out:
    aio_bh_schedule_oneshot(qemu_get_aio_context(), residency_done_bh, run);
    return NULL;
}

static int residency_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

PseudolockResidency *coroutine_fn
qmp_query_pseudolock_residency(const char *id, bool has_threshold,
                               uint64_t threshold, bool has_timeout_ms,
                               uint32_t timeout_ms, Error **errp)
{
    HostMemoryBackendPseudolock *pl = pseudolock_find_mapped(id, errp);
    uint64_t buckets[RESIDENCY_BUCKETS + 1] = { 0 };
    PseudolockLatencyBucketList **tail;
    PseudolockResidency *reply;
    uint32_t wait_ms = has_timeout_ms ? timeout_ms : RESIDENCY_TIMEOUT_MS;
    QEMUTimer *deadline;
    ResidencyRun *run;
    QemuThread thread;
    uint64_t *cycles;
    uint64_t i;

    if (!pl) {
        return NULL;
    }
    if (!pl->host_cpus) {
        error_setg(errp, "QEMU does not know the CPUs of the cache of "
                   "'%s' (it could not read resctrl when it mapped it)", id);
        return NULL;
    }
    if (!wait_ms) {
        error_setg(errp, "timeout-ms must be 1 or more");
        return NULL;
    }
    if (pl->residency) {
        error_setg(errp, "an earlier measurement of '%s' has not run yet",
                   id);
        error_append_hint(errp, "Its thread waits for a CPU of the region's "
                          "cache; real-time tasks that keep those CPUs "
                          "busy keep it waiting.  Ask again once it ran.\n");
        return NULL;
    }

    run = g_new0(ResidencyRun, 1);
    run->pl = pl;
    object_ref(OBJECT(pl));
    pl->residency = run;
    run->base = pl->host;
    run->lines = pl->mapped_size / RESIDENCY_LINE_SIZE;
    CPU_ZERO(&run->cpus);
    for (i = 0; i < pl->host_cpus->len; i++) {
        CPU_SET(g_array_index(pl->host_cpus, unsigned, i), &run->cpus);
    }
    run->hypervisor = residency_under_hypervisor();
    run->cycles = g_new(uint64_t, run->lines);
    run->co = qemu_coroutine_self();

    /* Its own thread: the caller's affinity stays as it is */
    qemu_thread_create(&thread, "pl-residency", residency_thread, run,
                       QEMU_THREAD_DETACHED);
    deadline = aio_timer_new(qemu_get_aio_context(), QEMU_CLOCK_REALTIME,
                             SCALE_MS, residency_deadline, run);
    timer_mod(deadline, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + wait_ms);
    /* The BQL is free until the thread ends or the deadline passes */
    qemu_coroutine_yield();
    timer_free(deadline);

    if (!run->done) {
        /* residency_done_bh() frees the run when the thread ends */
        qatomic_set(&run->given_up, true);
        error_setg(errp, "the measurement of '%s' did not run within %u ms",
                   id, wait_ms);
        error_append_hint(errp, "It runs on the CPUs of the region's cache, "
                          "and something keeps them busy (real-time tasks, "
                          "FIFO vCPUs): ask when they are idle, or with a "
                          "longer timeout-ms.\n");
        return NULL;
    }
    if (run->err) {
        error_setg_errno(errp, run->err, "cannot run on the CPUs of the "
                         "cache of '%s'", id);
        error_append_hint(errp, "QEMU's cpuset or a seccomp sandbox with "
                          "resourcecontrol=deny keeps it off them.\n");
        residency_run_free(run);
        return NULL;
    }

    reply = g_new0(PseudolockResidency, 1);
    reply->id = g_strdup(id);
    reply->reads = run->lines;
    reply->line_size = RESIDENCY_LINE_SIZE;
    reply->threshold_cycles = has_threshold ? threshold :
                              pl->cache_level == 3 ? 160 : 80;
    reply->cpu = run->cpu;
    reply->hypervisor = run->hypervisor;
    cycles = run->cycles;
    for (i = 0; i < run->lines; i++) {
        unsigned b = cycles[i] ? 63 - clz64(cycles[i]) : 0;

        buckets[MIN(b, RESIDENCY_BUCKETS)]++;
        reply->hits += cycles[i] <= reply->threshold_cycles;
    }
    qsort(cycles, run->lines, sizeof(*cycles), residency_cmp);
    reply->median_cycles = run->lines ? cycles[run->lines / 2] : 0;

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
    residency_run_free(run);
    return reply;
}

#else

PseudolockResidency *coroutine_fn
qmp_query_pseudolock_residency(const char *id, bool has_threshold,
                               uint64_t threshold, bool has_timeout_ms,
                               uint32_t timeout_ms, Error **errp)
{
    error_setg(errp, "query-pseudolock-residency times reads with the x86 "
               "TSC, and this host is not x86");
    return NULL;
}

#endif

void coroutine_fn hmp_info_pseudolock_residency(Monitor *mon,
                                               const QDict *qdict)
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
                                           false, 0, &err);
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
