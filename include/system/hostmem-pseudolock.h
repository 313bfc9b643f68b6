/*
 * memory-backend-pseudolock: the object that its files share
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The backend is split by concern: the QOM object, its properties and
 * its alloc/release in backends/hostmem-pseudolock.c; the region in
 * resctrl (create, describe, remove, remove at exit) in
 * backends/pseudolock-region.c; mapping the device with the CPU
 * affinity it demands, and letting go of it, in
 * backends/pseudolock-map.c; query-pseudolock and info pseudolock in
 * backends/pseudolock-monitor-cmds.c; query-pseudolock-residency in
 * backends/pseudolock-residency.c; loading a region into its cache
 * again in backends/pseudolock-relock.c.  Only those files include this.
 */

#ifndef SYSTEM_HOSTMEM_PSEUDOLOCK_H
#define SYSTEM_HOSTMEM_PSEUDOLOCK_H

#include "qemu/notify.h"
#include "qemu/queue.h"
#include "system/hostmem.h"
#include "system/runstate.h"

#define TYPE_MEMORY_BACKEND_PSEUDOLOCK "memory-backend-pseudolock"

OBJECT_DECLARE_SIMPLE_TYPE(HostMemoryBackendPseudolock,
                           MEMORY_BACKEND_PSEUDOLOCK)

struct HostMemoryBackendPseudolock {
    HostMemoryBackend parent_obj;

    /* Properties */
    char *path;
    uint32_t cache_level;       /* 0: not set */
    uint32_t cache_id;
    bool cache_id_set;

    /* What the region turned out to be, for query-pseudolock */
    char *group;
    uint64_t cbm;
    uint32_t domain;
    uint64_t region_size;
    GArray *host_cpus;          /* of unsigned */
    bool created;
    char *resctrl_mount;

    /*
     * The claim on the region, and the open device, until released; the
     * address range of the mapping until finalized
     */
    dev_t rdev;
    int claim_fd;
    int fd;
    void *host;
    uint64_t mapped_size;

    QLIST_ENTRY(HostMemoryBackendPseudolock) created_next;

    /* Refuses the migrations that cannot carry the region, while mapped */
    NotifierWithReturn migration_notifier;

    /* Relocks the region whenever the guest starts running, while mapped */
    VMChangeStateEntry *vm_start_entry;
    bool relock_works;          /* until the kernel says it cannot */

    /* The residency measurement under way, in pseudolock-residency.c */
    struct PseudolockResidencyRun *residency;
};

/* backends/pseudolock-region.c */

/**
 * pseudolock_region_create: create the group and lock the region
 * @pl: a backend with cache-level=, cache-id= and size= set
 * @errp: pointer to a NULL-initialized error object
 *
 * Reclaims the groups of QEMUs that are gone, chooses free ways, locks
 * them in a group named after this process and the object's id, and
 * waits for the device.  Sets @pl's path, group and created; the group
 * is removed at exit unless pseudolock_region_remove() does it first.
 *
 * Returns: true on success, false with @errp set.
 */
bool pseudolock_region_create(HostMemoryBackendPseudolock *pl,
                              Error **errp);

/**
 * pseudolock_region_describe: read what @pl's region is from resctrl
 * @pl: a backend whose group is known
 * @errp: pointer to a NULL-initialized error object
 *
 * Sets the cache level, domain, bitmask, size and host CPUs of @pl.
 *
 * Returns: true on success; false with @errp set if resctrl cannot be
 * read (an unprivileged QEMU) or the group is not a locked region.
 */
bool pseudolock_region_describe(HostMemoryBackendPseudolock *pl,
                                Error **errp);

/**
 * pseudolock_region_remove: remove the group that @pl created
 * @pl: the backend; nothing is done if it did not create its group
 *
 * Call once the device is released (pseudolock_unmap()): the kernel
 * never frees a region whose group goes while it is open, so while @pl
 * still holds the device the group stays, with a warning.  Failures are
 * reported as warnings too.
 */
void pseudolock_region_remove(HostMemoryBackendPseudolock *pl);

/**
 * pseudolock_region_forget: stop tracking the group that @pl created
 * @pl: the backend, being finalized
 *
 * For a group that pseudolock_region_remove() had to leave because its
 * region is still mapped: QEMU no longer removes it at exit, and the
 * next QEMU that creates a region reclaims it once this one is gone.
 */
