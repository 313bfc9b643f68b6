/*
 * Memory backend for a cache pseudo-locked region
 *
 * Maps /dev/pseudo_lock/<group>, a buffer that Linux resctrl keeps in
 * reserved ways of a CPU cache, as guest RAM, so that a real-time guest
 * can have memory whose reads hit the cache.  The region exists already
 * (path=) or the backend creates it (cache-level=, cache-id=) and
 * removes it again.
 *
 * This file is the QOM object: its properties, then alloc (create or
 * open the region, hold it exclusively, check its size, map it), then
 * release.  The region in resctrl is backends/pseudolock-region.c,
 * mapping the device backends/pseudolock-map.c, the monitor commands
 * backends/pseudolock-monitor-cmds.c; what they share is in
 * include/system/hostmem-pseudolock.h.
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/cutils.h"
#include "qemu/resctrl-info.h"
#include "migration/misc.h"
#include "migration/client-options.h"
#include "system/hostmem-pseudolock.h"

/* Where the region comes from cannot change once it is mapped */
static bool pseudolock_property_frozen(Object *o, const char *name,
                                       Error **errp)
{
    if (host_memory_backend_mr_inited(MEMORY_BACKEND(o))) {
        error_setg(errp, "cannot change property '%s' of %s", name,
                   object_get_typename(o));
        return true;
    }
    return false;
}

static char *pseudolock_get_path(Object *o, Error **errp)
{
    return g_strdup(MEMORY_BACKEND_PSEUDOLOCK(o)->path);
}

static void pseudolock_set_path(Object *o, const char *value, Error **errp)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(o);

    if (pseudolock_property_frozen(o, "path", errp)) {
        return;
    }
    g_free(pl->path);
    pl->path = g_strdup(value);
}

static void pseudolock_get_cache_level(Object *obj, Visitor *v,
                                       const char *name, void *opaque,
                                       Error **errp)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    visit_type_uint32(v, name, &pl->cache_level, errp);
}

static void pseudolock_set_cache_level(Object *obj, Visitor *v,
                                       const char *name, void *opaque,
                                       Error **errp)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);
    uint32_t level;

    if (pseudolock_property_frozen(obj, name, errp)) {
        return;
    }
    if (!visit_type_uint32(v, name, &level, errp)) {
        return;
    }
    if (level != 2 && level != 3) {
        error_setg(errp, "cache-level=%" PRIu32 " is not supported: Linux "
                   "pseudo-locks L2 or L3 caches, so give 2 or 3", level);
        return;
    }
    pl->cache_level = level;
}

static void pseudolock_get_cache_id(Object *obj, Visitor *v,
                                    const char *name, void *opaque,
                                    Error **errp)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    visit_type_uint32(v, name, &pl->cache_id, errp);
}

static void pseudolock_set_cache_id(Object *obj, Visitor *v,
                                    const char *name, void *opaque,
                                    Error **errp)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    if (pseudolock_property_frozen(obj, name, errp)) {
        return;
    }
    if (visit_type_uint32(v, name, &pl->cache_id, errp)) {
        pl->cache_id_set = true;
    }
}

/*
 * Precopy migration carries the region as it carries RAM: the
 * destination's own region, of the same size, is written page by page.
 * Postcopy needs userfaultfd on the destination's memory, which Linux
 * refuses for a device mapping (VM_PFNMAP), and its capability check
 * does not find out: refuse it before anything is sent, rather than
 * fail half-way.  (Background snapshots, the other user of userfaultfd,
 * are refused by their own check when the capability is set.)
 */
static int pseudolock_migration_notify(NotifierWithReturn *notifier,
                                       MigrationEvent *e, Error **errp)
{
    HostMemoryBackendPseudolock *pl =
        container_of(notifier, HostMemoryBackendPseudolock,
                     migration_notifier);
    g_autofree char *name = NULL;

    if (e->type != MIG_EVENT_PRECOPY_SETUP || !migrate_postcopy_ram()) {
        return 0;
    }
    name = host_memory_backend_get_name(MEMORY_BACKEND(pl));
    error_setg(errp, "migration capability postcopy-ram does not work with "
               "memory backend '%s' (memory-backend-pseudolock): its memory "
               "is a device mapping, which userfaultfd cannot fill on "
               "demand; migrate without postcopy-ram", name);
    return -ENOTSUP;
}

