/*
 * Unit tests for the resctrl helpers, on fake resctrl trees
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Each test writes the files of a resctrl mount into a fresh temporary
 * directory, in the formats Linux 6.12 prints, and removes it afterwards.
 */

#include "qemu/osdep.h"

#include <sys/file.h>

#include "qapi/error.h"
#include "qemu/resctrl.h"
#include "qemu/units.h"

/* Remove a directory tree */
static void rm_rf(const char *path)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR) &&
        !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
        GDir *dir = g_dir_open(path, 0, NULL);
        const char *name;

        g_assert_nonnull(dir);
        while ((name = g_dir_read_name(dir))) {
            g_autofree char *child = g_build_filename(path, name, NULL);

            rm_rf(child);
        }
        g_dir_close(dir);
        g_assert_cmpint(rmdir(path), ==, 0);
    } else {
        g_assert_cmpint(unlink(path), ==, 0);
    }
}

static void put_file(const char *root, const char *rel, const char *content)
{
    g_autofree char *path = g_build_filename(root, rel, NULL);
    g_autofree char *dir = g_path_get_dirname(path);
    g_autoptr(GError) gerr = NULL;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_file_set_contents(path, content, -1, &gerr);
    g_assert_no_error(gerr);
}

static void put_dir(const char *root, const char *rel)
{
    g_autofree char *path = g_build_filename(root, rel, NULL);

    g_assert_cmpint(g_mkdir_with_parents(path, 0755), ==, 0);
}

/*
 * Create a tree from NULL-terminated (relative path, content) pairs; a
 * NULL content makes a directory.
 */
static char *G_GNUC_NULL_TERMINATED tree_new(const char *rel, ...)
{
    g_autoptr(GError) gerr = NULL;
    char *root = g_dir_make_tmp("test-resctrl-XXXXXX", &gerr);
    va_list ap;

    g_assert_no_error(gerr);
    va_start(ap, rel);
    while (rel) {
        const char *content = va_arg(ap, const char *);

        if (content) {
            put_file(root, rel, content);
        } else {
            put_dir(root, rel);
        }
        rel = va_arg(ap, const char *);
    }
    va_end(ap);
    return root;
}

static void tree_free(char *root)
{
    rm_rf(root);
    g_free(root);
}

/* Check that *errp is set and mentions @s1 and @s2 (if not NULL) */
static void assert_error(Error **errp, const char *s1, const char *s2)
{
    const char *msg;

    g_assert_nonnull(*errp);
    msg = error_get_pretty(*errp);
    g_test_message("error: %s", msg);
    g_assert_nonnull(strstr(msg, s1));
    if (s2) {
        g_assert_nonnull(strstr(msg, s2));
    }
    error_free(*errp);
    *errp = NULL;
}

static uint64_t domain_value(GArray *domains, unsigned id)
{
    uint64_t v = 0;

    g_assert_true(resctrl_domain_lookup(domains, id, &v));
    return v;
}

/*
 * Tree: L2 with two domains, groups in every mode, 16 ways.
 *
 *   default  shareable         L2:0=000f;1=00ff
 *   sh       shareable         L2:0=0030;1=0f00
 *   ex       exclusive         L2:0=0040;1=1000
 *   setup    pseudo-locksetup  L2:uninitialized
 *   p0       pseudo-locked     L2:0=f000
 *   p1       pseudo-locked     L2:1=c000
 *
 * Used: domain 0 f07f, domain 1 dfff.
 */
static char *tree_l2_modes(void)
{
    return tree_new(
        "info/L2/cbm_mask", "ffff\n",
        "info/L2/num_closids", "8\n",
        "info/L2/min_cbm_bits", "1\n",
        "info/L2/shareable_bits", "0\n",
        "info/L2/bit_usage", "0=PPPP00000ESSSSSS;1=PP0ESSSSSSSSSSSS\n",
        "info/MB/num_closids", "8\n",
        "info/last_cmd_status", "ok\n",
        "mode", "shareable\n",
        "schemata", "    L2:0=000f;1=00ff\n    MB:0=100;1=100\n",
        "size", "    L2:0=262144;1=524288\n    MB:0=100;1=100\n",
        "cpus_list", "0-1,4\n",
        "tasks", "1\n",
        "mon_groups/m1/schemata", "garbage\n",
        "mon_data", NULL,
        "sh/mode", "shareable\n",
        "sh/schemata", "    L2:0=0030;1=0f00\n    MB:0=100;1=100\n",
        "sh/size", "    L2:0=524288;1=1048576\n    MB:0=100;1=100\n",
        "sh/cpus_list", "2\n",
        "ex/mode", "exclusive\n",
        "ex/schemata", "    L2:0=0040;1=1000\n    MB:0=100;1=100\n",
        "ex/size", "    L2:0=262144;1=262144\n    MB:0=100;1=100\n",
        "ex/cpus_list", "3\n",
        "setup/mode", "pseudo-locksetup\n",
        "setup/schemata", "L2:uninitialized\nMB:uninitialized\n",
        "setup/size", "    L2:0=0;1=0\n    MB:0=0;1=0\n",
        "setup/cpus_list", "\n",
        "p0/mode", "pseudo-locked\n",
        "p0/schemata", "L2:0=f000\n",
        "p0/size", "L2:0=1048576\n",
        "p0/cpus_list", "0-1\n",
        "p1/mode", "pseudo-locked\n",
        "p1/schemata", "L2:1=c000\n",
        "p1/size", "L2:1=524288\n",
        "p1/cpus_list", "2-3\n",
        NULL);
}

