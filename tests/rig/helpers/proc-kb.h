/*
 * proc_kb: a "Name:  N kB" field of a /proc file, for the rig's helpers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RIG_PROC_KB_H
#define RIG_PROC_KB_H

#include <stdio.h>
#include <string.h>

/* The value in kB of FIELD ("MemAvailable") in PATH; -1 if absent */
static inline long proc_kb(const char *path, const char *field)
{
    FILE *f = fopen(path, "r");
    char line[256];
    size_t len = strlen(field);
    long kb = -1;

    while (f && fgets(line, sizeof(line), f)) {
        if (!strncmp(line, field, len) && line[len] == ':' &&
            sscanf(line + len + 1, "%ld kB", &kb) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kb;
}

#endif
