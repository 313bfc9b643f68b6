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
 * range.  This file claims the region for one backend (so that nothing
 * else maps it while a guest runs on it), maps it under those rules
 * and, on object-del or exit, releases it at once rather than when RCU
 * frees the RAM block.
 * Which region it is, and its group, is backends/pseudolock-region.c's
 * business.
 */

#include "qemu/osdep.h"
#include <sys/prctl.h>
#include <sys/utsname.h>
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/mmap-alloc.h"
#include "qemu/rcu.h"
#include "qemu/units.h"
#include "qemu/resctrl-group.h"
#include "qemu/resctrl-parse.h"
#include "system/hostmem-pseudolock.h"
#include "system/kvm.h"

static int pseudolock_find_claimant(Object *child, void *opaque)
{
    HostMemoryBackendPseudolock **found = opaque;
    HostMemoryBackendPseudolock *other = (HostMemoryBackendPseudolock *)
        object_dynamic_cast(child, TYPE_MEMORY_BACKEND_PSEUDOLOCK);

    if (other && other != *found && other->claim_fd >= 0 &&
        other->rdev == (*found)->rdev) {
        *found = other;
        return 1;
    }
    return 0;
}

/*
 * Every mmap of the device zeroes the region: a second user would wipe
 * the memory of a running guest.  Claim it for this backend alone, as
 * QEMU locks disk images, before mapping anything; the claim is keyed
 * by the device number, so another path, node or descriptor of the same
 * region does not get round it.
 */
bool pseudolock_claim(HostMemoryBackendPseudolock *pl, int fd, Error **errp)
{
    HostMemoryBackendPseudolock *claimant = pl;
    struct stat st;

    if (fstat(fd, &st) < 0) {
        error_setg_errno(errp, errno, "cannot stat '%s'", pl->path);
        return false;
    }
    pl->rdev = st.st_rdev;
    /* Say which backend it is if it is one of ours */
    if (object_child_foreach(object_get_objects_root(),
                             pseudolock_find_claimant, &claimant)) {
        error_setg(errp, "pseudo-locked region '%s' is already the memory "
                   "of backend '%s'", pl->group,
                   object_get_canonical_path_component(OBJECT(claimant)));
        error_append_hint(errp, "A region backs one memory backend at most "
                          "(here reached as '%s' and '%s'): mapping it again "
                          "would zero it.\n", claimant->path, pl->path);
        return false;
    }
    if (!resctrl_region_claim(pl->rdev, &pl->claim_fd, errp)) {
        error_prepend(errp, "pseudo-locked region '%s' ", pl->group);
        return false;
    }
    return true;
}

/* Give the region up, once this backend no longer maps its device */
void pseudolock_unclaim(HostMemoryBackendPseudolock *pl)
{
    if (pl->claim_fd >= 0) {
        close(pl->claim_fd);
        pl->claim_fd = -1;
    }
}

/*
 * KVM before Linux 6.13 maps a page of a PFN mapping into a guest only if
 * it can take a reference on it, and a stock kernel's region is one
 * compound page whose tail pages have no reference count: the guest
 * would stop with EFAULT from KVM_RUN at its first access to any page of
 * the region but the first.  Nothing at mmap time shows it, so decide
 * from the kernel's release, before creating or mapping anything.
 */