/* Tree: L3 with one domain, hardware-shareable ways, monitoring dirs */
static char *tree_l3(void)
{
    return tree_new(
        "info/L3/cbm_mask", "7ff\n",
        "info/L3/num_closids", "16\n",
        "info/L3/min_cbm_bits", "2\n",
        "info/L3/shareable_bits", "600\n",
        "info/L3/bit_usage", "0=HH0SSSSSS00\n",
        "info/L3_MON/num_rmids", "224\n",
        "info/MB/num_closids", "8\n",
        "mode", "shareable\n",
        "schemata", "    L3:0=0f0\n    MB:0=100\n",
        "size", "    L3:0=4194304\n    MB:0=100\n",
        "cpus_list", "0-7\n",
        "g1/mode", "exclusive\n",
        "g1/schemata", "    L3:0=00c\n    MB:0= 90\n",
        "g1/size", "    L3:0=2097152\n    MB:0= 90\n",
        "g1/cpus_list", "\n",
        NULL);
}

/*
 * Tree: L2 with CDP, 8 ways; a pseudo-locked group prints "L2", not
 * "L2CODE".  Used: domain 0 bf, domain 1 ff.
 */
static char *tree_l2_cdp(void)
{
    return tree_new(
        "info/L2CODE/cbm_mask", "ff\n",
        "info/L2CODE/num_closids", "4\n",
        "info/L2CODE/min_cbm_bits", "1\n",
        "info/L2CODE/shareable_bits", "0\n",
        "info/L2DATA/cbm_mask", "ff\n",
        "info/L2DATA/num_closids", "4\n",
        "info/L2DATA/min_cbm_bits", "1\n",
        "info/L2DATA/shareable_bits", "0\n",
        "mode", "shareable\n",
        "schemata", "L2CODE:0=0f;1=ff\nL2DATA:0=03;1=ff\n",
        "size", "L2CODE:0=2097152;1=4194304\nL2DATA:0=1048576;1=4194304\n",
        "cpus_list", "0-3\n",
        "g/mode", "shareable\n",
        "g/schemata", "L2CODE:0=10;1=ff\nL2DATA:0=20;1=ff\n",
        "g/size", "L2CODE:0=524288;1=4194304\nL2DATA:0=524288;1=4194304\n",
        "g/cpus_list", "\n",
        "plk/mode", "pseudo-locked\n",
        "plk/schemata", "L2:0=80\n",
        "plk/size", "L2CODE:0=524288\n",
        "plk/cpus_list", "0-1\n",
        NULL);
}

