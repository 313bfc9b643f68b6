/*
 * memory-backend-pseudolock: mapping the device, and letting go of it
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The rules of the device (arch/x86/kernel/cpu/resctrl/pseudo_lock.c):
 * it can only be mapped shared, by a thread whose allowed CPUs all
 * belong to the region's cache domain, and every mmap zeroes the mapped
 * range.  This file maps it under those rules and, on object-del or
 * exit, releases it at once rather than when RCU frees the RAM block.
 * Which region it is, and its group, is backends/pseudolock-region.c's
 * business.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "system/hostmem-pseudolock.h"

static char *pseudolock_cpu_list(GArray *cpus)
{
    GString *s = g_string_new("");
    unsigned i;

    for (i = 0; i < cpus->len; i++) {
        g_string_append_printf(s, "%s%u", i ? "," : "",
                               g_array_index(cpus, unsigned, i));
    }
    return g_string_free(s, false);
}

/*
 * Map the region.  The kernel only lets a thread whose allowed CPUs all
 * share the cache map it, so narrow this thread's affinity to the
 * domain's CPUs for the mmap, whatever QEMU's own affinity is, and
 * restore it afterwards.
 */
bool pseudolock_map(HostMemoryBackendPseudolock *pl, int fd,
                    Error **errp)
{
    ERRP_GUARD();
    HostMemoryBackend *backend = MEMORY_BACKEND(pl);
    g_autofree char *name = host_memory_backend_get_name(backend);
    cpu_set_t saved, domain;
    bool narrowed = false;
    bool ok;
    unsigned i;

    if (pl->host_cpus) {
        if (sched_getaffinity(0, sizeof(saved), &saved) < 0) {
            error_setg_errno(errp, errno, "cannot read the CPU affinity");
            return false;
        }
        CPU_ZERO(&domain);
        for (i = 0; i < pl->host_cpus->len; i++) {
            CPU_SET(g_array_index(pl->host_cpus, unsigned, i), &domain);
        }
        if (sched_setaffinity(0, sizeof(domain), &domain) < 0) {
            g_autofree char *cpus = pseudolock_cpu_list(pl->host_cpus);

            error_setg_errno(errp, errno, "cannot run on CPUs %s, the CPUs "
                             "of the cache that holds region '%s'", cpus,
                             pl->group);
            error_append_hint(errp, "Mapping a pseudo-locked region needs "
                              "them; allow them in QEMU's cpuset or "
                              "cgroup.\n");
            return false;
        }
        narrowed = true;
    }

    backend->aligned = true;
    ok = memory_region_init_ram_from_fd(&backend->mr, OBJECT(backend), name,
                                        backend->size, RAM_SHARED, fd, 0,
                                        errp);

    if (narrowed && sched_setaffinity(0, sizeof(saved), &saved) < 0) {
        /* Only possible if our cpuset shrank meanwhile: carry on */
        warn_report("cannot restore the CPU affinity after mapping '%s': %s",
                    pl->path, strerror(errno));
    }
    if (!ok && !narrowed) {
        error_append_hint(errp, "The calling thread's allowed CPUs must all "
                          "share the region's cache.\n");
    }
    if (ok) {
        pl->host = memory_region_get_ram_ptr(&backend->mr);
        pl->mapped_size = backend->size;
        pl->fd = fd;
    }
    return ok;
}

/*
 * Let go of the device at once, not when RCU gets round to freeing the
 * RAM block: put anonymous memory in place of the mapping, so that a
 * late reader sees zeroes rather than a fault, and the null device in
 * place of the descriptor, so that the block's own munmap() and close()
 * stay harmless.  That drops the last reference to the open device, and
 * with it the lock on the region; only then may the group be removed,
 * because the kernel never frees a region whose group is removed while
 * its device is open.
 */
void pseudolock_unmap(HostMemoryBackendPseudolock *pl)
{
    int devnull;

    if (!pl->host) {
        return;
    }
    if (mmap(pl->host, pl->mapped_size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
        warn_report("cannot unmap pseudo-locked region '%s': %s", pl->group,
                    strerror(errno));
    }
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || dup3(devnull, pl->fd, O_CLOEXEC) < 0) {
        warn_report("cannot close pseudo-locked region '%s': %s", pl->group,
                    strerror(errno));
    }
    if (devnull >= 0) {
        close(devnull);
    }
    pl->host = NULL;
    pl->fd = -1;
}