bool pseudolock_kvm_check(Error **errp)
{
    struct utsname host;

    if (!kvm_enabled()) {
        return true;
    }
    if (uname(&host) < 0) {
        error_setg_errno(errp, errno, "cannot tell the host kernel's "
                         "release");
        return false;
    }
    if (resctrl_release_kvm_maps_regions(host.release)) {
        return true;
    }
    error_setg(errp, "KVM cannot map a pseudo-locked region of host kernel "
               "%s into a guest: before 6.13, Linux makes a region one "
               "compound page, and KVM refuses its tail pages; boot Linux "
               "6.13 or later, or a kernel with qemu-pseudolock's host "
               "patches (release -pseudolock<N>), or run the guest under "
               "TCG", host.release);
    error_append_hint(errp, "Under KVM the guest would stop at its first "
                      "access to any page of the region but the first "
                      "(KVM_RUN: Bad address).  The host patches are "
                      "kvm-patches/ in qemu-pseudolock's source; -accel "
                      "tcg runs the guest without KVM.\n");
    return false;
}

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
 * Where to map a region: at a 2 MiB boundary when it is that large, so
 * that a kernel able to map it with 2 MiB (PMD) entries, as the host
 * patches are, can do so; with only 4 KiB alignment, which QEMU's RAM
 * mapping of a character device gets, no 2 MiB range of the guest's
 * memory would be aligned in QEMU's address space.
 */
#define PSEUDOLOCK_PMD_SIZE (2 * MiB)

static size_t pseudolock_map_align(uint64_t size)
{
    return size >= PSEUDOLOCK_PMD_SIZE ? PSEUDOLOCK_PMD_SIZE
                                       : qemu_real_host_page_size();
}

/*
 * Why this thread cannot run on the cache's CPUs, as a hint.  libvirt
 * starts QEMU with -sandbox resourcecontrol=deny, whose seccomp filter
 * fails sched_setaffinity() with EPERM, as a cpuset that lacks the CPUs
 * fails it with EINVAL.
 */
static void pseudolock_affinity_hint(int err, const char *cpus,
                                     Error **errp)
{
    if (err == EPERM && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2) {
        error_append_hint(errp, "QEMU's seccomp sandbox forbids changing "
                          "the CPU affinity (-sandbox resourcecontrol=deny, "
                          "libvirt's default).  Start QEMU with its affinity "
                          "within CPUs %s (taskset, or libvirt's "
                          "<emulatorpin>), or allow resource control.\n",
                          cpus);
    } else {
        error_append_hint(errp, "Mapping a pseudo-locked region needs "
                          "them; allow them in QEMU's cpuset or cgroup.\n");
    }
}

/*
 * Map the region.  The kernel only lets a thread whose allowed CPUs all
 * share the cache map it, so narrow this thread's affinity to the
 * domain's CPUs for the mmap, unless it lies within them already, and
 * restore it afterwards.  Not changing an affinity that fits is what
 * lets QEMU map regions in a sandbox that forbids changing it.
 */