static const char mountinfo_sys[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "25 22 0:22 / /sys rw,nosuid,nodev shared:7 - sysfs sysfs rw\n"
    "30 22 0:30 / /resctrl rw shared:9 - tmpfs resctrl rw\n"
    "40 25 0:35 / /sys/fs/resctrl rw,relatime shared:20 - resctrl "
    "resctrl rw\n";

static const char mountinfo_escaped[] =
    "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "41 22 0:36 / /mnt/my\\040res\\011ctrl rw,relatime - resctrl resctrl "
    "rw,cdpl2\n";

static const char mountinfo_none[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "30 22 0:30 / /resctrl rw shared:9 - tmpfs resctrl rw\n"
    "31 22 0:31 / /x rw master:1 shared:9 - resctrlfs resctrl rw\n";

static void test_find_mount(void)
{
    char *root = tree_new("sys", mountinfo_sys,
                          "escaped", mountinfo_escaped,
                          "none", mountinfo_none, NULL);
    g_autofree char *sys = g_build_filename(root, "sys", NULL);
    g_autofree char *esc = g_build_filename(root, "escaped", NULL);
    g_autofree char *missing = g_build_filename(root, "missing", NULL);
    Error *err = NULL;
    char *mount = NULL;

    g_assert_true(resctrl_find_mount_in(sys, &mount, &error_abort));
    g_assert_cmpstr(mount, ==, "/sys/fs/resctrl");
    g_free(mount);

    g_assert_true(resctrl_find_mount_in(esc, &mount, &error_abort));
    g_assert_cmpstr(mount, ==, "/mnt/my res\tctrl");
    g_free(mount);

    mount = NULL;
    g_assert_false(resctrl_find_mount_in(missing, &mount, &err));
    assert_error(&err, "cannot read", missing);
    g_assert_null(mount);

    tree_free(root);
}

/* The hint is only visible when the error is reported */
static void test_find_mount_none(void)
{
    if (g_test_subprocess()) {
        char *root = tree_new("none", mountinfo_none, NULL);
        g_autofree char *none = g_build_filename(root, "none", NULL);
        char *mount = NULL;
        Error *err = NULL;

        g_assert_false(resctrl_find_mount_in(none, &mount, &err));
        g_assert_null(mount);
        g_assert_nonnull(strstr(error_get_pretty(err), "not mounted"));
        tree_free(root);
        error_report_err(err);
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*resctrl filesystem not mounted*"
                              "mount -t resctrl resctrl /sys/fs/resctrl*");
}

static void test_cpu_list(void)
{
    static const char *const bad[] = {
        "a", "1,,2", "1-", "-1", "3-1", "1 2", "0x1", "1-2-3", "70000",
    };
    g_autoptr(GArray) cpus = NULL;
    Error *err = NULL;
    size_t i;

    g_assert_true(resctrl_parse_cpu_list("0-3,6\n", &cpus, &error_abort));
    g_assert_cmpuint(cpus->len, ==, 5);
    g_assert_cmpuint(g_array_index(cpus, unsigned, 0), ==, 0);
    g_assert_cmpuint(g_array_index(cpus, unsigned, 3), ==, 3);
    g_assert_cmpuint(g_array_index(cpus, unsigned, 4), ==, 6);
    g_clear_pointer(&cpus, g_array_unref);

    g_assert_true(resctrl_parse_cpu_list("5", &cpus, &error_abort));
    g_assert_cmpuint(cpus->len, ==, 1);
    g_assert_cmpuint(g_array_index(cpus, unsigned, 0), ==, 5);
    g_clear_pointer(&cpus, g_array_unref);

    g_assert_true(resctrl_parse_cpu_list("\n", &cpus, &error_abort));
    g_assert_cmpuint(cpus->len, ==, 0);
    g_clear_pointer(&cpus, g_array_unref);

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        g_assert_false(resctrl_parse_cpu_list(bad[i], &cpus, &err));
        assert_error(&err, "CPU list", bad[i]);
        g_assert_null(cpus);
    }
}

static void test_parse_schemata(void)
{
    g_autoptr(GArray) d = NULL;

    /* indented, several resources */
    g_assert_true(resctrl_parse_schemata(
                      "    L2:0=00ff;1=ffff\n    MB:0=100;1= 90\n", "L2",
                      &d, &error_abort));
    g_assert_cmpuint(d->len, ==, 2);
    g_assert_cmpuint(g_array_index(d, ResctrlDomainValue, 0).id, ==, 0);
    g_assert_cmphex(domain_value(d, 0), ==, 0xff);
    g_assert_cmphex(domain_value(d, 1), ==, 0xffff);
    g_assert_false(resctrl_domain_lookup(d, 2, NULL));
    g_clear_pointer(&d, g_array_unref);

    /* MB is read as hex too; callers use it only for cache resources */
    g_assert_true(resctrl_parse_schemata(
                      "    L2:0=00ff;1=ffff\n    MB:0=100;1= 90\n", "MB",
                      &d, &error_abort));
    g_assert_cmphex(domain_value(d, 1), ==, 0x90);
    g_clear_pointer(&d, g_array_unref);

    /* absent resource: empty */
    g_assert_true(resctrl_parse_schemata("L2:0=ff\n", "L3", &d,
                                         &error_abort));
    g_assert_cmpuint(d->len, ==, 0);
    g_clear_pointer(&d, g_array_unref);

    /* CDP */
    g_assert_true(resctrl_parse_schemata(
                      "L3CODE:0=7f0;1=00f\nL3DATA:0=00f;1=7f0\n", "L3DATA",
                      &d, &error_abort));
    g_assert_cmpuint(d->len, ==, 2);
    g_assert_cmphex(domain_value(d, 0), ==, 0x00f);
    g_assert_cmphex(domain_value(d, 1), ==, 0x7f0);
    g_clear_pointer(&d, g_array_unref);
    g_assert_true(resctrl_parse_schemata(
                      "L3CODE:0=7f0;1=00f\nL3DATA:0=00f;1=7f0\n", "L3",
                      &d, &error_abort));
    g_assert_cmpuint(d->len, ==, 0);
    g_clear_pointer(&d, g_array_unref);

    /* pseudo-locksetup, pseudo-locked */
    g_assert_true(resctrl_parse_schemata("L2:uninitialized\n", "L2", &d,
                                         &error_abort));
    g_assert_cmpuint(d->len, ==, 0);
    g_clear_pointer(&d, g_array_unref);
    g_assert_true(resctrl_parse_schemata("L2:1=ff00\n", "L2", &d,
                                         &error_abort));
    g_assert_cmpuint(d->len, ==, 1);
    g_assert_cmphex(domain_value(d, 1), ==, 0xff00);
    g_assert_false(resctrl_domain_lookup(d, 0, NULL));
    g_clear_pointer(&d, g_array_unref);

    /* 64-bit mask, "0x" prefix */
    g_assert_true(resctrl_parse_schemata("L3:0=0xffffffffffffffff", "L3",
                                         &d, &error_abort));
    g_assert_cmphex(domain_value(d, 0), ==, UINT64_MAX);
    g_clear_pointer(&d, g_array_unref);
}

static void test_parse_schemata_malformed(void)
{
    static const struct {
        const char *text, *s1, *s2;
    } cases[] = {
        { "L2:0=zz\n", "invalid bitmask 'zz'", "L2:0=zz" },
        { "L2:0=ff;1=f g\n", "invalid bitmask 'f g'", "domain 1" },
        { "L2:0=-1\n", "invalid bitmask '-1'", NULL },
        { "L2:0=1ffffffffffffffff\n", "invalid bitmask", NULL },
        { "L2:0=\n", "invalid bitmask ''", NULL },
        { "L2:0ff\n", "missing '='", "'0ff'" },
        { "L2:0=ff;1ff\n", "missing '='", "'1ff'" },
        { "L2 0=ff\n", "has no ':'", "L2 0=ff" },
        { "MB:0=100\nbogus\n", "has no ':'", "bogus" },
        { "L 2:0=ff\n", "invalid resource name", NULL },
        { ":0=ff\n", "invalid resource name", NULL },
        { "L2:x=ff\n", "invalid domain id 'x'", NULL },
        { "L2:=ff\n", "invalid domain id ''", NULL },
        { "L2:0=ff;0=f0\n", "domain 0 listed twice", NULL },
        { "L2:0=ff\nL2:1=ff\n", "more than one L2 line", NULL },
        { "L2:0=ff;\n", "empty item", NULL },
    };
    size_t i;

    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        GArray *d = NULL;
        Error *err = NULL;

        g_assert_false(resctrl_parse_schemata(cases[i].text, "L2", &d,
                                              &err));
        g_assert_null(d);
        assert_error(&err, cases[i].s1, cases[i].s2);
    }
}

static void test_parse_size(void)
{
    g_autoptr(GArray) d = NULL;
    Error *err = NULL;

    g_assert_true(resctrl_parse_size(
                      "    L2:0=1048576;1=0\n    MB:0=100;1=100\n", "L2",
                      &d, &error_abort));
    g_assert_cmpuint(d->len, ==, 2);
    g_assert_cmpuint(domain_value(d, 0), ==, 1048576);
    g_assert_cmpuint(domain_value(d, 1), ==, 0);
    g_clear_pointer(&d, g_array_unref);

    g_assert_true(resctrl_parse_size(
                      "    L2:0=1048576;1=0\n    MB:0=100;1= 90\n", "MB",
                      &d, &error_abort));
    g_assert_cmpuint(domain_value(d, 1), ==, 90);
    g_clear_pointer(&d, g_array_unref);

    /* pseudo-locked: the locked domain only */
    g_assert_true(resctrl_parse_size("L2:0=2097152\n", "L2", &d,
                                     &error_abort));
    g_assert_cmpuint(d->len, ==, 1);
    g_assert_cmpuint(domain_value(d, 0), ==, 2097152);
    g_clear_pointer(&d, g_array_unref);

    g_assert_false(resctrl_parse_size("L2:0=ff\n", "L2", &d, &err));
    assert_error(&err, "size line", "invalid size 'ff'");
    g_assert_false(resctrl_parse_size("L2:0=1;0=2\n", "L2", &d, &err));
    assert_error(&err, "size line", "listed twice");
}