void pseudolock_region_forget(HostMemoryBackendPseudolock *pl);

/**
 * pseudolock_region_locked: whether @pl's group is still pseudo-locked
 * @pl: a described backend
 * @locked: set on success: false once the group was removed under QEMU
 *
 * Returns: true if QEMU can tell; false if resctrl cannot be read now
 * (no longer mounted where QEMU found it, or an unreadable file).
 */
bool pseudolock_region_locked(HostMemoryBackendPseudolock *pl, bool *locked);

/* backends/pseudolock-map.c */

/**
 * pseudolock_claim: claim the region for @pl alone
 * @pl: the backend, with its path and group known
 * @fd: the open device
 * @errp: pointer to a NULL-initialized error object
 *
 * Fails if another backend of this QEMU, or another process, has
 * claimed the same region (the same device number) by whatever path,
 * device node or descriptor.  pseudolock_unmap() or pseudolock_unclaim()
 * gives it up.
 *
 * Returns: true on success, false with @errp set.
 */
bool pseudolock_claim(HostMemoryBackendPseudolock *pl, int fd, Error **errp);

/**
 * pseudolock_unclaim: give up the claim of pseudolock_claim()
 * @pl: the backend; nothing is done if it holds no claim
 */
void pseudolock_unclaim(HostMemoryBackendPseudolock *pl);

/**
 * pseudolock_kvm_check: refuse a region that KVM cannot map into a guest
 * @errp: set, naming the cause and the way out, when KVM is the
 *     accelerator and the host kernel's regions are pages that KVM
 *     cannot map (see resctrl_release_kvm_maps_regions())
 *
 * Returns: false if it set @errp.
 */
bool pseudolock_kvm_check(Error **errp);

/**
 * pseudolock_map: map the region as @pl's memory region
 * @pl: the backend, with its size set
 * @fd: the open device; on success @pl keeps it until pseudolock_unmap()
 * @errp: pointer to a NULL-initialized error object
 *
 * Returns: true on success, false with @errp set.
 */
bool pseudolock_map(HostMemoryBackendPseudolock *pl, int fd, Error **errp);

/**
 * pseudolock_unmap: let go of the device at once
 * @pl: the backend; nothing is done if it maps nothing
 *
 * The RAM block stays valid and reads zeroes until RCU frees it.  The
 * claim on the region goes last, once nothing of this QEMU maps it.
 *
 * Returns: true if the device is released (or was not held); false,
 * with a warning, if it stays mapped: then its group must stay too.
 */
bool pseudolock_unmap(HostMemoryBackendPseudolock *pl);

/**
 * pseudolock_free_range: give back the address range of a released mapping
 * @pl: the backend, being finalized
 *
 * The range is unmapped after an RCU grace period.
 */
void pseudolock_free_range(HostMemoryBackendPseudolock *pl);

/* backends/pseudolock-monitor-cmds.c */

/**
 * pseudolock_find_mapped: the mapped backend of a monitor command's id
 * @id: the id of a memory-backend-pseudolock object
 * @errp: pointer to a NULL-initialized error object
 *
 * Returns: the backend, or NULL with @errp set if @id is not a mapped
 * memory-backend-pseudolock object.
 */
HostMemoryBackendPseudolock *pseudolock_find_mapped(const char *id,
                                                    Error **errp);

/* backends/pseudolock-relock.c */

/**
 * pseudolock_relock_on_start_add: relock @pl whenever the guest starts
 * @pl: a mapped backend
 *
 * An incoming migration or loadvm wrote the region from outside its
 * cache while the guest was stopped; the kernel loads it again before
 * the vCPUs run.  On a host kernel without the relock ioctl this does
 * nothing.
 */
void pseudolock_relock_on_start_add(HostMemoryBackendPseudolock *pl);

/**
 * pseudolock_relock_on_start_del: undo pseudolock_relock_on_start_add()
 * @pl: the backend; nothing is done if it was not added
 */
void pseudolock_relock_on_start_del(HostMemoryBackendPseudolock *pl);

#endif /* SYSTEM_HOSTMEM_PSEUDOLOCK_H */
