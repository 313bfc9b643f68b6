/*
 * numa-check: what a real-time application in the guest sees of a NUMA
 * node, for the rig's nested guests
 *
 * Prints the node's size and its HMAT-derived read latency from sysfs,
 * then binds a buffer of SIZE bytes to the node (mbind(MPOL_BIND)),
 * writes a pattern, asks the kernel where each page landed
 * (move_pages() with no target) and reads the pattern back.  One line
 * each, for a scenario to test:
 *   "node N: size BYTES"
 *   "node N: read latency NS"      (absent without HMAT)
 *   "bound SIZE bytes to node N: all pages on node N, pattern verified"
 * or a line saying what failed.  No libnuma: the guest has no C library.
 * With SECONDS, it then reads the buffer a line at a time for that long,
 * for the host to measure where those reads are served from:
 *   "reading node N for SECONDS s"
 *   "read node N's buffer PASSES times"
 *
 * Usage: numa-check NODE [SIZE [SECONDS]]
 *
 * Exit status: 0 on success, 1 on a failed check, 3 on a usage error.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MPOL_BIND 2

static long read_long(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char line[256];
    long v = -1;

    while (f && fgets(line, sizeof(line), f)) {
        char *p = key ? strstr(line, key) : line;

        if (p && sscanf(p + (key ? strlen(key) : 0), " %ld", &v) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return v;
}

/* Read @buf a line at a time until @seconds have passed; returns the passes */
static long read_for(const volatile unsigned char *buf, long size,
                     long seconds)
{
    struct timespec now, end;
    long passes = 0, i;

    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += seconds;
    do {
        for (i = 0; i < size; i += 64) {
            (void)buf[i];       /* volatile: each load is made */
        }
        passes++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec < end.tv_sec ||
             (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
    return passes;
}

int main(int argc, char **argv)
{
    char path[128];
    unsigned long mask;
    long node, size, seconds, kb, latency, pages, i;
    unsigned char *buf;
    void **addrs;
    int *status;

    if (argc < 2) {
        fprintf(stderr, "usage: numa-check NODE [SIZE [SECONDS]]\n");
        return 3;
    }
    node = strtol(argv[1], NULL, 0);
    size = argc > 2 ? strtol(argv[2], NULL, 0) : 1 << 20;
    seconds = argc > 3 ? strtol(argv[3], NULL, 0) : 0;
    if (node < 0 || node >= 64 || size <= 0 || seconds < 0) {
        fprintf(stderr, "numa-check: bad node, size or seconds\n");
        return 3;
    }

    snprintf(path, sizeof(path), "/sys/devices/system/node/node%ld/meminfo",
             node);
    kb = read_long(path, "MemTotal:");
    if (kb < 0) {
        printf("node %ld: not present\n", node);
        return 1;
    }
    printf("node %ld: size %ld\n", node, kb * 1024);
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%ld/access0/"
             "initiators/read_latency", node);
    latency = read_long(path, NULL);
    if (latency >= 0) {
        printf("node %ld: read latency %ld\n", node, latency);
    }

    buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        printf("mmap: %s\n", strerror(errno));
        return 1;
    }
    mask = 1UL << node;
    if (syscall(SYS_mbind, buf, size, MPOL_BIND, &mask, 64, 0) < 0) {
        printf("mbind to node %ld: %s\n", node, strerror(errno));
        return 1;
    }
    for (i = 0; i < size; i++) {
        buf[i] = (unsigned char)(i * 7 + node);
    }

    pages = (size + 4095) / 4096;
    addrs = calloc(pages, sizeof(*addrs));
    status = calloc(pages, sizeof(*status));
    for (i = 0; i < pages; i++) {
        addrs[i] = buf + i * 4096;
    }
    if (syscall(SYS_move_pages, 0, pages, addrs, NULL, status, 0) < 0) {
        printf("move_pages: %s\n", strerror(errno));
        return 1;
    }
    for (i = 0; i < pages; i++) {
        if (status[i] != node) {
            printf("page %ld is on node %d, not %ld\n", i, status[i], node);
            return 1;
        }
    }
    for (i = 0; i < size; i++) {
        if (buf[i] != (unsigned char)(i * 7 + node)) {
            printf("mismatch at offset %ld\n", i);
            return 1;
        }
    }
    printf("bound %ld bytes to node %ld: all pages on node %ld, "
           "pattern verified\n", size, node, node);
    if (seconds) {
        printf("reading node %ld for %ld s\n", node, seconds);
        fflush(stdout);
        printf("read node %ld's buffer %ld times\n", node,
               read_for(buf, size, seconds));
    }
    return 0;
}
