/*
 * memory-backend-pseudolock: the region in resctrl
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * What the backend does to and learns from resctrl: it creates a region
 * (cache-level=, cache-id=, size=) in a group named after this process,
 * reads what an existing region is, and removes a group it created, on
 * object-del or when QEMU exits.  A group it did not create is never
 * touched.  The resctrl knowledge itself is in util/resctrl-*.c; the
 * mapping is backends/pseudolock-map.c's business.
 */

#include "qemu/osdep.h"
#include <sys/vfs.h>
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/resctrl-group.h"
#include "qemu/resctrl-info.h"
#include "qemu/resctrl-plan.h"
#include "system/hostmem-pseudolock.h"
#include "system/system.h"

/* statfs() f_type of resctrl: RDTGROUP_SUPER_MAGIC in <linux/magic.h> */
#define PSEUDOLOCK_RESCTRL_MAGIC 0x7655821

/*
 * Backends that created their group, which must be removed when QEMU
 * exits: the machine still holds its RAM backends then and nothing
 * finalizes them.
 */
static QLIST_HEAD(, HostMemoryBackendPseudolock) pseudolock_created =
    QLIST_HEAD_INITIALIZER(pseudolock_created);
static Notifier pseudolock_exit_notifier;

/* How long the device may take to appear after the group is locked */
#define PSEUDOLOCK_DEVICE_WAIT_MS 5000

/*
 * Find out what @pl's region is: its cache level and domain, size,
 * capacity bitmask and CPUs, from resctrl.  Fails when resctrl cannot be
 * read; the caller decides whether it can do without.
 */
bool pseudolock_region_describe(HostMemoryBackendPseudolock *pl,
                                Error **errp)
{
    g_auto(ResctrlGroup) g = { 0 };
    g_autoptr(GArray) sizes = NULL;
    g_autoptr(GArray) masks = NULL;
    unsigned level;

    if (!pl->resctrl_mount && !resctrl_find_mount(&pl->resctrl_mount, errp)) {
        return false;
    }
    if (!resctrl_group_read(pl->resctrl_mount, pl->group, &g, errp)) {
        return false;
    }
    if (g.mode != RESCTRL_MODE_PSEUDO_LOCKED) {
        error_setg(errp, "resctrl group '%s' is in mode '%s', not "
                   "pseudo-locked", pl->group, resctrl_mode_name(g.mode));
        return false;
    }
    for (level = 2; level <= 3; level++) {
        g_autofree char *res = g_strdup_printf("L%u", level);
        ResctrlDomainValue *d;

        g_clear_pointer(&sizes, g_array_unref);
        g_clear_pointer(&masks, g_array_unref);
        if (!resctrl_parse_size(g.size, res, &sizes, errp) ||
            !resctrl_parse_schemata(g.schemata, res, &masks, errp)) {
            return false;
        }
        if (masks->len != 1) {
            continue;
        }
        /* A pseudo-locked group lists only the domain it locked */
        d = &g_array_index(masks, ResctrlDomainValue, 0);
        pl->cache_level = level;
        pl->domain = d->id;
        pl->cbm = d->value;
        if (!resctrl_domain_lookup(sizes, d->id, &pl->region_size) ||
            !pl->region_size) {
            error_setg(errp, "resctrl group '%s' reports no size for %s:%u",
                       pl->group, res, d->id);
            return false;
        }
        break;
    }
    if (level > 3) {
        error_setg(errp, "resctrl group '%s' locks no L2 or L3 cache region",
                   pl->group);
        return false;
    }
    if (!g.cpus || !g.cpus->len) {
        error_setg(errp, "cannot read the CPUs of resctrl group '%s'",
                   pl->group);
        return false;
    }
    pl->host_cpus = g_steal_pointer(&g.cpus);
    return true;
}

/* Remove the group this backend created, under the resctrl lock */
void pseudolock_region_remove(HostMemoryBackendPseudolock *pl)
{
    Error *err = NULL;
    int lock_fd = -1;

    if (!pl->created) {
        return;
    }
    if (pl->fd >= 0) {
        /* rmdir now would orphan a region that the guest still uses */
        warn_report("pseudo-locked region '%s' stays: this QEMU still "
                    "maps it", pl->group);
        return;
    }
    QLIST_REMOVE(pl, created_next);
    pl->created = false;
    if (!resctrl_lock(pl->resctrl_mount, RESCTRL_LOCK_TIMEOUT_MS,
                      &lock_fd, &err) ||
        !resctrl_group_remove(pl->resctrl_mount, pl->group, &err)) {
        error_prepend(&err, "pseudo-locked region '%s' stays: ", pl->group);
        if (access(pl->resctrl_mount, W_OK) < 0) {
            error_append_hint(&err, "This QEMU no longer has the privileges "
                              "it created the group with (-run-with user=, "
                              "or a manager that dropped them).  The next "
                              "QEMU that creates a region removes it, or "
                              "remove it with rmdir.\n");
        }
        warn_report_err(err);
    }
    resctrl_unlock(lock_fd);
}

void pseudolock_region_forget(HostMemoryBackendPseudolock *pl)
{
    if (pl->created) {
        QLIST_REMOVE(pl, created_next);
        pl->created = false;
    }
}

