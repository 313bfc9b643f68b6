/*
 * Memory backend for a cache pseudo-locked region
 *
 * Maps /dev/pseudo_lock/<group>, a buffer that Linux resctrl keeps in
 * reserved ways of a CPU cache, as guest RAM, so that a real-time guest
 * can have memory whose reads hit the cache.  The region exists already
 * (path=) or the backend creates it (cache-level=, cache-id=) and
 * removes it again; what it knows about resctrl is in util/resctrl.c.
 *
 * Rules of the device (arch/x86/kernel/cpu/resctrl/pseudo_lock.c): it
 * can only be mapped shared, by a thread whose allowed CPUs all belong
 * to the region's cache domain, and every mmap zeroes the mapped range.
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/file.h>
#include "qapi/error.h"
#include "qapi/qapi-commands-pseudolock.h"
#include "qapi/visitor.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/resctrl.h"
#include "qom/object_interfaces.h"
#include "system/hostmem.h"
#include "system/system.h"

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

    /* The device mapping, until released */
    void *host;
    uint64_t mapped_size;
    int fd;

    QLIST_ENTRY(HostMemoryBackendPseudolock) created_next;
};

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
 * Find out which region @fd is: its group, cache level and domain, size,
 * capacity bitmask and CPUs, from resctrl.  Fails when resctrl cannot be
 * read; the caller decides whether it can do without.
 */
