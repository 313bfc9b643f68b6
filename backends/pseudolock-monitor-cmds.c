/*
 * memory-backend-pseudolock: query-pseudolock and info pseudolock
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The monitor's view of the backends: the QMP command walks the objects
 * as query-memdev does and reports each mapped region; the HMP command
 * prints the same reply for people.  They report what the backend found
 * out when it mapped, and ask resctrl only one thing afresh: whether the
 * region's group is still pseudo-locked.  The lookup of a mapped
 * backend by id is here too, for the other commands on one backend.
 */

#include "qemu/osdep.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-pseudolock.h"
#include "qemu/cutils.h"
#include "system/hostmem-pseudolock.h"

HostMemoryBackendPseudolock *pseudolock_find_mapped(const char *id,
                                                    Error **errp)
{
    Object *obj = object_resolve_path_component(object_get_objects_root(),
                                                id);
    HostMemoryBackendPseudolock *pl = (HostMemoryBackendPseudolock *)
        object_dynamic_cast(obj, TYPE_MEMORY_BACKEND_PSEUDOLOCK);

    if (!pl || !pl->host) {
        error_setg(errp, "'%s' is not a mapped memory-backend-pseudolock "
                   "object", id);
        error_append_hint(errp, "query-pseudolock lists them.\n");
        return NULL;
    }
    return pl;
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
        info->has_locked = pseudolock_region_locked(pl, &info->locked);
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

void hmp_info_pseudolock(Monitor *mon, const QDict *qdict)
{
    g_autoptr(PseudolockInfoList) list = qmp_query_pseudolock(&error_abort);
    PseudolockInfoList *l;

    if (!list) {
        monitor_printf(mon, "No pseudo-locked memory backends\n");
        return;
    }
    for (l = list; l; l = l->next) {
        PseudolockInfo *info = l->value;
        g_autofree char *mapped = size_to_str(info->mapped_size);

        monitor_printf(mon, "%s: %s (%s)\n", info->id, info->path,
                       info->qom_path);
        monitor_printf(mon, "  mapped: %s%s\n", mapped,
                       info->created ? ", group created by QEMU" : "");
        if (info->group) {
            g_autofree char *size = size_to_str(info->size);
            g_autoptr(GString) cpus = g_string_new("");
            uint32List *c;

            for (c = info->host_cpus; c; c = c->next) {
                g_string_append_printf(cpus, "%s%u", cpus->len ? "," : "",
                                       c->value);
            }
            monitor_printf(mon, "  region: resctrl group %s, L%u cache %u, "
                           "bitmask %s, %s\n", info->group,
                           info->cache_level, info->cache_id, info->cbm,
                           size);
            monitor_printf(mon, "  host CPUs of the cache: %s\n", cpus->str);
            if (!info->has_locked) {
                monitor_printf(mon, "  locked: unknown (resctrl group %s "
                               "cannot be read now)\n", info->group);
            } else if (!info->locked) {
                monitor_printf(mon, "  NOT LOCKED: resctrl group %s was "
                               "removed while mapped; resctrl no longer "
                               "manages the region\n", info->group);
            }
        } else {
            monitor_printf(mon, "  region: unknown (resctrl not readable)\n");
        }
    }
}