static void pseudolock_exit_notify(Notifier *n, void *data)
{
    HostMemoryBackendPseudolock *pl, *next;

    QLIST_FOREACH_SAFE(pl, &pseudolock_created, created_next, next) {
        pseudolock_unmap(pl);
        pseudolock_region_remove(pl);
    }
}

static bool pseudolock_wait_for_device(const char *path, Error **errp)
{
    int waited;

    /* devtmpfs has it at once; udev may take a moment */
    for (waited = 0; waited < PSEUDOLOCK_DEVICE_WAIT_MS; waited++) {
        if (g_file_test(path, G_FILE_TEST_EXISTS)) {
            return true;
        }
        g_usleep(1000);
    }
    error_setg(errp, "%s did not appear within %d ms of locking the region",
               path, PSEUDOLOCK_DEVICE_WAIT_MS);
    error_append_hint(errp, "The kernel creates it in devtmpfs: is /dev a "
                      "devtmpfs, or managed by udev?  In a private /dev, "
                      "as libvirt gives QEMU, QEMU cannot see a region it "
                      "creates: let the manager create the region and give "
                      "QEMU its device with path=.\n");
    return false;
}

/*
 * Create a group and pseudo-lock enough free ways of the chosen cache
 * for size=.  Its name tells which QEMU process made it, so that a
 * QEMU that was killed leaves a group the next one can recognise and
 * remove; that happens here, under the lock that libvirt takes too.
 */
bool pseudolock_region_create(HostMemoryBackendPseudolock *pl,
                              Error **errp)
{
    ERRP_GUARD();
    HostMemoryBackend *backend = MEMORY_BACKEND(pl);
    const char *id = object_get_canonical_path_component(OBJECT(pl));
    g_autoptr(GPtrArray) reclaimed = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) undecided = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *group = NULL;
    ResctrlOwner self;
    uint64_t cbm, region_size;
    int lock_fd;
    bool ok;
    guint i;

    if (!pl->cache_level || !pl->cache_id_set || !backend->size) {
        error_setg(errp, "give either path= to map an existing region, "
                   "or cache-level=, cache-id= and size= to create one");
        return false;
    }
    if (!id) {
        error_setg(errp, "a memory-backend-pseudolock that creates its "
                   "region needs an id");
        return false;
    }
    if (!resctrl_find_mount(&pl->resctrl_mount, errp) ||
        !resctrl_owner_self(&self, errp)) {
        return false;
    }
    group = resctrl_owned_group_name(&self, id);

    if (!resctrl_lock(pl->resctrl_mount, RESCTRL_LOCK_TIMEOUT_MS, &lock_fd,
                      errp)) {
        return false;
    }
    ok = resctrl_reclaim_dead_groups(pl->resctrl_mount, reclaimed,
                                     undecided, errp) &&
         resctrl_plan_region(pl->resctrl_mount, pl->cache_level,
                             pl->cache_id, backend->size, &cbm,
                             &region_size, errp) &&
         resctrl_pseudo_lock_create(pl->resctrl_mount, group,
                                    pl->cache_level, pl->cache_id, cbm,
                                    errp);
    resctrl_unlock(lock_fd);
    for (i = 0; i < reclaimed->len; i++) {
        info_report("removed resctrl group %s: the QEMU that created it "
                    "is gone", (char *)g_ptr_array_index(reclaimed, i));
    }
    for (i = 0; i < undecided->len; i++) {
        warn_report("left resctrl group %s",
                    (char *)g_ptr_array_index(undecided, i));
    }
    if (!ok) {
        return false;
    }

    pl->group = g_steal_pointer(&group);
    pl->created = true;
    if (!pseudolock_exit_notifier.notify) {
        pseudolock_exit_notifier.notify = pseudolock_exit_notify;
        qemu_add_exit_notifier(&pseudolock_exit_notifier);
    }
    QLIST_INSERT_HEAD(&pseudolock_created, pl, created_next);
    g_free(pl->path);
    pl->path = g_strdup_printf("/dev/pseudo_lock/%s", pl->group);
    return pseudolock_wait_for_device(pl->path, errp);
}

/*
 * Whether the region's group is still there and pseudo-locked.  Linux
 * lets the group be removed while the device is mapped; the mapping
 * stays valid but the region is orphaned.  A new group of the same name
 * cannot take its place: the kernel refuses to lock another region on a
 * cache that still holds the orphan.  Only a group missing from a
 * mounted resctrl is gone: an unreadable file, or resctrl no longer
 * mounted where QEMU found it (in QEMU's mount namespace), says nothing.
 */
bool pseudolock_region_locked(HostMemoryBackendPseudolock *pl, bool *locked)
{
    g_autofree char *dir = g_build_filename(pl->resctrl_mount, pl->group,
                                            NULL);
    struct statfs fs;
    struct stat st;
    ResctrlMode mode;

    if (statfs(pl->resctrl_mount, &fs) < 0 ||
        fs.f_type != PSEUDOLOCK_RESCTRL_MAGIC) {
        return false;
    }
    if (resctrl_group_mode(pl->resctrl_mount, pl->group, &mode, NULL)) {
        *locked = mode == RESCTRL_MODE_PSEUDO_LOCKED;
        return true;
    }
    if (stat(dir, &st) < 0 && errno == ENOENT) {
        *locked = false;
        return true;
    }
    return false;
}