static bool
pseudolock_backend_memory_alloc(HostMemoryBackend *backend, Error **errp)
{
    ERRP_GUARD();
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(backend);
    g_autofree char *group = NULL;
    Error *local_err = NULL;
    int fd;

    if (pl->path && (pl->cache_level || pl->cache_id_set)) {
        error_setg(errp, "path= maps an existing region, cache-level= and "
                   "cache-id= create one: give one or the other");
        return false;
    }
    if (!backend->share) {
        error_setg(errp, "share=off is not supported: a pseudo-locked region "
                   "can only be mapped shared");
        return false;
    }
    if (backend->policy != HOST_MEM_POLICY_DEFAULT ||
        !bitmap_empty(backend->host_nodes, MAX_NODES)) {
        error_setg(errp, "host-nodes and policy do not apply to a "
                   "pseudo-locked region: its memory is in a CPU cache");
        return false;
    }
    /* Options that would do nothing here: say so rather than ignore them */
    if (backend->merge) {
        error_setg(errp, "merge=on does not apply to a pseudo-locked "
                   "region: KSM never merges a device's memory");
        return false;
    }
    if (backend->dump) {
        error_setg(errp, "dump=on does not apply to a pseudo-locked region: "
                   "Linux never writes a device's mapping into a core dump");
        return false;
    }
    if (!backend->reserve) {
        error_setg(errp, "reserve=off does not apply to a pseudo-locked "
                   "region: its memory is allocated and locked already");
        return false;
    }
    if (!pseudolock_kvm_check(errp)) {
        return false;
    }

    if (!pl->path && !pseudolock_region_create(pl, errp)) {
        goto fail_created;
    }

    fd = qemu_open(pl->path, O_RDWR, errp);
    if (fd < 0) {
        if (errno == EACCES && g_str_has_prefix(pl->path, "/dev/fdset/")) {
            /* the fdset holds descriptors, but none of them read-write */
            error_prepend(errp, "%s: ", pl->path);
            error_append_hint(errp, "Give the fdset a descriptor of the "
                              "region's device opened for reading and "
                              "writing (O_RDWR): the region is guest "
                              "memory.\n");
        }
        goto fail_created;
    }
    if (!resctrl_group_of_fd(fd, &group, errp)) {
        error_prepend(errp, "%s: ", pl->path);
        goto fail;
    }
    /* A group that the backend created has its name already */
    if (!pl->group) {
        pl->group = g_steal_pointer(&group);
    }
    if (!pseudolock_claim(pl, fd, errp)) {
        goto fail;
    }
    if (!pseudolock_region_describe(pl, &local_err)) {
        /*
         * An unprivileged QEMU given the device (fd passing) may not read
         * resctrl: then the size must be given and its own affinity must
         * fit the cache domain.
         */
        if (!backend->size) {
            error_propagate(errp, local_err);
            error_append_hint(errp, "Without access to resctrl, give the "
                              "region's size with size=.\n");
            goto fail;
        }
        error_free(local_err);
    } else if (!backend->size) {
        backend->size = pl->region_size;
    } else if (backend->size > pl->region_size) {
        g_autofree char *want = size_to_str(backend->size);
        g_autofree char *have = size_to_str(pl->region_size);

        error_setg(errp, "size=%s is larger than the pseudo-locked region "
                   "'%s' (%s)", want, pl->group, have);
        goto fail;
    }
    if (!QEMU_IS_ALIGNED(backend->size, qemu_real_host_page_size())) {
        error_setg(errp, "size=%" PRIu64 " is not a multiple of the page "
                   "size (%zu)", backend->size, qemu_real_host_page_size());
        goto fail;
    }

    /* On success the backend keeps fd until it is released */
    if (pseudolock_map(pl, fd, errp)) {
        /*
         * Preallocating would touch every page of the region from threads
         * that need not run on the cache's CPUs, and on real hardware a
         * write from a core outside the cache evicts the line it writes.
         * There is nothing to allocate: the region is resident, and its
         * pages are mapped as they are used.  (-mem-prealloc turns it on
         * for every backend, so refusing it would not do.)
         */
        backend->prealloc = false;
        migration_add_notifier(&pl->migration_notifier,
                               pseudolock_migration_notify);
        pseudolock_relock_on_start_add(pl);
        return true;
    }

fail:
    close(fd);
    pseudolock_unclaim(pl);
fail_created:
    pseudolock_region_remove(pl);
    return false;
}

