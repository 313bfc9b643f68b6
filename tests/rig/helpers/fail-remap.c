/*
 * fail-remap: run a command in which putting anonymous memory over a
 * mapping fails, for the rig
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * memory-backend-pseudolock lets go of a region by mapping anonymous
 * memory over it (mmap with MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS |
 * MAP_NORESERVE, read-write); the kernel can refuse that (ENOMEM: no
 * memory for the new mapping, too many mappings), and the backend must
 * then keep the region's group rather than orphan a mapped region.
 * Nothing makes the kernel refuse it on demand, so this installs a
 * seccomp filter that fails exactly such calls with ENOMEM, and runs
 * the command under it (the filter is inherited across exec and by
 * every thread).  Other mmap() calls are left alone.
 *
 * Usage: fail-remap COMMAND [ARG...]
 */

#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define REMAP_FLAGS (MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
#define REMAP_PROT  (PROT_READ | PROT_WRITE)

/* The low 32 bits of syscall argument @n (x86-64 is little-endian) */
#define ARG_LO(n) offsetof(struct seccomp_data, args[n])

int main(int argc, char **argv)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 5),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(3)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, REMAP_FLAGS, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, REMAP_PROT, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOMEM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {
        .len = sizeof(filter) / sizeof(filter[0]),
        .filter = filter,
    };

    if (argc < 2) {
        fprintf(stderr, "usage: fail-remap COMMAND [ARG...]\n");
        return 2;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
        fprintf(stderr, "fail-remap: cannot install the filter: %s\n",
                strerror(errno));
        return 2;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "fail-remap: cannot run %s: %s\n", argv[1],
            strerror(errno));
    return 127;
}