bool pseudolock_map(HostMemoryBackendPseudolock *pl, int fd,
                    Error **errp)
{
    ERRP_GUARD();
    HostMemoryBackend *backend = MEMORY_BACKEND(pl);
    g_autofree char *name = host_memory_backend_get_name(backend);
    cpu_set_t saved, domain, inside;
    bool narrowed = false;
    void *host;
    unsigned i;
    int map_errno;

    if (pl->host_cpus) {
        if (sched_getaffinity(0, sizeof(saved), &saved) < 0) {
            error_setg_errno(errp, errno, "cannot read the CPU affinity");
            return false;
        }
        CPU_ZERO(&domain);
        for (i = 0; i < pl->host_cpus->len; i++) {
            CPU_SET(g_array_index(pl->host_cpus, unsigned, i), &domain);
        }
        /* narrow unless every CPU this thread may run on is the cache's */
        CPU_AND(&inside, &saved, &domain);
        if (!CPU_EQUAL(&inside, &saved)) {
            if (sched_setaffinity(0, sizeof(domain), &domain) < 0) {
                int err = errno;
                g_autofree char *cpus = pseudolock_cpu_list(pl->host_cpus);

                error_setg_errno(errp, err, "cannot run on CPUs %s, the "
                                 "CPUs of the cache that holds region '%s'",
                                 cpus, pl->group);
                pseudolock_affinity_hint(err, cpus, errp);
                return false;
            }
            narrowed = true;
        }
    }

    host = qemu_ram_mmap(fd, backend->size, pseudolock_map_align(backend->size),
                         QEMU_MAP_SHARED, 0);
    map_errno = errno;

    if (narrowed && sched_setaffinity(0, sizeof(saved), &saved) < 0) {
        /* Only possible if our cpuset shrank meanwhile: carry on */
        warn_report("cannot restore the CPU affinity after mapping '%s': %s",
                    pl->path, strerror(errno));
    }
    if (host == MAP_FAILED) {
        error_setg_errno(errp, map_errno, "cannot map pseudo-locked region "
                         "'%s'", pl->group);
        if (!pl->host_cpus) {
            /* Without resctrl, QEMU could not tell which CPUs it needs */
            error_append_hint(errp, "The calling thread's allowed CPUs must "
                              "all share the region's cache.\n");
        }
        return false;
    }

    /*
     * The RAM block gets the memory, not the descriptor: whatever takes a
     * RAM block's descriptor to map it elsewhere (vhost-user back ends,
     * the multi-process remote, cpr-transfer's new QEMU) would zero the
     * region, or fail on other CPUs.  Without one they leave it alone;
     * marked unshareable, a vhost-user back end refuses the machine
     * rather than leave out memory that the guest puts buffers in.
     */
    memory_region_init_ram_ptr(&backend->mr, OBJECT(backend), name,
                               backend->size, host);
    memory_region_set_unshareable(&backend->mr);
    /*
     * What a memory device aligns the region to in the guest (a DIMM or
     * an NVDIMM), as a descriptor's RAM block would have it: its page
     * size.  A region is whole pages, not whole 2 MiB.
     */
    backend->mr.align = qemu_real_host_page_size();
    /*
     * The mapping is the device's (VM_PFNMAP): the host cannot pin it, so
     * devices that DMA through pinned guest memory (VFIO) cannot reach
     * the region; they refuse it rather than fail to map it.
     */
    memory_region_set_unpinnable(&backend->mr);
    pl->host = host;
    pl->mapped_size = backend->size;
    pl->fd = fd;
    return true;
}

/*
 * Let go of the device at once, not when RCU gets round to freeing the
 * RAM block: put anonymous memory in place of the mapping, so that a
 * late reader sees zeroes rather than a fault, and close the device.
 * That drops the last reference to the open device; only then may the
 * claim go and the group be removed, because the kernel never frees a
 * region whose group is removed while its device is open or mapped.
 */
bool pseudolock_unmap(HostMemoryBackendPseudolock *pl)
{
    if (pl->fd < 0) {
        pseudolock_unclaim(pl);
        return true;
    }
    if (mmap(pl->host, pl->mapped_size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
             -1, 0) == MAP_FAILED) {
        /* The guest's memory is still the region: keep all of it */
        warn_report("cannot unmap pseudo-locked region '%s': %s", pl->group,
                    strerror(errno));
        return false;
    }
    close(pl->fd);
    pl->fd = -1;
    pseudolock_unclaim(pl);
    return true;
}

typedef struct PseudolockStaleRange {
    struct rcu_head rcu;
    void *host;
    size_t size;
} PseudolockStaleRange;

static void pseudolock_stale_range_free(PseudolockStaleRange *range)
{
    qemu_ram_munmap(-1, range->host, range->size);
    g_free(range);
}

/*
 * The RAM block only points at our memory: give the address range back
 * once RCU readers that may still hold the block are gone, which is
 * after the block itself is reclaimed (call_rcu() runs callbacks in
 * order, and the block went first, with the memory region).
 */
void pseudolock_free_range(HostMemoryBackendPseudolock *pl)
{
    PseudolockStaleRange *range;

    if (!pl->host || pl->fd >= 0) {
        /* Never mapped, or still the device's: then it stays mapped */
        return;
    }
    range = g_new(PseudolockStaleRange, 1);
    range->host = pl->host;
    range->size = pl->mapped_size;
    pl->host = NULL;
    call_rcu(range, pseudolock_stale_range_free, rcu);
}
