/*
 * memory-backend-pseudolock: loading a region into its cache again
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * A region stays in its cache only until something evicts it: WBINVD
 * or CLFLUSH anywhere on the host, or a write from a CPU outside the
 * region's cache, which is what an incoming migration and loadvm do to
 * all of it (they write guest RAM from QEMU's migration thread).  The
 * host patches' PSEUDO_LOCK_RELOCK ioctl on the region's device has the
 * kernel load it again, contents kept, from a CPU of the cache; QEMU
 * needs nothing but the open device for it, so it works as well for an
 * unprivileged QEMU that was passed the descriptor.  QEMU asks for it
 * over QMP (pseudolock-relock) and by itself whenever the guest starts
 * running, which is after an incoming migration and after loadvm.
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include "qapi/error.h"
#include "qapi/qapi-commands-pseudolock.h"
#include "qemu/error-report.h"
#include "system/hostmem-pseudolock.h"
#include "system/runstate.h"

/*
 * include/uapi/linux/pseudo_lock.h of the host patches
 * (kvm-patches/0011-x86-resctrl-Add-PSEUDO_LOCK_RELOCK-...)
 */
#ifndef PSEUDO_LOCK_RELOCK
#define PSEUDO_LOCK_RELOCK      _IO(0xD1, 0x00)
#endif

/* Ask the kernel; returns 0 or an errno */
static int pseudolock_relock_ioctl(HostMemoryBackendPseudolock *pl)
{
    return ioctl(pl->fd, PSEUDO_LOCK_RELOCK) ? errno : 0;
}

static void pseudolock_relock_error(HostMemoryBackendPseudolock *pl, int err,
                                    Error **errp)
{
    g_autofree char *name = host_memory_backend_get_name(MEMORY_BACKEND(pl));

    switch (err) {
    case ENOTTY:
        error_setg(errp, "the host kernel cannot load pseudo-locked region "
                   "'%s' of '%s' into its cache again", pl->group, name);
        error_append_hint(errp, "The PSEUDO_LOCK_RELOCK ioctl comes with "
                          "qemu-pseudolock's host kernel patches.\n");
        break;
    case ENODEV:
        error_setg(errp, "the resctrl group '%s' of '%s' was removed: its "
                   "memory is no longer locked in the cache", pl->group,
                   name);
        break;
    case ENOSPC:
        error_setg(errp, "cannot load region '%s' of '%s' into its cache "
                   "again: the host has no free class of service (CLOSID) "
                   "to load it through", pl->group, name);
        error_append_hint(errp, "Every resctrl group takes one; try again "
                          "once one is removed.\n");
        break;
    default:
        error_setg_errno(errp, err, "cannot load region '%s' of '%s' into "
                         "its cache again", pl->group, name);
        break;
    }
}

/*
 * Whatever wrote the region while the guest was stopped (an incoming
 * migration, loadvm, a flush on the host) took its lines out of the
 * cache: load it again before the vCPUs run.  A host kernel without the
 * ioctl is not an error here; the backend then keeps quiet about it.
 */
static void pseudolock_relock_on_start(void *opaque, bool running,
                                       RunState state)
{
    HostMemoryBackendPseudolock *pl = opaque;
    Error *local_err = NULL;
    int err;

    if (!running || !pl->relock_works || pl->fd < 0) {
        return;
    }
    err = pseudolock_relock_ioctl(pl);
    if (err == ENOTTY) {
        pl->relock_works = false;
    } else if (err) {
        pseudolock_relock_error(pl, err, &local_err);
        warn_report_err(local_err);
    }
}

void pseudolock_relock_on_start_add(HostMemoryBackendPseudolock *pl)
{
    pl->relock_works = true;
    pl->vm_start_entry =
        qemu_add_vm_change_state_handler(pseudolock_relock_on_start, pl);
}

void pseudolock_relock_on_start_del(HostMemoryBackendPseudolock *pl)
{
    if (pl->vm_start_entry) {
        qemu_del_vm_change_state_handler(pl->vm_start_entry);
        pl->vm_start_entry = NULL;
    }
}

void qmp_pseudolock_relock(const char *id, Error **errp)
{
    HostMemoryBackendPseudolock *pl = pseudolock_find_mapped(id, errp);
    int err;

    if (!pl) {
        return;
    }
    err = pseudolock_relock_ioctl(pl);
    if (err) {
        pseudolock_relock_error(pl, err, errp);
    }
}
