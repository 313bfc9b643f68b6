/*
 * cache-probe: the workloads of the cache-model scenario, run inside the
 * emulated host, and its commands to the catcache plugin.
 *
 *   cache-probe arm | disarm
 *       start or stop the model (a CPUID leaf that the plugin watches)
 *   cache-probe read LABEL SIZE [PATH] [ROUNDS] [PAUSE-MS]
 *       map SIZE bytes (anonymous memory written once, or the
 *       pseudo-locked region's device PATH), then ROUNDS times: wait
 *       PAUSE-MS, and read every line once inside a window labelled
 *       LABEL (at most 8 characters), whose hits the plugin logs
 *   cache-probe noise SIZE
 *       read a SIZE-byte buffer line by line, for ever: the noisy
 *       neighbour that evicts whatever its class of service may
 *   cache-probe reader PATH SIZE
 *       map the region's device once and obey commands on stdin, a line
 *       each, answering "done" on stdout after each:
 *         read LABEL ROUNDS PAUSE-MS   as above
 *         write-from CPU FIRST LINES   move to CPU, write lines FIRST to
 *                                      FIRST+LINES-1, move back
 *         clflush FIRST LINES          CLFLUSH those lines
 *         clflush32 FIRST LINES        the same through 32-bit addresses
 *                                      (an 0x67 prefix), with garbage
 *                                      above bit 31 of the register
 *   cache-probe watch LABEL PID PATH
 *       open the plugin's shared window, labelled LABEL, on process PID's
 *       mapping of the device whose path starts with PATH: it counts
 *       the accesses to those virtual addresses on every CPU, so the
 *       process's wherever it runs (a QEMU's guest's, say)
 *   cache-probe unwatch
 *       close it; the plugin logs its counts
 *
 * Sizes take a K or M suffix.  The region is mapped, not read(), so that
 * its reads are loads of its physical lines; and mapped once, because
 * every mmap of the device zeroes the whole region from the calling CPU,
 * which writes back into the cache any line that had left it.
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define LINE            64
#define CATCACHE_LEAF   0x63616368u     /* "cach" */
#define CMD_ARM         1
#define CMD_DISARM      2
#define CMD_OPEN        3
#define CMD_CLOSE       4
#define CMD_SHARED_OPEN  5
#define CMD_SHARED_CLOSE 6

/* A command to the plugin; a window counts accesses to [start, +len) */
static void catcache(uint32_t cmd, const char *label, const void *start,
                     size_t len)
{
    uint32_t a = CATCACHE_LEAF, b = cmd, c = 0, d = 0;
    char name[8] = { 0 };

    if (label) {
        memcpy(name, label, strnlen(label, sizeof(name)));
    }
    memcpy(&c, name, 4);
    memcpy(&d, name + 4, 4);
    __asm__ volatile("cpuid" : "+a"(a), "+b"(b), "+c"(c), "+d"(d)
                     : "S"(start), "D"(len) : "memory");
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long n = strtoull(s, &end, 0);

    if (*end == 'K' || *end == 'k') {
        n <<= 10;
    } else if (*end == 'M' || *end == 'm') {
        n <<= 20;
    } else if (*end) {
        fprintf(stderr, "cache-probe: bad size '%s'\n", s);
        exit(2);
    }
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0) {
        ;
    }
}

#define REGION_HINT     0x40000000UL

