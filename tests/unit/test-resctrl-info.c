/*
 * Unit tests of resctrl discovery (util/resctrl-info.c), on fake trees
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Each test writes the files of a resctrl mount into a fresh temporary
 * directory, in the formats Linux 6.12 prints, and removes it afterwards.
 */

#include "qemu/osdep.h"

#include "qapi/error.h"
#include "qemu/resctrl-info.h"
#include "qemu/resctrl-plan.h"
#include "resctrl-test-helpers.h"

static unsigned cpu_at(GArray *cpus, guint i)
{
    return g_array_index(cpus, unsigned, i);
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

/*
 * The hints say what is wrong: a file that QEMU was not allowed to read
 * (AppArmor's denial of /proc/devices is an error on reading it, not on
 * the device), or a device that is no region.  Hints are only visible
 * when the error is reported.
 */
static void group_of_fd_report(const char *proc_devices_text)
{
    char *root = proc_devices_text
        ? tree_new("devices", proc_devices_text, NULL)
        : tree_new("sys", NULL, NULL);
    g_autofree char *devices = g_build_filename(root, "devices", NULL);
    g_autofree char *group = NULL;
    Error *err = NULL;
    int fd = open("/dev/null", O_RDWR);

    g_assert_cmpint(fd, >=, 0);
    g_assert_false(resctrl_group_of_fd_in(fd, devices, root, &group, &err));
    error_report_err(err);
    close(fd);
    tree_free(root);
}

static void test_group_of_fd_hint_unreadable(void)
{
    if (g_test_subprocess()) {
        group_of_fd_report(NULL);
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*cannot read */devices*"
                              "QEMU reads */devices to learn which "
                              "pseudo-locked region a device is*"
                              "security policy confines QEMU*");
    g_test_trap_assert_stderr_unmatched("*Give a pseudo-locked*");
}

static void test_group_of_fd_hint_not_a_region(void)
{
    if (g_test_subprocess()) {
        group_of_fd_report("Character devices:\n240 pseudo_lock\n");
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*device 1:3 is not a pseudo-locked region*"
                              "Give a pseudo-locked region's device*");
    g_test_trap_assert_stderr_unmatched("*security policy*");
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

    /* a group without schemata: removed since readdir(), no ways */
    g_assert_cmpint(unlink(bad), ==, 0);
    g_assert_true(resctrl_used_bits(root, 2, 1, &used, &error_abort));
    g_assert_cmphex(used, ==, 0xdfff);
    used = 0x1234;
    /* but one whose schemata cannot be read is an error */
    put_dir(root, "bad/schemata");
    g_assert_false(resctrl_used_bits(root, 2, 1, &used, &err));
    assert_error(&err, "cannot read", bad);

    /* malformed default group */
    put_file(root, "schemata", "    L2:0=000f;1=00ff;x=1\n");
    g_assert_false(resctrl_used_bits(root, 2, 0, &used, &err));
    assert_error(&err, "invalid domain id 'x'", "schemata");
    g_assert_cmphex(used, ==, 0x1234);

    tree_free(root);
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

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/resctrl/find-mount", test_find_mount);
    g_test_add_func("/resctrl/group-of-fd", test_group_of_fd);
    g_test_add_func("/resctrl/group-of-fd/hint-unreadable",
                    test_group_of_fd_hint_unreadable);
    g_test_add_func("/resctrl/group-of-fd/hint-not-a-region",
                    test_group_of_fd_hint_not_a_region);
    g_test_add_func("/resctrl/find-mount-none", test_find_mount_none);
    g_test_add_func("/resctrl/cache-info/l2", test_cache_info_l2);
    g_test_add_func("/resctrl/cache-info/l3", test_cache_info_l3);
    g_test_add_func("/resctrl/cache-info/cdp", test_cache_info_cdp);
    g_test_add_func("/resctrl/cache-info/malformed", test_cache_info_malformed);
    g_test_add_func("/resctrl/used-bits/modes", test_used_bits_modes);
    g_test_add_func("/resctrl/used-bits/l3", test_used_bits_l3);
    g_test_add_func("/resctrl/used-bits/cdp", test_used_bits_cdp);
    g_test_add_func("/resctrl/used-bits/errors", test_used_bits_errors);
    g_test_add_func("/resctrl/group/read", test_group_read);
    g_test_add_func("/resctrl/group/read-errors", test_group_read_errors);

    return g_test_run();
}
