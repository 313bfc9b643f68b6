/*
 * Unit tests of region planning (util/resctrl-plan.c), on fake trees
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The free-way search on bitmasks alone, then the choice of a region's
 * ways on the fake resctrl trees of resctrl-test-helpers.c.
 */

#include "qemu/osdep.h"

#include "qapi/error.h"
#include "qemu/resctrl-plan.h"
#include "qemu/units.h"
#include "resctrl-test-helpers.h"

static void test_find_free_bits(void)
{
    uint64_t cbm = 0;

    g_assert_true(resctrl_find_free_bits(0, 16, 4, &cbm));
    g_assert_cmphex(cbm, ==, 0xf000);
    g_assert_true(resctrl_find_free_bits(0xf000, 16, 4, &cbm));
    g_assert_cmphex(cbm, ==, 0x0f00);
    g_assert_true(resctrl_find_free_bits(0x8001, 16, 14, &cbm));
    g_assert_cmphex(cbm, ==, 0x7ffe);
    g_assert_false(resctrl_find_free_bits(0x8001, 16, 15, &cbm));
    g_assert_true(resctrl_find_free_bits(0x00ff, 16, 8, &cbm));
    g_assert_cmphex(cbm, ==, 0xff00);
    g_assert_true(resctrl_find_free_bits(0xff00, 16, 8, &cbm));
    g_assert_cmphex(cbm, ==, 0x00ff);
    /* bits above cbm_len are not ways */
    g_assert_true(resctrl_find_free_bits(0x7ff, 20, 9, &cbm));
    g_assert_cmphex(cbm, ==, 0xff800);
    g_assert_true(resctrl_find_free_bits(0, 20, 20, &cbm));
    g_assert_cmphex(cbm, ==, 0xfffff);
    g_assert_true(resctrl_find_free_bits(0, 64, 64, &cbm));
    g_assert_cmphex(cbm, ==, UINT64_MAX);
    g_assert_true(resctrl_find_free_bits(UINT64_C(1) << 63, 64, 8, &cbm));
    g_assert_cmphex(cbm, ==, UINT64_C(0x7f80000000000000));
    g_assert_false(resctrl_find_free_bits(0, 16, 0, &cbm));
    g_assert_false(resctrl_find_free_bits(0, 16, 17, &cbm));
    g_assert_false(resctrl_find_free_bits(UINT64_MAX, 64, 1, &cbm));

    g_assert_cmpuint(resctrl_longest_free_run(0, 16), ==, 16);
    g_assert_cmpuint(resctrl_longest_free_run(0, 64), ==, 64);
    g_assert_cmpuint(resctrl_longest_free_run(0xf07f, 16), ==, 5);
    g_assert_cmpuint(resctrl_longest_free_run(0x8001, 16), ==, 14);
    g_assert_cmpuint(resctrl_longest_free_run(0x5555, 16), ==, 1);
    g_assert_cmpuint(resctrl_longest_free_run(UINT64_MAX, 64), ==, 0);
}

static void test_plan_region(void)
{
    char *root = tree_l2_modes();
    char *l3 = tree_l3();
    char *cdp = tree_l2_cdp();
    uint64_t cbm, size;
    Error *err = NULL;

    /* p0 and p1 are locked: no other region on either cache */
    resctrl_plan_region(root, 2, 0, 64 * KiB, &cbm, &size, &err);
    assert_error(&err, "L2 cache 0 already holds a pseudo-locked region "
                 "(bitmask f000)", "one region per cache");
    resctrl_plan_region(root, 2, 1, 64 * KiB, &cbm, &size, &err);
    assert_error(&err, "L2 cache 1 already holds", NULL);

    /* The same ways held by exclusive groups instead */
    put_file(root, "p0/mode", "exclusive\n");
    put_file(root, "p1/mode", "exclusive\n");
    put_file(root, "info/L2/bit_usage",
               "0=EEEE00000ESSSSSS;1=EE0ESSSSSSSSSSSS\n");

    /* domain 0: ways 7-11 free, 64 KiB each */
    g_assert_true(resctrl_plan_region(root, 2, 0, 128 * KiB, &cbm, &size,
                                      &err));
    g_assert_cmphex(cbm, ==, 0x0c00);
    g_assert_cmpuint(size, ==, 128 * KiB);
    g_assert_true(resctrl_plan_region(root, 2, 0, 100000, &cbm, &size,
                                      &err));
    g_assert_cmphex(cbm, ==, 0x0c00);
    g_assert_cmpuint(size, ==, 128 * KiB);
    g_assert_true(resctrl_plan_region(root, 2, 0, 320 * KiB, &cbm, &size,
                                      &err));
    g_assert_cmphex(cbm, ==, 0x0f80);
    resctrl_plan_region(root, 2, 0, 384 * KiB, &cbm, &size, &err);
    assert_error(&err, "need 6 contiguous ways of 65536 bytes, 5 are free",
                 "longest contiguous run is 5");
    resctrl_plan_region(root, 2, 1, 2 * MiB, &cbm, &size, &err);
    assert_error(&err, "L2 cache 1 is too small", "16 ways of 65536");
    /* size=15E: its way count must not wrap round to a small one */
    resctrl_plan_region(root, 2, 0, 15 * (uint64_t)EiB, &cbm, &size, &err);
    assert_error(&err, "L2 cache 0 is too small for 17293822569102704640 "
                 "bytes", "16 ways of 65536");
    resctrl_plan_region(root, 2, 0, UINT64_MAX, &cbm, &size, &err);
    assert_error(&err, "L2 cache 0 is too small", NULL);
    resctrl_plan_region(root, 2, 0, 16 * 64 * KiB + 1, &cbm, &size, &err);
    assert_error(&err, "L2 cache 0 is too small", NULL);
    resctrl_plan_region(root, 2, 7, 64 * KiB, &cbm, &size, &err);
    assert_error(&err, "unknown L2 cache id 7", NULL);
    resctrl_plan_region(root, 3, 0, 64 * KiB, &cbm, &size, &err);
    assert_error(&err, "L3", NULL);

    /* L3: shareable ways 9-10 are not free; at least two ways */
    g_assert_true(resctrl_plan_region(l3, 3, 0, 1 * MiB, &cbm, &size,
                                      &err));
    g_assert_cmphex(cbm, ==, 0x003);
    g_assert_cmpuint(size, ==, 2 * MiB);
    resctrl_plan_region(l3, 3, 0, 3 * MiB, &cbm, &size, &err);
    assert_error(&err, "3 are free", "longest contiguous run is 2");

    resctrl_plan_region(cdp, 2, 0, 64 * KiB, &cbm, &size, &err);
    assert_error(&err, "code/data prioritization is on", NULL);

    tree_free(root);
    tree_free(l3);
    tree_free(cdp);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/resctrl/find-free-bits", test_find_free_bits);
    g_test_add_func("/resctrl/plan-region", test_plan_region);

    return g_test_run();
}