static void test_parse_bit_usage(void)
{
    static const char *const bad[] = {
        "0=SSQ", "0SSSS", "x=SS", "0=", "0=SS;0=SS", "0=s",
    };
    g_autofree char *zeros = g_strnfill(65, '0');
    g_autofree char *too_long = g_strconcat("0=", zeros, NULL);
    g_autofree char *longest = g_strconcat("0=P", zeros + 2, NULL);
    uint64_t used, locked;
    Error *err = NULL;
    size_t i;

    g_assert_true(resctrl_parse_bit_usage(
                      "0=SSSSSSSSPPPPPPPP;1=SSSSSSSSSSSSSSSS\n", 0,
                      &used, &locked, &error_abort));
    g_assert_cmphex(used, ==, 0xffff);
    g_assert_cmphex(locked, ==, 0x00ff);
    g_assert_true(resctrl_parse_bit_usage(
                      "0=SSSSSSSSPPPPPPPP;1=SSSSSSSSSSSSSSSS\n", 1,
                      &used, &locked, &error_abort));
    g_assert_cmphex(used, ==, 0xffff);
    g_assert_cmphex(locked, ==, 0);
    g_assert_true(resctrl_parse_bit_usage(
                      "0=HX00EE00SSSS0000;1=0000000000000000\n", 0,
                      &used, NULL, &error_abort));
    g_assert_cmphex(used, ==, 0xccf0);
    g_assert_true(resctrl_parse_bit_usage(
                      "0=HX00EE00SSSS0000;1=0000000000000000\n", 1,
                      &used, NULL, &error_abort));
    g_assert_cmphex(used, ==, 0);

    g_assert_false(resctrl_parse_bit_usage("0=SSSS", 5, &used, NULL, &err));
    assert_error(&err, "does not list domain 5", NULL);
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        g_assert_false(resctrl_parse_bit_usage(bad[i], 0, &used, NULL,
                                               &err));
        assert_error(&err, "bit_usage", NULL);
    }
    g_assert_false(resctrl_parse_bit_usage(too_long, 0, &used, NULL, &err));
    assert_error(&err, "invalid usage", NULL);
    /* 64 ways is the most a bitmask holds */
    g_assert_true(resctrl_parse_bit_usage(longest, 0, &used, NULL,
                                          &error_abort));
    g_assert_cmphex(used, ==, UINT64_C(1) << 63);
}

static void test_cache_info_l2(void)
{
    char *root = tree_l2_modes();
    ResctrlCacheInfo info;
    Error *err = NULL;

    g_assert_true(resctrl_read_cache_info(root, 2, &info, &error_abort));
    g_assert_cmpuint(info.level, ==, 2);
    g_assert_cmpuint(info.cbm_len, ==, 16);
    g_assert_cmphex(info.cbm_mask, ==, 0xffff);
    g_assert_cmpuint(info.num_closids, ==, 8);
    g_assert_cmpuint(info.min_cbm_bits, ==, 1);
    g_assert_cmphex(info.shareable_bits, ==, 0);
    g_assert_false(info.cdp);

    g_assert_false(resctrl_read_cache_info(root, 3, &info, &err));
    assert_error(&err, "no L3 cache allocation", "info directories: L2, MB");

    tree_free(root);
}

static void test_cache_info_l3(void)
{
    char *root = tree_l3();
    ResctrlCacheInfo info;
    Error *err = NULL;

    g_assert_true(resctrl_read_cache_info(root, 3, &info, &error_abort));
    g_assert_cmpuint(info.level, ==, 3);
    g_assert_cmpuint(info.cbm_len, ==, 11);
    g_assert_cmphex(info.cbm_mask, ==, 0x7ff);
    g_assert_cmpuint(info.num_closids, ==, 16);
    g_assert_cmpuint(info.min_cbm_bits, ==, 2);
    g_assert_cmphex(info.shareable_bits, ==, 0x600);
    g_assert_false(info.cdp);

    g_assert_false(resctrl_read_cache_info(root, 2, &info, &err));
    assert_error(&err, "no L2 cache allocation",
                 "info directories: L3, L3_MON, MB");

    tree_free(root);
}

static void test_cache_info_cdp(void)
{
    char *root = tree_l2_cdp();
    ResctrlCacheInfo info;

    g_assert_true(resctrl_read_cache_info(root, 2, &info, &error_abort));
    g_assert_true(info.cdp);
    g_assert_cmpuint(info.cbm_len, ==, 8);
    g_assert_cmphex(info.cbm_mask, ==, 0xff);
    g_assert_cmpuint(info.num_closids, ==, 4);
    g_assert_cmpuint(info.min_cbm_bits, ==, 1);
    tree_free(root);

    /* CODE without DATA is not a usable CDP layout */
    root = tree_new("info/L2CODE/cbm_mask", "ff\n", NULL);
    {
        Error *err = NULL;

        g_assert_false(resctrl_read_cache_info(root, 2, &info, &err));
        assert_error(&err, "no L2 cache allocation",
                     "info directories: L2CODE)");
    }
    tree_free(root);
}

