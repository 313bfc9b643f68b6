/*
 * pl-map: map a pseudo-locked region from chosen CPUs, for the rig
 *
 * Restricts itself to the given CPUs, maps SIZE bytes of DEVICE shared
 * and, if asked, writes a pattern to the mapping or checks that the
 * mapping holds it.  The outcome is one line on stdout that a scenario
 * can test: "mapped SIZE", "verified SIZE", or "mmap: ERRNO-NAME".
 *
 * Usage: pl-map [-c CPU-LIST] [-s SIZE] [-p] [-t] [-d]
 *               [-w BYTE | -v BYTE | -z] DEVICE
 *        pl-map -r ro|rw DEVICE
 *   -c CPU-LIST  CPUs to run on, as in cpus_list files ("0", "0-3,6")
 *   -s SIZE      bytes to map (default: 4096)
 *   -w BYTE      fill the mapping with BYTE (0-255) at every position
 *                XOR'ed with its page number, so that pages differ
 *   -v BYTE      check that the mapping holds what -w BYTE wrote
 *   -z           check that the mapping reads as zeroes
 *   -t           touch every page, then print a second line "page
 *                tables: +N kB": how much the kernel's page-table
 *                accounting (VmPTE) grew for the mapping; 0 means it is
 *                mapped with 2 MiB (PMD) entries, which need no PTE page
 *   -p           after mapping (and writing), print "mapped SIZE" and
 *                wait for SIGUSR1 before checking: the mapping stays
 *                while another process maps the device and writes
 *   -d           right after mmap, clear the soft-dirty bits of this
 *                process (4 > /proc/self/clear_refs, as CRIU and
 *                live-migration tools do), which makes the mapping's
 *                page protection read-only; at the end, write every page
 *                again and print "rewritten after clear_refs": write
 *                faults must still make the entries writable
 *
 *   -r ro|rw     instead of mapping, ask the kernel to load the region
 *                into its cache again (the host patches' PSEUDO_LOCK_RELOCK
 *                ioctl) through a descriptor opened read-only or
 *                read-write; prints "relock: OK" or "relock: ERRNO-NAME"
 *
 * Exit status: 0 on success, 1 when mmap fails, 2 on a verification
 * mismatch, 3 on a usage or setup error.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proc-kb.h"

/* include/uapi/linux/pseudo_lock.h of the host patches */
#define PSEUDO_LOCK_RELOCK  _IO(0xD1, 0x00)

static const char *errno_name(int err)
{
    switch (err) {
    case EBADF:
        return "EBADF";
    case ENOTTY:
        return "ENOTTY";
    case EINVAL:
        return "EINVAL";
    case ENOSPC:
        return "ENOSPC";
    case ENODEV:
        return "ENODEV";
    case EPERM:
        return "EPERM";
    case ENOMEM:
        return "ENOMEM";
    case EACCES:
        return "EACCES";
    default:
        return strerror(err);
    }
}

static int parse_cpus(const char *list, cpu_set_t *set)
{
    char *copy = strdup(list), *save = NULL, *tok;

    CPU_ZERO(set);
    for (tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long first = strtol(tok, &end, 10), last = first;

        if (*end == '-') {
            last = strtol(end + 1, &end, 10);
        }
        if (*end || first < 0 || last < first || last >= CPU_SETSIZE) {
            free(copy);
            return -1;
        }
        for (; first <= last; first++) {
            CPU_SET(first, set);
        }
    }
    free(copy);
    return 0;
}

/* VmPTE of this process in kB, from /proc/self/status; -1 if absent */
static long vm_pte_kb(void)
{
    return proc_kb("/proc/self/status", "VmPTE");
}

static unsigned char pattern_at(int seed, size_t offset)
{
    return (unsigned char)(seed ^ (offset >> 12));
}

