/*
 * fragment: fragment the host's free memory, for the rig
 *
 * Fills all but KEEP MiB of the available memory with anonymous pages
 * in 1 MiB chunks and, every STRIDE KiB of it, a page that the kernel
 * cannot move (the buffer of a pipe that holds one byte), then frees
 * every other chunk.  What is left is free memory in 1 MiB holes between
 * movable pages, with unmovable ones among them: a large physically
 * contiguous allocation has to migrate pages, and fails where an
 * unmovable one is in the way.  Everything stays until the process gets
 * SIGTERM, so the scenario runs while the memory is fragmented.
 *
 * Usage: fragment [-k KEEP-MIB] [-s STRIDE-KIB]
 * Prints "fragmented: N MiB of holes, M unmovable pages" when ready.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proc-kb.h"

static long mem_available_mib(void)
{
    return proc_kb("/proc/meminfo", "MemAvailable") / 1024;
}

int main(int argc, char **argv)
{
    long keep_mib = 128, stride_kib = 1024, chunk = 1 << 20;
    struct rlimit rl = { 1 << 20, 1 << 20 };
    unsigned char **chunks = NULL;
    size_t nchunks = 0, i, off;
    long pinned = 0;
    sigset_t term;
    int opt, sig;

    while ((opt = getopt(argc, argv, "k:s:")) != -1) {
        switch (opt) {
        case 'k':
            keep_mib = atol(optarg);
            break;
        case 's':
            stride_kib = atol(optarg);
            break;
        default:
            fprintf(stderr, "usage: fragment [-k KEEP-MIB] [-s STRIDE-KIB]\n");
            return 3;
        }
    }
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    setrlimit(RLIMIT_NOFILE, &rl);

    /*
     * Interleave: a chunk of anonymous memory, then a pipe page, so that
     * the unmovable pages come from all over the free memory.
     */
    while (mem_available_mib() > keep_mib) {
        unsigned char *c = mmap(NULL, chunk, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int fds[2];

        if (c == MAP_FAILED) {
            break;
        }
        /*
         * No transparent huge pages: unmapping half of one would leave it
         * on the deferred split list, to be freed at some later time,
         * and MemFree would drift while the scenario measures it.
         */
        madvise(c, chunk, MADV_NOHUGEPAGE);
        for (off = 0; off < (size_t)chunk; off += 4096) {
            c[off] = 1;
        }
        chunks = realloc(chunks, (nchunks + 1) * sizeof(*chunks));
        chunks[nchunks++] = c;
        for (off = 0; off < (size_t)chunk; off += stride_kib * 1024) {
            /* Both ends stay open, or the pipe and its page go */
            if (pipe(fds) < 0 || write(fds[1], "x", 1) != 1) {
                goto filled;
            }
            pinned++;
        }
    }
filled:
    for (i = 0; i < nchunks; i += 2) {
        munmap(chunks[i], chunk);
    }
    printf("fragmented: %zu MiB of holes, %ld unmovable pages\n",
           (nchunks + 1) / 2, pinned);
    fflush(stdout);
    sigwait(&term, &sig);
    return 0;
}