static void test_cache_info_malformed(void)
{
    static const struct {
        const char *file, *content, *s1;
    } cases[] = {
        { "cbm_mask", "zz\n", "unexpected content 'zz'" },
        { "cbm_mask", "\n", "unexpected content ''" },
        { "cbm_mask", "f0f\n", "not a contiguous mask" },
        { "cbm_mask", "0\n", "not a contiguous mask" },
        { "num_closids", "8x\n", "unexpected content '8x'" },
        { "num_closids", "0\n", "unexpected content '0'" },
        { "min_cbm_bits", "-1\n", "unexpected content '-1'" },
        { "min_cbm_bits", "17\n", "more than the 16 bits" },
        { "shareable_bits", "10000\n", "bits outside cbm_mask" },
        { "shareable_bits", NULL, "cannot read" },
    };
    size_t i;

    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        char *root = tree_l2_modes();
        g_autofree char *path = g_build_filename(root, "info", "L2",
                                                 cases[i].file, NULL);
        ResctrlCacheInfo info;
        Error *err = NULL;

        if (cases[i].content) {
            put_file(root, path + strlen(root) + 1, cases[i].content);
        } else {
            g_assert_cmpint(unlink(path), ==, 0);
        }
        g_assert_false(resctrl_read_cache_info(root, 2, &info, &err));
        assert_error(&err, cases[i].s1, path);
        tree_free(root);
    }
}

static void test_used_bits_modes(void)
{
    char *root = tree_l2_modes();
    g_autofree char *bit_usage_path = g_build_filename(root, "info", "L2",
                                                       "bit_usage", NULL);
    g_autofree char *bit_usage = NULL;
    uint64_t used, kernel_used, locked, cbm;

    g_assert_true(g_file_get_contents(bit_usage_path, &bit_usage, NULL,
                                      NULL));

    g_assert_true(resctrl_used_bits(root, 2, 0, &used, &error_abort));
    g_assert_cmphex(used, ==, 0xf07f);
    /* same as the kernel's view */
    g_assert_true(resctrl_parse_bit_usage(bit_usage, 0, &kernel_used,
                                          &locked, &error_abort));
    g_assert_cmphex(used, ==, kernel_used);
    g_assert_cmphex(locked, ==, 0xf000);

    g_assert_cmpuint(resctrl_longest_free_run(used, 16), ==, 5);
    g_assert_true(resctrl_find_free_bits(used, 16, 4, &cbm));
    g_assert_cmphex(cbm, ==, 0x0f00);
    g_assert_true(resctrl_find_free_bits(used, 16, 5, &cbm));
    g_assert_cmphex(cbm, ==, 0x0f80);
    g_assert_false(resctrl_find_free_bits(used, 16, 6, &cbm));

    g_assert_true(resctrl_used_bits(root, 2, 1, &used, &error_abort));
    g_assert_cmphex(used, ==, 0xdfff);
    g_assert_true(resctrl_parse_bit_usage(bit_usage, 1, &kernel_used,
                                          &locked, &error_abort));
    g_assert_cmphex(used, ==, kernel_used);
    g_assert_cmphex(locked, ==, 0xc000);
    g_assert_cmpuint(resctrl_longest_free_run(used, 16), ==, 1);
    g_assert_true(resctrl_find_free_bits(used, 16, 1, &cbm));
    g_assert_cmphex(cbm, ==, 0x2000);

    tree_free(root);
}

static void test_used_bits_l3(void)
{
    char *root = tree_l3();
    ResctrlCacheInfo info;
    uint64_t used, cbm;

    g_assert_true(resctrl_read_cache_info(root, 3, &info, &error_abort));
    g_assert_true(resctrl_used_bits(root, 3, 0, &used, &error_abort));
    g_assert_cmphex(used, ==, 0x0fc);
    g_assert_true(resctrl_find_free_bits(used, info.cbm_len, 3, &cbm));
    g_assert_cmphex(cbm, ==, 0x700);

    /* keep off the hardware-shareable ways */
    used |= info.shareable_bits;
    g_assert_cmpuint(resctrl_longest_free_run(used, info.cbm_len), ==, 2);
    g_assert_true(resctrl_find_free_bits(used, info.cbm_len, 2, &cbm));
    g_assert_cmphex(cbm, ==, 0x003);
    g_assert_true(resctrl_find_free_bits(used, info.cbm_len, 1, &cbm));
    g_assert_cmphex(cbm, ==, 0x100);

    tree_free(root);
}

static void test_used_bits_cdp(void)
{
    char *root = tree_l2_cdp();
    uint64_t used, cbm;

    g_assert_true(resctrl_used_bits(root, 2, 0, &used, &error_abort));
    g_assert_cmphex(used, ==, 0xbf);
    g_assert_true(resctrl_find_free_bits(used, 8, 1, &cbm));
    g_assert_cmphex(cbm, ==, 0x40);
    g_assert_false(resctrl_find_free_bits(used, 8, 2, &cbm));

    g_assert_true(resctrl_used_bits(root, 2, 1, &used, &error_abort));
    g_assert_cmphex(used, ==, 0xff);
    g_assert_cmpuint(resctrl_longest_free_run(used, 8), ==, 0);

    tree_free(root);
}

static void test_used_bits_errors(void)
{
    char *root = tree_l2_modes();
    g_autofree char *bad = NULL;
    uint64_t used = 0x1234;
    Error *err = NULL;

    g_assert_false(resctrl_used_bits(root, 2, 7, &used, &err));
    assert_error(&err, "unknown L2 cache id 7", NULL);
    g_assert_false(resctrl_used_bits(root, 3, 0, &used, &err));
    assert_error(&err, "no L3 line", "schemata");
    g_assert_cmphex(used, ==, 0x1234);

    /* a group with a malformed schemata names its file */
    put_file(root, "bad/schemata", "    L2:0=00zz;1=ffff\n");
    bad = g_build_filename(root, "bad", "schemata", NULL);
    g_assert_false(resctrl_used_bits(root, 2, 1, &used, &err));
    assert_error(&err, bad, "invalid bitmask '00zz'");
    put_file(root, "bad/schemata", "    L2:0=00ff;1ffff\n");
    g_assert_false(resctrl_used_bits(root, 2, 1, &used, &err));
    assert_error(&err, bad, "missing '='");

    /* a group without schemata */
    g_assert_cmpint(unlink(bad), ==, 0);
    g_assert_false(resctrl_used_bits(root, 2, 1, &used, &err));
    assert_error(&err, "cannot read", bad);

    /* malformed default group */
    put_file(root, "schemata", "    L2:0=000f;1=00ff;x=1\n");
    g_assert_false(resctrl_used_bits(root, 2, 0, &used, &err));
    assert_error(&err, "invalid domain id 'x'", "schemata");
    g_assert_cmphex(used, ==, 0x1234);

    tree_free(root);
}

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