int main(int argc, char **argv)
{
    const char *cpus = NULL;
    size_t size = 4096;
    int write_seed = -1, verify_seed = -1, zero = 0, pause = 0, touch = 0;
    int soft_dirty = 0;
    const char *relock = NULL;
    long pte_before = 0;
    sigset_t usr1;
    cpu_set_t set;
    unsigned char *map;
    size_t i;
    int opt, fd;

    while ((opt = getopt(argc, argv, "c:s:w:v:zptdr:")) != -1) {
        switch (opt) {
        case 'c':
            cpus = optarg;
            break;
        case 's':
            size = strtoull(optarg, NULL, 0);
            break;
        case 'w':
            write_seed = atoi(optarg) & 0xff;
            break;
        case 'v':
            verify_seed = atoi(optarg) & 0xff;
            break;
        case 'z':
            zero = 1;
            break;
        case 'p':
            pause = 1;
            break;
        case 't':
            touch = 1;
            break;
        case 'd':
            soft_dirty = 1;
            break;
        case 'r':
            relock = optarg;
            break;
        default:
            return 3;
        }
    }
    if (optind != argc - 1 || !size) {
        fprintf(stderr, "usage: pl-map [-c CPU-LIST] [-s SIZE] "
                "[-p] [-t] [-d] [-w BYTE | -v BYTE | -z] DEVICE\n");
        return 3;
    }
    if (relock) {
        int rw = !strcmp(relock, "rw");

        if (!rw && strcmp(relock, "ro")) {
            fprintf(stderr, "pl-map: -r takes ro or rw, not '%s'\n", relock);
            return 3;
        }
        fd = open(argv[optind], rw ? O_RDWR : O_RDONLY);
        if (fd < 0) {
            fprintf(stderr, "pl-map: cannot open %s: %s\n", argv[optind],
                    strerror(errno));
            return 3;
        }
        if (ioctl(fd, PSEUDO_LOCK_RELOCK) < 0) {
            printf("relock: %s\n", errno_name(errno));
            return 1;
        }
        printf("relock: OK\n");
        return 0;
    }
    /* Blocked from the start, so that an early SIGUSR1 is not lost */
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    if (cpus) {
        if (parse_cpus(cpus, &set) < 0) {
            fprintf(stderr, "pl-map: bad CPU list '%s'\n", cpus);
            return 3;
        }
        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
            fprintf(stderr, "pl-map: cannot run on CPUs %s: %s\n", cpus,
                    strerror(errno));
            return 3;
        }
    }

    fd = open(argv[optind], O_RDWR);
    if (fd < 0) {
        fprintf(stderr, "pl-map: cannot open %s: %s\n", argv[optind],
                strerror(errno));
        return 3;
    }
    pte_before = vm_pte_kb();
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        printf("mmap: %s\n", errno_name(errno));
        return 1;
    }

    if (soft_dirty) {
        /* before any page is faulted in: every fault sees the new prot */
        int cfd = open("/proc/self/clear_refs", O_WRONLY);

        if (cfd < 0 || write(cfd, "4", 1) != 1) {
            fprintf(stderr, "pl-map: cannot clear soft-dirty bits: %s\n",
                    strerror(errno));
            return 3;
        }
        close(cfd);
    }
    if (write_seed >= 0) {
        for (i = 0; i < size; i++) {
            map[i] = pattern_at(write_seed, i);
        }
    }
    if (pause) {
        int sig;

        printf("mapped %zu\n", size);
        fflush(stdout);
        sigwait(&usr1, &sig);
    }
    for (i = 0; i < size; i++) {
        int want = zero ? 0 : verify_seed >= 0 ? pattern_at(verify_seed, i)
                                                : -1;

        if (want >= 0 && map[i] != want) {
            printf("mismatch at offset %zu: 0x%02x, expected 0x%02x\n",
                   i, map[i], want);
            return 2;
        }
    }
    printf("%s %zu\n", (verify_seed >= 0 || zero) ? "verified" : "mapped",
           size);
    if (touch) {
        /*
         * volatile: the compiler must not drop a store of what was just
         * loaded; the point is the write fault that maps each page
         */
        volatile unsigned char *p = map;

        for (i = 0; i < size; i += 4096) {
            p[i] = p[i];
        }
        printf("page tables: +%ld kB\n", vm_pte_kb() - pte_before);
    }
    if (soft_dirty) {
        /* volatile: as above, each store must reach the mapping */
        volatile unsigned char *p = map;

        for (i = 0; i < size; i += 4096) {
            p[i] = p[i] + 1;
            p[i] = p[i] - 1;
        }
        printf("rewritten after clear_refs\n");
    }
    munmap(map, size);
    close(fd);
    return 0;
}
