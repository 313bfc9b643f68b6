/*
 * tsc-khz: the rate of this machine's time-stamp counter, in kHz
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Under TCG the emulated host's TSC is this machine's TSC (QEMU reads
 * it for every RDTSC), but nothing tells the emulated host its rate, so
 * its kernel measures it against the PIT at boot.  When this machine
 * is loaded, a vCPU can lose the host CPU in the middle of that
 * measurement and the kernel then keeps a rate that is far off (59 MHz
 * for a 2.1 GHz TSC was seen); its clocks run that much too fast and
 * its watchdog reports soft lockups that never happened.  rig.py runs
 * this program and gives its figure to the emulated host as
 * tsc_early_khz=, which the kernel takes instead of the PIT's.
 *
 * The rate is measured against CLOCK_MONOTONIC_RAW over 200 ms.  Each
 * end of the interval is the clock read whose two surrounding TSC reads
 * are closest together, so that being preempted while reading does not
 * move it.
 *
 * Usage: tsc-khz      prints the rate in kHz, or fails with a reason
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>

/*
 * CPUID 0x80000007, EDX bit 8: the TSC ticks at one rate in every P-, C-
 * and T-state
 */
#define INVARIANT_TSC (1u << 8)

#define INTERVAL_NS  200000000L
#define TRIES        1000

struct sample {
    uint64_t tsc;
    uint64_t ns;
};

static struct sample take_sample(void)
{
    struct sample best = { 0, 0 };
    uint64_t best_spread = UINT64_MAX;
    int i;

    for (i = 0; i < TRIES; i++) {
        struct timespec ts;
        uint64_t before, after;

        before = __rdtsc();
        clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
        after = __rdtsc();
        if (after - before < best_spread) {
            best_spread = after - before;
            best.tsc = before + (after - before) / 2;
            best.ns = (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
        }
    }
    return best;
}

int main(void)
{
    unsigned int eax, ebx, ecx, edx;
    struct timespec interval = { 0, INTERVAL_NS };
    struct sample start, end;

    if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) ||
        !(edx & INVARIANT_TSC)) {
        fprintf(stderr, "tsc-khz: this CPU's TSC is not invariant "
                "(CPUID 0x80000007 EDX bit 8), so it has no one rate to "
                "give; let the kernel measure it\n");
        return 1;
    }
    start = take_sample();
    nanosleep(&interval, NULL);
    end = take_sample();
    if (end.ns <= start.ns || end.tsc <= start.tsc) {
        fprintf(stderr, "tsc-khz: the TSC or the clock went backwards\n");
        return 1;
    }
    printf("%" PRIu64 "\n",
           (end.tsc - start.tsc) * 1000000u / (end.ns - start.ns));
    return 0;
}

#else

int main(void)
{
    fprintf(stderr, "tsc-khz: not an x86 machine; QEMU's TCG then "
            "counts guest TSC ticks in its own way, which this program "
            "does not know\n");
    return 1;
}

#endif