static unsigned cpu_at(GArray *cpus, guint i)
{
    return g_array_index(cpus, unsigned, i);
}

static void test_group_read(void)
{
    char *root = tree_l2_modes();
    g_auto(ResctrlGroup) g = { 0 };
    g_autoptr(GArray) d = NULL;

    g_assert_true(resctrl_group_read(root, "p0", &g, &error_abort));
    g_assert_cmpstr(g.name, ==, "p0");
    g_assert_cmpint(g.mode, ==, RESCTRL_MODE_PSEUDO_LOCKED);
    g_assert_cmpstr(resctrl_mode_name(g.mode), ==, "pseudo-locked");
    g_assert_true(resctrl_parse_schemata(g.schemata, "L2", &d,
                                         &error_abort));
    g_assert_cmpuint(d->len, ==, 1);
    g_assert_cmphex(domain_value(d, 0), ==, 0xf000);
    g_clear_pointer(&d, g_array_unref);
    g_assert_true(resctrl_parse_size(g.size, "L2", &d, &error_abort));
    g_assert_cmpuint(domain_value(d, 0), ==, 1048576);
    g_clear_pointer(&d, g_array_unref);
    g_assert_cmpuint(g.cpus->len, ==, 2);
    g_assert_cmpuint(cpu_at(g.cpus, 0), ==, 0);
    g_assert_cmpuint(cpu_at(g.cpus, 1), ==, 1);
    resctrl_group_clear(&g);
    g_assert_null(g.name);
    g_assert_null(g.cpus);

    g_assert_true(resctrl_group_read(root, NULL, &g, &error_abort));
    g_assert_cmpstr(g.name, ==, "");
    g_assert_cmpint(g.mode, ==, RESCTRL_MODE_SHAREABLE);
    g_assert_true(resctrl_parse_size(g.size, "MB", &d, &error_abort));
    g_assert_cmpuint(domain_value(d, 1), ==, 100);
    g_clear_pointer(&d, g_array_unref);
    g_assert_cmpuint(g.cpus->len, ==, 3);
    g_assert_cmpuint(cpu_at(g.cpus, 2), ==, 4);
    resctrl_group_clear(&g);

    g_assert_true(resctrl_group_read(root, "ex", &g, &error_abort));
    g_assert_cmpint(g.mode, ==, RESCTRL_MODE_EXCLUSIVE);
    g_assert_true(resctrl_parse_schemata(g.schemata, "L2", &d,
                                         &error_abort));
    g_assert_cmphex(domain_value(d, 1), ==, 0x1000);
    g_clear_pointer(&d, g_array_unref);
    resctrl_group_clear(&g);

    g_assert_true(resctrl_group_read(root, "setup", &g, &error_abort));
    g_assert_cmpint(g.mode, ==, RESCTRL_MODE_PSEUDO_LOCKSETUP);
    g_assert_cmpstr(resctrl_mode_name(g.mode), ==, "pseudo-locksetup");
    g_assert_true(resctrl_parse_schemata(g.schemata, "L2", &d,
                                         &error_abort));
    g_assert_cmpuint(d->len, ==, 0);
    g_clear_pointer(&d, g_array_unref);
    g_assert_cmpuint(g.cpus->len, ==, 0);
    resctrl_group_clear(&g);

    /* cpus_list of a pseudo-locked group is mode 0 for non-root */
    if (geteuid() != 0) {
        g_autofree char *path = g_build_filename(root, "p1", "cpus_list",
                                                 NULL);

        g_assert_cmpint(chmod(path, 0), ==, 0);
        g_assert_true(resctrl_group_read(root, "p1", &g, &error_abort));
        g_assert_cmpint(g.mode, ==, RESCTRL_MODE_PSEUDO_LOCKED);
        g_assert_null(g.cpus);
        resctrl_group_clear(&g);
    } else {
        g_test_message("running as root: unreadable cpus_list not tested");
    }

    tree_free(root);
}

static void test_group_read_errors(void)
{
    static const char *const bad_names[] = {
        "a/b", ".", "..", "info", "mon_groups", "mon_data", "/p0",
    };
    char *root = tree_l2_modes();
    g_autofree char *path = NULL;
    g_auto(ResctrlGroup) g = { 0 };
    ResctrlMode mode;
    Error *err = NULL;
    size_t i;

    for (i = 0; i < ARRAY_SIZE(bad_names); i++) {
        g_assert_false(resctrl_group_read(root, bad_names[i], &g, &err));
        assert_error(&err, "invalid resctrl group name", bad_names[i]);
        g_assert_null(g.name);
    }

    g_assert_false(resctrl_group_read(root, "nosuch", &g, &err));
    assert_error(&err, "cannot read", "nosuch");

    put_file(root, "sh/mode", "bogus\n");
    g_assert_false(resctrl_group_read(root, "sh", &g, &err));
    assert_error(&err, "unexpected content 'bogus'", "sh/mode");
    g_assert_null(g.name);

    /* The mode alone, as query-pseudolock reads it */
    g_assert_true(resctrl_group_mode(root, "p0", &mode, &error_abort));
    g_assert_cmpint(mode, ==, RESCTRL_MODE_PSEUDO_LOCKED);
    g_assert_false(resctrl_group_mode(root, "sh", &mode, &err));
    assert_error(&err, "unexpected content 'bogus'", "sh/mode");
    g_assert_false(resctrl_group_mode(root, "nosuch", &mode, &err));
    assert_error(&err, "cannot read", "nosuch");
    g_assert_false(resctrl_group_mode(root, "a/b", &mode, &err));
    assert_error(&err, "invalid resctrl group name", "a/b");

    put_file(root, "ex/cpus_list", "3-1\n");
    g_assert_false(resctrl_group_read(root, "ex", &g, &err));
    assert_error(&err, "ex/cpus_list", "invalid CPU range '3-1'");
    g_assert_null(g.schemata);

    path = g_build_filename(root, "p0", "size", NULL);
    g_assert_cmpint(unlink(path), ==, 0);
    g_assert_false(resctrl_group_read(root, "p0", &g, &err));
    assert_error(&err, "cannot read", path);

    tree_free(root);
}

