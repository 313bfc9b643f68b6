/*
 * resctrl groups: the lock, creating and removing groups, and the
 * owners of the groups QEMU creates
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * What changes the resctrl filesystem, and only that: finding the mount
 * and reading groups is in qemu/resctrl-info.h, choosing the ways of a
 * region in qemu/resctrl-plan.h, the names of owned groups (pure text)
 * in qemu/resctrl-parse.h.
 */

#ifndef QEMU_RESCTRL_GROUP_H
#define QEMU_RESCTRL_GROUP_H

#include "qemu/resctrl-parse.h"

/* How long QEMU waits for the resctrl lock, with its monitor blocked */
#define RESCTRL_LOCK_TIMEOUT_MS 5000

/**
 * resctrl_lock: take the resctrl filesystem lock
 * @mount: resctrl mount point
 * @timeout_ms: how long to wait for another holder to let go
 * @fd: on success, the descriptor holding the lock
 * @errp: pointer to a NULL-initialized error object
 *
 * Takes flock(LOCK_EX) on the mount directory, the advisory lock that
 * Documentation/arch/x86/resctrl.rst asks writers to take and that
 * libvirt takes, so that groups are not created or changed under us.
 * Any user can open the directory and hold the lock for ever, so the
 * wait is bounded.
 *
 * Returns: true on success, false with @errp set, naming the holder
 * from /proc/locks when it is still held after @timeout_ms.
 */
bool resctrl_lock(const char *mount, int64_t timeout_ms, int *fd,
                  Error **errp);

/**
 * resctrl_unlock: release the lock taken by resctrl_lock()
 * @fd: the descriptor from resctrl_lock(); nothing is done if negative
 */
void resctrl_unlock(int fd);

/**
 * resctrl_region_claim: claim a pseudo-locked region for this user alone
 * @rdev: the device number of the region's device (st_rdev)
 * @claim_fd: on success, the descriptor that holds the claim; closing it
 *     gives the region up
 * @errp: pointer to a NULL-initialized error object
 *
 * Takes flock(LOCK_EX) on the device's directory in sysfs,
 * /sys/dev/char/<major>:<minor>, without waiting.  The claim is keyed by
 * the device number, so it excludes every other claim of the region
 * whatever path, node or descriptor reached it, in this process or
 * another, in any mount namespace.
 *
 * Returns: true on success; false with @errp set: "is in use: ..."
 * naming the holder if the region is claimed already, "cannot be
 * claimed: ..." if the directory cannot be opened or locked at all.  The
 * caller prepends the region's name.
 */
bool resctrl_region_claim(dev_t rdev, int *claim_fd, Error **errp);

/**
 * resctrl_region_claim_in: resctrl_region_claim() with other files
 * @rdev: as for resctrl_region_claim()
 * @sys_dev_char: a directory like /sys/dev/char
 * @proc_locks: a file in the format of /proc/locks
 * @claim_fd: as for resctrl_region_claim()
 * @errp: as for resctrl_region_claim()
 *
 * For tests.
 */
bool resctrl_region_claim_in(dev_t rdev, const char *sys_dev_char,
                             const char *proc_locks, int *claim_fd,
                             Error **errp);

/**
 * resctrl_owner_self: the #ResctrlOwner of this process
 * @owner: filled on success
 * @errp: pointer to a NULL-initialized error object
 *
 * Returns: true on success, false with @errp set if /proc cannot be read.
 */
bool resctrl_owner_self(ResctrlOwner *owner, Error **errp);

/**
 * resctrl_reclaim_dead_groups: remove groups whose creating QEMU is gone
 * @mount: resctrl mount point
 * @reclaimed: if not NULL, the removed groups' names are added to it
 * @undecided: if not NULL, a message is added to it for each group left
 *     alone because whether its QEMU runs cannot be told, or because its
 *     region is still claimed
 * @errp: pointer to a NULL-initialized error object
 *
 * Removes every group named by resctrl_owned_group_name() whose owner is
 * in this process's PID namespace and provably no longer runs: no
 * process has its pid, the one that has it started at another time, or
 * it is a zombie that its parent has not reaped yet.
 * A group whose owner cannot be looked at (/proc mounted with hidepid=,
 * an unreadable stat file) stays, and so does one whose region another
 * process still claims (resctrl_region_claim()); so do groups of other
 * PID namespaces and every other group.  Hold resctrl_lock().
 *
 * Returns: true on success, false with @errp set if the mount cannot be
 * listed or a dead owner's group cannot be removed.
 */
bool resctrl_reclaim_dead_groups(const char *mount, GPtrArray *reclaimed,
                                 GPtrArray *undecided, Error **errp);

/**
 * resctrl_reclaim_dead_groups_in: resctrl_reclaim_dead_groups() with
 *     another procfs and owner, for tests
 * @mount: resctrl mount point
 * @proc: a directory laid out like /proc (PID/stat); whether a pid
 *     exists at all is still asked of the kernel, with kill()
 * @self: the owner whose PID namespace counts
 * @reclaimed: as for resctrl_reclaim_dead_groups()
 * @undecided: as for resctrl_reclaim_dead_groups()
 * @errp: as for resctrl_reclaim_dead_groups()
 *
 * Returns: as resctrl_reclaim_dead_groups().
 */
bool resctrl_reclaim_dead_groups_in(const char *mount, const char *proc,
                                    const ResctrlOwner *self,
                                    GPtrArray *reclaimed,
                                    GPtrArray *undecided, Error **errp);

/**
 * resctrl_pseudo_lock_create: create a group and pseudo-lock a region
 * @mount: resctrl mount point
 * @group: name of the new group
 * @level: cache level (2 or 3)
 * @cache_id: cache (domain) id
 * @cbm: ways to lock, as from resctrl_plan_region()
 * @errp: pointer to a NULL-initialized error object
 *
 * Creates the group, sets its mode to pseudo-locksetup and writes the
 * schemata, whereupon the kernel loads the region into the cache and
 * creates the device pseudo_lock/@group.  On failure the group is
 * removed again and the message includes info/last_cmd_status.  Hold
 * resctrl_lock().
 *
 * Returns: true on success, false with @errp set.
 */
bool resctrl_pseudo_lock_create(const char *mount, const char *group,
                                unsigned level, unsigned cache_id,
                                uint64_t cbm, Error **errp);

/**
 * resctrl_group_remove: remove a resource group
 * @mount: resctrl mount point
 * @group: group name
 * @errp: pointer to a NULL-initialized error object
 *
 * A group that is already gone counts as removed.
 *
 * Returns: true on success, false with @errp set.
 */
bool resctrl_group_remove(const char *mount, const char *group,
                          Error **errp);

#endif /* QEMU_RESCTRL_GROUP_H */
