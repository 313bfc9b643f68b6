/*
 * region-pages: how the kernel allocated a pseudo-locked region's pages
 *
 * A mapping of a region's device is a PFN mapping, which
 * /proc/self/pagemap does not walk, so the region's page frames are
 * found as the pages that creating it took: a snapshot of
 * /proc/kpageflags taken before the region was locked, compared with
 * /proc/kpageflags now.  The region is the one run of PAGES contiguous
 * page frames that changed and now look like a kernel allocation: no
 * flag set but those of a compound page (a free page is in the buddy
 * allocator, user memory is on an LRU list, slab and page tables have
 * flags of their own); several or none is a setup error.
 *
 * Prints one line: "pages N pfn FIRST-LAST compound C split S|unknown",
 * where C counts the pages that /proc/kpageflags marks as part of a
 * compound page (whose tail pages have no reference count of their own)
 * and S those that page_owner (with page_owner=on on the kernel command
 * line) lists as an allocation of order 0 of their own, each with its own
 * reference count, which KVM of Linux before 6.13 needs to map a page of
 * a PFN mapping into a guest.  /proc/kpagecount cannot tell the two
 * apart: it counts mappings, and PFN mappings are not counted.
 *
 * Usage: region-pages BEFORE PAGES
 *   BEFORE  a copy of /proc/kpageflags taken before the region was locked
 *   PAGES   the region's size in pages
 *
 * Exit status: 0 when the region was found, 3 otherwise.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KPF_COMPOUND_HEAD   15
#define KPF_COMPOUND_TAIL   16
#define KPF_COMPOUND        ((1ULL << KPF_COMPOUND_HEAD) | \
                             (1ULL << KPF_COMPOUND_TAIL))

/* The whole of a /proc/kpageflags-like file, as 64-bit words */
static uint64_t *read_flags(const char *path, uint64_t *n)
{
    size_t cap = 1 << 16, len = 0;
    uint64_t *v = malloc(cap * sizeof(*v));
    int fd = open(path, O_RDONLY);
    ssize_t got;

    if (fd < 0 || !v) {
        fprintf(stderr, "region-pages: cannot open %s: %s\n", path,
                strerror(errno));
        exit(3);
    }
    for (;;) {
        if (len == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof(*v));
            if (!v) {
                exit(3);
            }
        }
        got = read(fd, v + len, (cap - len) * sizeof(*v));
        if (got < 0) {
            fprintf(stderr, "region-pages: cannot read %s: %s\n", path,
                    strerror(errno));
            exit(3);
        }
        if (got == 0) {
            break;
        }
        len += got / sizeof(*v);
    }
    close(fd);
    *n = len;
    return v;
}

/*
 * How many pages of [first, first + n) page_owner lists as allocations
 * of order 0, each its own: -1 if page_owner is not there or off.  The
 * file's offset is a page frame number, and each read() returns one
 * allocation: "Page allocated via order O, ..." then "PFN 0x... ".
 */
static long split_pages(uint64_t first, uint64_t n)
{
    static char rec[65536];
    int fd = open("/sys/kernel/debug/page_owner", O_RDONLY);
    long split = 0;
    ssize_t len;

    if (fd < 0) {
        return -1;
    }
    if (lseek(fd, first, SEEK_SET) < 0) {
        close(fd);
        return -1;
    }
    while ((len = read(fd, rec, sizeof(rec) - 1)) > 0) {
        unsigned order;
        uint64_t pfn;
        char *p;

        rec[len] = 0;
        p = strstr(rec, "\nPFN 0x");
        if (sscanf(rec, "Page allocated via order %u", &order) != 1 || !p ||
            sscanf(p, "\nPFN 0x%" SCNx64, &pfn) != 1 || pfn >= first + n) {
            break;
        }
        split += pfn >= first && order == 0;
    }
    close(fd);
    return len < 0 ? -1 : split;
}

int main(int argc, char **argv)
{
    uint64_t nb, na, pages, i, run = 0, first = 0, found = 0, found_at = 0;
    uint64_t *before, *after;
    long compound = 0, split;

    pages = argc == 3 ? strtoull(argv[2], NULL, 0) : 0;
    if (!pages) {
        fprintf(stderr, "usage: region-pages BEFORE PAGES\n");
        return 3;
    }
    before = read_flags(argv[1], &nb);
    after = read_flags("/proc/kpageflags", &na);
    if (na > nb) {
        na = nb;
    }
    /* Maximal runs of pages that changed and are kernel allocations now */
    for (i = 0; i <= na; i++) {
        int taken = i < na && before[i] != after[i] &&
                    !(after[i] & ~KPF_COMPOUND);

        if (taken) {
            if (!run++) {
                first = i;
            }
            continue;
        }
        if (run == pages) {
            found++;
            found_at = first;
        }
        run = 0;
    }
    if (found != 1) {
        fprintf(stderr, "region-pages: %" PRIu64 " runs of %" PRIu64
                " pages were allocated, not one\n", found, pages);
        return 3;
    }
    for (i = found_at; i < found_at + pages; i++) {
        compound += !!(after[i] & KPF_COMPOUND);
    }
    split = split_pages(found_at, pages);
    printf("pages %" PRIu64 " pfn 0x%" PRIx64 "-0x%" PRIx64 " compound %ld "
           "split ", pages, found_at, found_at + pages - 1, compound);
    if (split < 0) {
        printf("unknown\n");
    } else {
        printf("%ld\n", split);
    }
    return 0;
}