/*
 * resctrl_group_of_fd_in() with /dev/null (char 1:3) posing as a region:
 * the driver's major comes from a fake /proc/devices, the group from a
 * fake /sys/dev/char link.
 */
static void test_group_of_fd(void)
{
    char *root = tree_new(
        "devices-none", "Character devices:\n  1 mem\n  4 tty\n"
                        "Block devices:\n  1 pseudo_lock\n",
        "devices-other", "Character devices:\n  1 mem\n240 pseudo_lock\n",
        "devices-mem", "Character devices:\n  1 pseudo_lock\n",
        "sys", NULL,
        NULL);
    g_autofree char *none = g_build_filename(root, "devices-none", NULL);
    g_autofree char *other = g_build_filename(root, "devices-other", NULL);
    g_autofree char *mem = g_build_filename(root, "devices-mem", NULL);
    g_autofree char *sys = g_build_filename(root, "sys", NULL);
    g_autofree char *link = g_build_filename(sys, "1:3", NULL);
    g_autofree char *group = NULL;
    Error *err = NULL;
    int fd = open("/dev/null", O_RDWR);
    int tmp_fd;

    g_assert_cmpint(fd, >=, 0);
    g_assert_false(resctrl_group_of_fd_in(fd, none, sys, &group, &err));
    assert_error(&err, "no pseudo_lock driver", NULL);
    g_assert_false(resctrl_group_of_fd_in(fd, other, sys, &group, &err));
    assert_error(&err, "device 1:3 is not a pseudo-locked region", "240:*");
    g_assert_false(resctrl_group_of_fd_in(fd, mem, sys, &group, &err));
    assert_error(&err, "cannot read", "1:3");

    g_assert_cmpint(symlink("../../devices/virtual/pseudo_lock/rt-vm0",
                            link), ==, 0);
    g_assert_true(resctrl_group_of_fd_in(fd, mem, sys, &group, &err));
    g_assert_null(err);
    g_assert_cmpstr(group, ==, "rt-vm0");
    close(fd);

    /* Not a character device at all */
    tmp_fd = open(mem, O_RDONLY);
    g_assert_cmpint(tmp_fd, >=, 0);
    g_assert_false(resctrl_group_of_fd_in(tmp_fd, mem, sys, &group, &err));
    assert_error(&err, "not a character device", NULL);
    close(tmp_fd);
    tree_free(root);
}

static void test_lock(void)
{
    char *root = tree_new("schemata", "L2:0=ff\n", NULL);
    g_autofree char *file = g_build_filename(root, "schemata", NULL);
    g_autofree char *missing = g_build_filename(root, "missing", NULL);
    Error *err = NULL;
    int fd = -1, other;

    g_assert_true(resctrl_lock(root, &fd, &error_abort));
    g_assert_cmpint(fd, >=, 0);

    /* another open file description is excluded, as libvirt would be */
    other = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_assert_cmpint(other, >=, 0);
    g_assert_cmpint(flock(other, LOCK_EX | LOCK_NB), ==, -1);
    g_assert_cmpint(errno, ==, EWOULDBLOCK);
    g_assert_cmpint(flock(other, LOCK_SH | LOCK_NB), ==, -1);

    resctrl_unlock(fd);
    g_assert_cmpint(flock(other, LOCK_EX | LOCK_NB), ==, 0);
    close(other);
    resctrl_unlock(-1);

    g_assert_false(resctrl_lock(missing, &fd, &err));
    assert_error(&err, "cannot open", missing);
    g_assert_false(resctrl_lock(file, &fd, &err));
    assert_error(&err, "cannot open", "Not a directory");

    tree_free(root);
}

static void test_stat_start_time(void)
{
    uint64_t t = 0;

    g_assert_true(resctrl_parse_stat_start_time(
        "4242 (qemu-system-x86) S 1 4242 4242 0 -1 4194560 9000 0 0 0 "
        "12 34 0 0 20 0 7 0 987654 3000000000 5000 18446744073709551615\n",
        &t));
    g_assert_cmpuint(t, ==, 987654);
    /* a process name may hold spaces and parentheses */
    g_assert_true(resctrl_parse_stat_start_time(
        "7 (a) b (c) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 1 1 1\n",
        &t));
    g_assert_cmpuint(t, ==, 55);
    g_assert_false(resctrl_parse_stat_start_time("7 (a S 1 2 3\n", &t));
    g_assert_false(resctrl_parse_stat_start_time("7 (a) S 1 2 3\n", &t));
    g_assert_false(resctrl_parse_stat_start_time(
        "7 (a) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 x5 1\n", &t));
}

static void test_owned_group_name(void)
{
    ResctrlOwner o = { .pidns = 4026531836u, .pid = 1234,
                       .start_time = 98765 };
    ResctrlOwner back;
    g_autofree char *name = resctrl_owned_group_name(&o, "pl-0.a_b");

    g_assert_cmpstr(name, ==, "qemu-pl-4026531836-1234-98765-pl-0.a_b");
    g_assert_true(resctrl_parse_owned_group_name(name, &back));
    g_assert_cmpuint(back.pidns, ==, o.pidns);
    g_assert_cmpuint(back.pid, ==, o.pid);
    g_assert_cmpuint(back.start_time, ==, o.start_time);

    g_assert_false(resctrl_parse_owned_group_name("p0", &back));
    g_assert_false(resctrl_parse_owned_group_name("qemu-pl-1-2-3-", &back));
    g_assert_false(resctrl_parse_owned_group_name("qemu-pl-1-2-3", &back));
    g_assert_false(resctrl_parse_owned_group_name("qemu-pl-1-x-3-a", &back));
    g_assert_false(resctrl_parse_owned_group_name("qemu-pl--2-3-a", &back));
}