static bool pseudolock_describe_region(HostMemoryBackendPseudolock *pl,
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
static bool pseudolock_map(HostMemoryBackendPseudolock *pl, int fd,
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
static void pseudolock_release_mapping(HostMemoryBackendPseudolock *pl)
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

/* Remove the group this backend created, under the resctrl lock */
static void pseudolock_remove_group(HostMemoryBackendPseudolock *pl)
{
    Error *err = NULL;
    int lock_fd = -1;

    if (!pl->created) {
        return;
    }
    QLIST_REMOVE(pl, created_next);
    pl->created = false;
    if (!resctrl_lock(pl->resctrl_mount, &lock_fd, &err) ||
        !resctrl_group_remove(pl->resctrl_mount, pl->group, &err)) {
        error_prepend(&err, "pseudo-locked region '%s' stays: ", pl->group);
        warn_report_err(err);
    }
    resctrl_unlock(lock_fd);
}

static void pseudolock_exit_notify(Notifier *n, void *data)
{
    HostMemoryBackendPseudolock *pl, *next;

    QLIST_FOREACH_SAFE(pl, &pseudolock_created, created_next, next) {
        pseudolock_release_mapping(pl);
        pseudolock_remove_group(pl);
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
    error_append_hint(errp, "Is devtmpfs or udev managing /dev?\n");
    return false;
}

/*
 * Create a group and pseudo-lock enough free ways of the chosen cache
 * for size=.  Its name tells which QEMU process made it, so that a
 * QEMU that was killed leaves a group the next one can recognise and
 * remove; that happens here, under the lock that libvirt takes too.
 */
static bool pseudolock_create_region(HostMemoryBackendPseudolock *pl,
                                     Error **errp)
{
    ERRP_GUARD();
    HostMemoryBackend *backend = MEMORY_BACKEND(pl);
    const char *id = object_get_canonical_path_component(OBJECT(pl));
    g_autoptr(GPtrArray) reclaimed = g_ptr_array_new_with_free_func(g_free);
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

    if (!resctrl_lock(pl->resctrl_mount, &lock_fd, errp)) {
        return false;
    }
    ok = resctrl_reclaim_dead_groups(pl->resctrl_mount, reclaimed, errp) &&
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

static bool
pseudolock_backend_memory_alloc(HostMemoryBackend *backend, Error **errp)
{
    ERRP_GUARD();
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(backend);
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

    if (!pl->path && !pseudolock_create_region(pl, errp)) {
        goto fail_created;
    }

    fd = qemu_open(pl->path, O_RDWR, errp);
    if (fd < 0) {
        goto fail_created;
    }
    /*
     * Every mmap of the device zeroes the region: a second user would
     * wipe the memory of a running guest.  Hold it exclusively, as QEMU
     * locks disk images, before mapping anything.
     */
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK) {
            error_setg(errp, "pseudo-locked region '%s' is in use by "
                       "another process or memory backend", pl->path);
        } else {
            error_setg_errno(errp, errno, "cannot lock '%s'", pl->path);
        }
        goto fail;
    }

    if (!resctrl_group_of_fd(fd, &pl->group, errp)) {
        error_prepend(errp, "%s: ", pl->path);
        error_append_hint(errp, "Give a pseudo-locked region's device, "
                          "/dev/pseudo_lock/<group>.\n");
        goto fail;
    }
    if (!pseudolock_describe_region(pl, &local_err)) {
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

    /* On success the RAM block owns fd, and the lock with it */
    if (pseudolock_map(pl, fd, errp)) {
        pl->host = memory_region_get_ram_ptr(&backend->mr);
        pl->mapped_size = backend->size;
        pl->fd = fd;
        return true;
    }

fail:
    close(fd);
fail_created:
    pseudolock_remove_group(pl);
    return false;
}

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

static void pseudolock_backend_instance_init(Object *obj)
{
    HostMemoryBackend *backend = MEMORY_BACKEND(obj);
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    pl->fd = -1;

    /* The device maps shared only; neither KSM nor core dumps apply */
    backend->share = true;
    backend->merge = false;
    backend->dump = false;
}

/*
 * object-del, once no device uses the backend: free the region now, and
 * its group if we made it.  Finalizing would be too late: the memory
 * region stays referenced until an RCU grace period has passed, so
 * object-del would return with the region still held.
 */
static void pseudolock_backend_unparent(Object *obj)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    pseudolock_release_mapping(pl);
    pseudolock_remove_group(pl);
}

static void pseudolock_backend_instance_finalize(Object *obj)
{
    HostMemoryBackendPseudolock *pl = MEMORY_BACKEND_PSEUDOLOCK(obj);

    /* Already done if the object was deleted; not if it never was added */
    pseudolock_release_mapping(pl);
    pseudolock_remove_group(pl);
    g_free(pl->path);
    g_free(pl->group);
    g_free(pl->resctrl_mount);
    if (pl->host_cpus) {
        g_array_unref(pl->host_cpus);
    }
}

static void pseudolock_backend_class_init(ObjectClass *oc, void *data)
{
    HostMemoryBackendClass *bc = MEMORY_BACKEND_CLASS(oc);

    bc->alloc = pseudolock_backend_memory_alloc;
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

/*
 * Whether the region's group is still there and pseudo-locked.  Linux
 * lets the group be removed while the device is mapped; the mapping
 * stays valid but the region is orphaned.  A new group of the same name
 * cannot take its place: the kernel refuses to lock another region on a
 * cache that still holds the orphan.
 */
static bool pseudolock_still_locked(HostMemoryBackendPseudolock *pl)
{
    ResctrlMode mode;

    return resctrl_group_mode(pl->resctrl_mount, pl->group, &mode, NULL) &&
           mode == RESCTRL_MODE_PSEUDO_LOCKED;
}

static int query_pseudolock_one(Object *obj, void *opaque)
{
    PseudolockInfoList ***tail = opaque;
    HostMemoryBackendPseudolock *pl;
    PseudolockInfo *info;
    unsigned i;

    pl = (HostMemoryBackendPseudolock *)
        object_dynamic_cast(obj, TYPE_MEMORY_BACKEND_PSEUDOLOCK);
    if (!pl || !host_memory_backend_mr_inited(MEMORY_BACKEND(pl))) {
        return 0;
    }

    info = g_new0(PseudolockInfo, 1);
    info->id = g_strdup(object_get_canonical_path_component(obj));
    info->qom_path = object_get_canonical_path(obj);
    info->path = g_strdup(pl->path);
    info->mapped_size = memory_region_size(&MEMORY_BACKEND(pl)->mr);
    info->created = pl->created;
    if (pl->host_cpus) {
        uint32List **cpus_tail = &info->host_cpus;

        info->has_host_cpus = true;
        info->group = g_strdup(pl->group);
        info->has_cache_level = true;
        info->cache_level = pl->cache_level;
        info->has_cache_id = true;
        info->cache_id = pl->domain;
        info->cbm = g_strdup_printf("%" PRIx64, pl->cbm);
        info->has_size = true;
        info->size = pl->region_size;
        for (i = 0; i < pl->host_cpus->len; i++) {
            QAPI_LIST_APPEND(cpus_tail,
                             g_array_index(pl->host_cpus, unsigned, i));
        }
        info->has_locked = true;
        info->locked = pseudolock_still_locked(pl);
    }
    QAPI_LIST_APPEND(*tail, info);
    return 0;
}

PseudolockInfoList *qmp_query_pseudolock(Error **errp)
{
    PseudolockInfoList *list = NULL, **tail = &list;

    object_child_foreach(object_get_objects_root(), query_pseudolock_one,
                         &tail);
    return list;
}

static void register_types(void)
{
    type_register_static(&pseudolock_backend_info);
}

type_init(register_types);