/*
 * object-del, once no device uses the backend: free the region now, and
 * its group if we made it.  Finalizing would be too late: the memory
 * region stays referenced until an RCU grace period has passed, so
 * object-del would return with the region still held.
 */
static void (*pseudolock_parent_unparent)(Object *obj);

static void pseudolock_backend_unparent(Object *obj)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    migration_remove_notifier(&pl->migration_notifier);
    pseudolock_relock_on_start_del(pl);
    pseudolock_unmap(pl);
    pseudolock_region_remove(pl);
    if (pseudolock_parent_unparent) {
        pseudolock_parent_unparent(obj);
    }
}

static void pseudolock_backend_instance_finalize(Object *obj)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    /* Already done if the object was deleted; not if it never was added */
    migration_remove_notifier(&pl->migration_notifier);
    pseudolock_relock_on_start_del(pl);
    pseudolock_unmap(pl);
    pseudolock_region_remove(pl);
    /* A group that had to stay, its region still mapped, is not ours now */
    pseudolock_region_forget(pl);
    pseudolock_free_range(pl);
    g_free(pl->path);
    g_free(pl->group);
    g_free(pl->resctrl_mount);
    if (pl->host_cpus) {
        g_array_unref(pl->host_cpus);
    }
}

static void pseudolock_backend_instance_init(Object *obj)
{
    HostMemoryBackend *backend = MEMORY_BACKEND(obj);
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    pl->fd = -1;
    pl->claim_fd = -1;

    /* The device maps shared only; neither KSM nor core dumps apply */
    backend->share = true;
    backend->merge = false;
    backend->dump = false;
}

static void pseudolock_backend_class_init(ObjectClass *oc, void *data)
{
    HostMemoryBackendClass *bc = MEMORY_BACKEND_CLASS(oc);

    bc->alloc = pseudolock_backend_memory_alloc;
    /* What the memory backend, or a later parent, does on unparent too */
    pseudolock_parent_unparent = oc->unparent;
    oc->unparent = pseudolock_backend_unparent;

    object_class_property_add_str(oc, "path", pseudolock_get_path,
                                  pseudolock_set_path);
    object_class_property_set_description(oc, "path",
        "the region's device, /dev/pseudo_lock/<group>, or /dev/fdset/<n>");
    object_class_property_add(oc, "cache-level", "uint32",
                              pseudolock_get_cache_level,
                              pseudolock_set_cache_level, NULL, NULL);
    object_class_property_set_description(oc, "cache-level",
        "create the region in this cache level (2 or 3), instead of path=");
    object_class_property_add(oc, "cache-id", "uint32",
                              pseudolock_get_cache_id,
                              pseudolock_set_cache_id, NULL, NULL);
    object_class_property_set_description(oc, "cache-id",
        "create the region in the cache instance of this id (as in "
        "resctrl schemata files)");
}

static const TypeInfo pseudolock_backend_info = {
    .name = TYPE_MEMORY_BACKEND_PSEUDOLOCK,
    .parent = TYPE_MEMORY_BACKEND,
    .instance_init = pseudolock_backend_instance_init,
    .instance_finalize = pseudolock_backend_instance_finalize,
    .class_init = pseudolock_backend_class_init,
    .instance_size = sizeof(HostMemoryBackendPseudolock),
};

static void register_types(void)
{
    type_register_static(&pseudolock_backend_info);
}

type_init(register_types);