static uint8_t *map(const char *path, size_t size)
{
    void *p;

    if (path) {
        int fd = open(path, O_RDWR);

        if (fd < 0) {
            perror(path);
            exit(1);
        }
        /* Below 4 GiB if it can be, for clflush32 */
        p = mmap((void *)REGION_HINT, size, PROT_READ | PROT_WRITE,
                 MAP_SHARED, fd, 0);
        close(fd);
    } else {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    }
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

/* One load a line; volatile, so that every load happens, in order */
static uint64_t read_lines(const volatile uint8_t *p, size_t size)
{
    uint64_t sum = 0;
    size_t off;

    for (off = 0; off < size; off += LINE) {
        sum += p[off];
    }
    return sum;
}

static void read_windows(const char *label, const uint8_t *p, size_t size,
                         int rounds, long pause)
{
    int r;

    for (r = 0; r < rounds; r++) {
        sleep_ms(pause);
        catcache(CMD_OPEN, label, p, size);
        read_lines(p, size);
        catcache(CMD_CLOSE, NULL, NULL, 0);
    }
}

/* Obey the commands on stdin, with the region mapped once */
static int reader(const char *path, size_t size)
{
    uint8_t *p = map(path, size);
    cpu_set_t home;
    char line[128], label[16];
    int rounds, cpu;
    long pause;
    size_t first, lines, i;

    if (sched_getaffinity(0, sizeof(home), &home) < 0) {
        perror("sched_getaffinity");
        return 1;
    }
    while (fgets(line, sizeof(line), stdin)) {
        if (sscanf(line, "read %15s %d %ld", label, &rounds, &pause) == 3) {
            read_windows(label, p, size, rounds, pause);
        } else if (sscanf(line, "write-from %d %zu %zu", &cpu, &first,
                          &lines) == 3) {
            cpu_set_t there;

            CPU_ZERO(&there);
            CPU_SET(cpu, &there);
            if (sched_setaffinity(0, sizeof(there), &there) < 0) {
                perror("sched_setaffinity");
                return 1;
            }
            for (i = first; i < first + lines && i * LINE < size; i++) {
                /* volatile: one store a line, each done */
                ((volatile uint8_t *)p)[i * LINE] = 0x5a;
            }
            sched_setaffinity(0, sizeof(home), &home);
        } else if (sscanf(line, "clflush32 %zu %zu", &first, &lines) == 2) {
            /* (before "clflush", whose format would read "32" as FIRST) */
            if ((uintptr_t)p + size > (1ULL << 32)) {
                fprintf(stderr, "cache-probe: the region is mapped at %p, "
                        "not below 4 GiB\n", p);
                return 1;
            }
            for (i = first; i < first + lines && i * LINE < size; i++) {
                /* The CPU uses only the low half of the register */
                uint64_t addr = (uintptr_t)(p + i * LINE) | 0xabcd00000000ULL;

                __asm__ volatile("clflush (%k0)" : : "r"(addr) : "memory");
            }
        } else if (sscanf(line, "clflush %zu %zu", &first, &lines) == 2) {
            for (i = first; i < first + lines && i * LINE < size; i++) {
                __asm__ volatile("clflush (%0)" : : "r"(p + i * LINE)
                                 : "memory");
            }
        } else if (strcmp(line, "\n")) {
            fprintf(stderr, "cache-probe: unknown command '%s'", line);
            return 2;
        }
        printf("done\n");
        fflush(stdout);
    }
    return 0;
}

/*
 * Open the shared window on @pid's mapping of @path.  Its physical
 * addresses are out of reach: /proc/PID/pagemap has no entries for
 * a device's PFN mappings.
 */
static int watch(const char *label, int pid, const char *path)
{
    char file[64], line[512], name[256];
    uint64_t start = 0, end = 0;
    unsigned long long offset;
    FILE *maps;

    snprintf(file, sizeof(file), "/proc/%d/maps", pid);
    maps = fopen(file, "r");
    if (!maps) {
        perror(file);
        return 1;
    }
    while (fgets(line, sizeof(line), maps)) {
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %llx %*s %*s %255s",
                   &start, &end, &offset, name) == 4 && offset == 0 &&
            !strncmp(name, path, strlen(path))) {
            break;
        }
        start = end = 0;
    }
    fclose(maps);
    if (!end) {
        fprintf(stderr, "cache-probe: process %d maps nothing at %s*\n",
                pid, path);
        return 1;
    }
    catcache(CMD_SHARED_OPEN, label, (void *)(uintptr_t)start, end - start);
    printf("watching 0x%" PRIx64 "-0x%" PRIx64 ", process %d's mapping of "
           "%s\n", start, end, pid, name);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "arm")) {
        catcache(CMD_ARM, NULL, NULL, 0);
    } else if (argc == 2 && !strcmp(argv[1], "disarm")) {
        catcache(CMD_DISARM, NULL, NULL, 0);
    } else if (argc >= 4 && !strcmp(argv[1], "read")) {
        size_t size = parse_size(argv[3]);
        const char *path = argc > 4 && strcmp(argv[4], "-") ? argv[4] : NULL;
        uint8_t *p = map(path, size);

        if (!path) {
            memset(p, 1, size);
        }
        read_windows(argv[2], p, size, argc > 5 ? atoi(argv[5]) : 1,
                     argc > 6 ? atol(argv[6]) : 0);
    } else if (argc == 5 && !strcmp(argv[1], "watch")) {
        return watch(argv[2], atoi(argv[3]), argv[4]);
    } else if (argc == 2 && !strcmp(argv[1], "unwatch")) {
        catcache(CMD_SHARED_CLOSE, NULL, NULL, 0);
    } else if (argc == 4 && !strcmp(argv[1], "reader")) {
        return reader(argv[2], parse_size(argv[3]));
    } else if (argc == 3 && !strcmp(argv[1], "noise")) {
        size_t size = parse_size(argv[2]);
        uint8_t *p = map(NULL, size);

        memset(p, 1, size);
        for (;;) {
            read_lines(p, size);
        }
    } else {
        fprintf(stderr, "usage: cache-probe arm | disarm | "
                "read LABEL SIZE [PATH|-] [ROUNDS] [PAUSE-MS] | noise SIZE | "
                "reader PATH SIZE | watch LABEL PID PATH | unwatch\n");
        return 2;
    }
    return 0;
}
