/*
 * rdt-probe: read CPUID and read/write MSRs on a chosen CPU, for the rig
 *
 * Usage: rdt-probe cpuid CPU LEAF SUBLEAF   prints "EAX EBX ECX EDX" in hex
 *        rdt-probe rdmsr CPU MSR            prints the value in hex, or "GP"
 *        rdt-probe wrmsr CPU MSR VALUE      prints "ok", or "GP"
 *
 * MSRs go through the kernel's msr driver (/dev/cpu/CPU/msr), which turns
 * a #GP raised by the access into EIO: that is how a scenario sees that
 * the emulated CPU refused a value, as hardware would.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int run_on(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        fprintf(stderr, "rdt-probe: cannot run on CPU %d: %s\n", cpu,
                strerror(errno));
        return -1;
    }
    return 0;
}

static int open_msr(int cpu, int flags)
{
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/dev/cpu/%d/msr", cpu);
    fd = open(path, flags);
    if (fd < 0) {
        fprintf(stderr, "rdt-probe: cannot open %s: %s\n", path,
                strerror(errno));
    }
    return fd;
}

/* The msr driver reports a #GP as EIO */
static int report_failure(void)
{
    if (errno == EIO) {
        printf("GP\n");
    } else {
        printf("error: %s\n", strerror(errno));
    }
    return 1;
}

int main(int argc, char **argv)
{
    int cpu, fd;
    uint32_t msr;
    uint64_t val;
    ssize_t n;

    if (argc >= 5 && !strcmp(argv[1], "cpuid")) {
        unsigned int a, b, c, d;

        cpu = atoi(argv[2]);
        if (run_on(cpu) < 0) {
            return 3;
        }
        __cpuid_count(strtoul(argv[3], NULL, 0), strtoul(argv[4], NULL, 0),
                      a, b, c, d);
        printf("%08x %08x %08x %08x\n", a, b, c, d);
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "rdmsr")) {
        cpu = atoi(argv[2]);
        msr = strtoul(argv[3], NULL, 0);
        fd = open_msr(cpu, O_RDONLY);
        if (fd < 0) {
            return 3;
        }
        n = pread(fd, &val, sizeof(val), msr);
        if (n != sizeof(val)) {
            return report_failure();
        }
        printf("%" PRIx64 "\n", val);
        return 0;
    }
    if (argc >= 5 && !strcmp(argv[1], "wrmsr")) {
        cpu = atoi(argv[2]);
        msr = strtoul(argv[3], NULL, 0);
        val = strtoull(argv[4], NULL, 0);
        fd = open_msr(cpu, O_WRONLY);
        if (fd < 0) {
            return 3;
        }
        n = pwrite(fd, &val, sizeof(val), msr);
        if (n != sizeof(val)) {
            return report_failure();
        }
        printf("ok\n");
        return 0;
    }
    fprintf(stderr, "usage: rdt-probe cpuid CPU LEAF SUBLEAF | "
            "rdmsr CPU MSR | wrmsr CPU MSR VALUE\n");
    return 3;
}
