/*
 * HMP command for cache pseudo-locked memory backends
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-pseudolock.h"
#include "qemu/cutils.h"

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
            if (!info->locked) {
                monitor_printf(mon, "  NOT LOCKED: resctrl group %s was "
                               "removed while mapped; resctrl no longer "
                               "manages the region\n", info->group);
            }
        } else {
            monitor_printf(mon, "  region: unknown (resctrl not readable)\n");
        }
    }
}