/* A fake /proc entry: PID/stat with @start_time, PID/ns/pid */
static void put_proc(const char *root, unsigned pid, uint64_t start_time,
                     const char *ns)
{
    g_autofree char *stat = g_strdup_printf("proc/%u/stat", pid);
    g_autofree char *ns_rel = g_strdup_printf("proc/%u/ns/pid", pid);
    g_autofree char *line = g_strdup_printf(
        "%u (qemu (x)) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %" PRIu64
        " 1 1\n", pid, start_time);

    put_file(root, stat, line);
    put_file(root, ns_rel, ns);
}

static uint64_t inode_of(const char *root, const char *rel)
{
    g_autofree char *path = g_build_filename(root, rel, NULL);
    struct stat st;

    g_assert_cmpint(stat(path, &st), ==, 0);
    return st.st_ino;
}

static void test_reclaim_dead_groups(void)
{
    char *root = tree_new("mnt/p0", NULL, "mnt/info", NULL, NULL);
    g_autofree char *mnt = g_build_filename(root, "mnt", NULL);
    g_autofree char *proc = g_build_filename(root, "proc", NULL);
    g_autoptr(GPtrArray) reclaimed = g_ptr_array_new_with_free_func(g_free);
    ResctrlOwner self, other_ns;
    const char *live, *reused, *gone, *foreign;
    Error *err = NULL;

    /* this QEMU (pid 100) and a process of another PID namespace */
    put_proc(root, 100, 5555, "ns-a");
    put_proc(root, 300, 1, "ns-b");
    self = (ResctrlOwner) { inode_of(root, "proc/100/ns/pid"), 100, 5555 };
    other_ns = (ResctrlOwner) { inode_of(root, "proc/300/ns/pid"), 300, 1 };
    g_assert_cmpuint(self.pidns, !=, other_ns.pidns);

    live = resctrl_owned_group_name(&self, "live");
    reused = resctrl_owned_group_name(
        &(ResctrlOwner) { self.pidns, 100, 4444 }, "reused-pid");
    gone = resctrl_owned_group_name(
        &(ResctrlOwner) { self.pidns, 200, 1 }, "gone");
    /* pid 400 means nothing in our namespace: never reclaimed */
    foreign = resctrl_owned_group_name(
        &(ResctrlOwner) { other_ns.pidns, 400, 1 }, "foreign");
    put_dir(mnt, live);
    put_dir(mnt, reused);
    put_dir(mnt, gone);
    put_dir(mnt, foreign);

    g_assert_true(resctrl_reclaim_dead_groups_in(mnt, proc, &self,
                                                 reclaimed, &err));
    g_assert_null(err);
    g_assert_cmpuint(reclaimed->len, ==, 2);
    g_assert_true(g_ptr_array_find_with_equal_func(reclaimed, reused,
                                                   g_str_equal, NULL));
    g_assert_true(g_ptr_array_find_with_equal_func(reclaimed, gone,
                                                   g_str_equal, NULL));
    for (const char *const *n = (const char *const[]) {
             live, foreign, "p0", "info", NULL }; *n; n++) {
        g_autofree char *path = g_build_filename(mnt, *n, NULL);

        g_assert_true(g_file_test(path, G_FILE_TEST_IS_DIR));
    }
    g_free((char *)live);
    g_free((char *)reused);
    g_free((char *)gone);
    g_free((char *)foreign);
    tree_free(root);
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

    g_test_add_func("/resctrl/find-mount", test_find_mount);
    g_test_add_func("/resctrl/group-of-fd", test_group_of_fd);
    g_test_add_func("/resctrl/find-mount-none", test_find_mount_none);
    g_test_add_func("/resctrl/parse/cpu-list", test_cpu_list);
    g_test_add_func("/resctrl/parse/schemata", test_parse_schemata);
    g_test_add_func("/resctrl/parse/schemata-malformed",
                    test_parse_schemata_malformed);
    g_test_add_func("/resctrl/parse/size", test_parse_size);
    g_test_add_func("/resctrl/parse/bit-usage", test_parse_bit_usage);
    g_test_add_func("/resctrl/cache-info/l2", test_cache_info_l2);
    g_test_add_func("/resctrl/cache-info/l3", test_cache_info_l3);
    g_test_add_func("/resctrl/cache-info/cdp", test_cache_info_cdp);
    g_test_add_func("/resctrl/cache-info/malformed",
                    test_cache_info_malformed);
    g_test_add_func("/resctrl/used-bits/modes", test_used_bits_modes);
    g_test_add_func("/resctrl/used-bits/l3", test_used_bits_l3);
    g_test_add_func("/resctrl/used-bits/cdp", test_used_bits_cdp);
    g_test_add_func("/resctrl/used-bits/errors", test_used_bits_errors);
    g_test_add_func("/resctrl/find-free-bits", test_find_free_bits);
    g_test_add_func("/resctrl/group/read", test_group_read);
    g_test_add_func("/resctrl/group/read-errors", test_group_read_errors);
    g_test_add_func("/resctrl/lock", test_lock);
    g_test_add_func("/resctrl/owner/stat-start-time", test_stat_start_time);
    g_test_add_func("/resctrl/owner/group-name", test_owned_group_name);
    g_test_add_func("/resctrl/owner/reclaim", test_reclaim_dead_groups);
    g_test_add_func("/resctrl/plan-region", test_plan_region);

    return g_test_run();
}
