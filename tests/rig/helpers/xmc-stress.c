/*
 * xmc-stress: cross-modifying code, done the way x86 allows it
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One thread rewrites the immediate of "mov eax, imm32; ret" in an
 * executable page, again and again, with a plain store or with an atomic
 * exchange (which QEMU's TCG does in another helper), and after each
 * one publishes the value it wrote.  Another thread, on another CPU,
 * reads the published value, executes CPUID (the serializing
 * instruction that the SDM's protocol for cross-modifying code asks of
 * the executing processor) and calls the code: it must get that value or a newer one.  An older
 * one means the CPU ran bytes that had been overwritten before it
 * synchronized, which is what made Linux's text_poke_bp() oops under
 * QEMU's multi-threaded TCG: a vCPU that translated the old bytes while
 * another vCPU's store was under way kept that translation.
 *
 * Usage: xmc-stress SECONDS [store|xchg]      (on two CPUs at least)
 * Prints "calls N stores N stale N" and, for the first stale call, the
 * value published and the one the code returned; exits 0 when no call
 * was stale, 1 when one was, 2 when it could not run.
 */

#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef uint32_t code_fn(void);

static uint8_t *code;
static uint32_t published;
static int stop;
static unsigned long stores;
static int use_xchg;

/* The @nth CPU in @allowed, or -1 */
static int nth_cpu(const cpu_set_t *allowed, int nth)
{
    int cpu;

    for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, allowed) && nth-- == 0) {
            return cpu;
        }
    }
    return -1;
}

/* Run the calling thread on @cpu only */
static int pin_to(int cpu)
{
    cpu_set_t one;

    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof(one), &one);
}

static int writer_cpu;

static void *writer(void *unused)
{
    uint32_t value;

    (void)unused;
    if (pin_to(writer_cpu)) {
        fprintf(stderr, "xmc-stress: cannot run the writer on CPU %d: %s\n",
                writer_cpu, strerror(errno));
        exit(2);
    }
    for (value = 2; !__atomic_load_n(&stop, __ATOMIC_RELAXED); value++) {
        /* One 4-byte write of the (aligned) immediate, then the flag */
        if (use_xchg) {
            __atomic_exchange_n((uint32_t *)(code + 4), value,
                                __ATOMIC_SEQ_CST);
        } else {
            /* A relaxed atomic store is one plain mov on x86 */
            __atomic_store_n((uint32_t *)(code + 4), value,
                             __ATOMIC_RELAXED);
        }
        __atomic_store_n(&published, value, __ATOMIC_RELEASE);
        stores++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    code_fn *fn, *keep;
    pthread_t thread;
    unsigned long calls = 0, stale = 0;
    uint32_t first_published = 0, first_returned = 0;
    unsigned int eax, ebx, ecx, edx;
    cpu_set_t allowed;
    int reader_cpu;
    time_t end;
    int seconds, err;

    seconds = argc >= 2 ? atoi(argv[1]) : 0;
    use_xchg = argc == 3 && !strcmp(argv[2], "xchg");
    if (seconds <= 0 || argc > 3 ||
        (argc == 3 && !use_xchg && strcmp(argv[2], "store"))) {
        fprintf(stderr, "usage: xmc-stress SECONDS [store|xchg]\n");
        return 2;
    }
    code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        fprintf(stderr, "xmc-stress: cannot map a writable, executable "
                "page: %s\n", strerror(errno));
        return 2;
    }
    /* At 3, so that the immediate is aligned: TCG does atomics there */
    code[3] = 0xb8;                     /* mov eax, imm32 */
    memcpy(code + 4, &(uint32_t){ 1 }, 4);
    code[8] = 0xc3;                     /* ret */
    /*
     * A second function on the page, called before the first each time:
     * the page then always holds code (its translation is made again at
     * once when QEMU flushes its code buffer), so every store of the
     * writer goes through QEMU's slow path, which invalidates the first
     * function's translation, as a store to kernel text does.  A store
     * that takes the fast path because the page held no code while
     * another vCPU translates the page's first TB is a different race
     * of QEMU's, not fixed here.
     */
    code[64] = 0xc3;                    /* ret */
    published = 1;
    fn = (code_fn *)(code + 3);
    keep = (code_fn *)(code + 64);

    /* The reader and the writer each on a CPU of its own */
    if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
        fprintf(stderr, "xmc-stress: sched_getaffinity: %s\n",
                strerror(errno));
        return 2;
    }
    reader_cpu = nth_cpu(&allowed, 0);
    writer_cpu = nth_cpu(&allowed, 1);
    if (writer_cpu < 0) {
        fprintf(stderr, "xmc-stress: needs two CPUs, and may run on %d\n",
                CPU_COUNT(&allowed));
        return 2;
    }
    if (pin_to(reader_cpu)) {
        fprintf(stderr, "xmc-stress: cannot run the reader on CPU %d: %s\n",
                reader_cpu, strerror(errno));
        return 2;
    }
    err = pthread_create(&thread, NULL, writer, NULL);
    if (err) {
        fprintf(stderr, "xmc-stress: cannot start the writer: %s\n",
                strerror(err));
        return 2;
    }
    end = time(NULL) + seconds;
    while (time(NULL) < end) {
        int i;

        for (i = 0; i < 1000; i++) {
            uint32_t expected = __atomic_load_n(&published, __ATOMIC_ACQUIRE);
            uint32_t got;

            __cpuid(0, eax, ebx, ecx, edx);
            keep();
            got = fn();
            calls++;
            if (got < expected) {
                if (!stale++) {
                    first_published = expected;
                    first_returned = got;
                }
            }
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(thread, NULL);

    printf("%s: calls %lu stores %lu stale %lu\n", use_xchg ? "xchg" : "store",
           calls, stores, stale);
    if (stale) {
        printf("first stale call: %u published, the code returned %u\n",
               first_published, first_returned);
    }
    return stale ? 1 : 0;
}
