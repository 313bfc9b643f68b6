/*
 * rt-spin: a FIFO busy loop on one CPU, as a real-time vCPU that never
 * halts keeps it busy, for the rig
 *
 * Pins itself to CPU, takes SCHED_FIFO at PRIORITY and spins for at
 * most SECONDS, so that a scenario that fails half-way cannot leave the
 * emulated host's CPU taken for good.  With RT throttling and the fair
 * server off, nothing of a lower class runs on that CPU meanwhile.
 * (The emulated host's busybox has taskset but no chrt.)
 *
 * Usage: rt-spin CPU PRIORITY SECONDS
 *
 * Exit status: 0 after SECONDS or on SIGTERM, 3 when it could not pin
 * itself or take the policy.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    struct sigaction term = { .sa_handler = on_term };
    struct sched_param param = { 0 };
    struct timespec now, end;
    cpu_set_t set;

    if (argc != 4) {
        fprintf(stderr, "usage: rt-spin CPU PRIORITY SECONDS\n");
        return 3;
    }
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[1]), &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        fprintf(stderr, "rt-spin: CPU %s: %s\n", argv[1], strerror(errno));
        return 3;
    }
    param.sched_priority = atoi(argv[2]);
    if (sched_setscheduler(0, SCHED_FIFO, &param) < 0) {
        fprintf(stderr, "rt-spin: SCHED_FIFO %s: %s\n", argv[2],
                strerror(errno));
        return 3;
    }
    sigaction(SIGTERM, &term, NULL);

    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += atoi(argv[3]);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (!stop && (now.tv_sec < end.tv_sec ||
                       (now.tv_sec == end.tv_sec &&
                        now.tv_nsec < end.tv_nsec)));
    return 0;
}
