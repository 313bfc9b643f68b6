/*
 * Unit tests of the pure resctrl parsers (util/resctrl-parse.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Text in, values out: no files are involved; each case is text that a
 * Linux 6.12 kernel prints, or a malformed variant of it.
 */

#include "qemu/osdep.h"

#include "qapi/error.h"
#include "qemu/resctrl-parse.h"
#include "resctrl-test-helpers.h"

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

static void test_stat_state(void)
{
    char state = 0;

    g_assert_true(resctrl_parse_stat_state(
        "4242 (qemu-system-x86) Z 1 4242 4242 0 -1 4194560 9000 0 0 0\n",
        &state));
    g_assert_cmpint(state, ==, 'Z');
    /* the name may look like a state of its own */
    g_assert_true(resctrl_parse_stat_state("7 (a) S (b) R 1 7\n", &state));
    g_assert_cmpint(state, ==, 'R');
    g_assert_false(resctrl_parse_stat_state("7 (a S 1 2 3\n", &state));
    g_assert_false(resctrl_parse_stat_state("7 (a) 1 2 3\n", &state));
    g_assert_false(resctrl_parse_stat_state("7 (a) SR 1 2 3\n", &state));
}

static void test_lock_holder(void)
{
    /* resctrl's root (0:37, inode 1) locked by 812, with a waiter */
    const char *locks =
        "1: POSIX  ADVISORY  WRITE 900 00:37:1 0 EOF\n"
        "2: FLOCK  ADVISORY  READ 901 00:16:2 0 EOF\n"
        "3: FLOCK  ADVISORY  WRITE 812 00:25:1 0 EOF\n"
        "3: -> FLOCK  ADVISORY  WRITE 4242 00:25:1 0 EOF\n"
        "4: FLOCK  ADVISORY  WRITE 0 fe:01:10952761 0 EOF\n";
    int64_t pid = -1;

    g_assert_true(resctrl_parse_lock_holder(locks, 0, 0x25, 1, &pid));
    g_assert_cmpint(pid, ==, 812);
    /* device numbers are hex, inodes decimal */
    g_assert_true(resctrl_parse_lock_holder(locks, 0xfe, 1, 10952761, &pid));
    g_assert_cmpint(pid, ==, 0);
    /* fcntl() locks and shared flock()s do not exclude LOCK_EX here */
    g_assert_false(resctrl_parse_lock_holder(locks, 0, 0x37, 1, &pid));
    g_assert_false(resctrl_parse_lock_holder(locks, 0, 0x16, 2, &pid));
    g_assert_false(resctrl_parse_lock_holder(locks, 0, 0x25, 2, &pid));
    g_assert_false(resctrl_parse_lock_holder("", 0, 0x25, 1, &pid));
    g_assert_false(resctrl_parse_lock_holder(
        "3: FLOCK  ADVISORY  WRITE 812 00:25\n", 0, 0x25, 1, &pid));
    g_assert_false(resctrl_parse_lock_holder(
        "3: FLOCK  ADVISORY  WRITE x 00:25:1 0 EOF\n", 0, 0x25, 1, &pid));
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

static void test_parse_mountinfo(void)
{
    char *mount = NULL;

    g_assert_true(resctrl_parse_mountinfo(
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "40 25 0:35 / /sys/fs/resctrl rw,relatime shared:20 - resctrl "
        "resctrl rw\n", &mount));
    g_assert_cmpstr(mount, ==, "/sys/fs/resctrl");
    g_clear_pointer(&mount, g_free);

    /* octal escapes undone; no optional fields */
    g_assert_true(resctrl_parse_mountinfo(
        "41 22 0:36 / /mnt/a\\040b rw - resctrl resctrl rw,cdpl2\n",
        &mount));
    g_assert_cmpstr(mount, ==, "/mnt/a b");
    g_clear_pointer(&mount, g_free);

    /* a source named resctrl, a type that only begins so, a short line */
    g_assert_false(resctrl_parse_mountinfo(
        "30 22 0:30 / /resctrl rw shared:9 - tmpfs resctrl rw\n"
        "31 22 0:31 / /x rw - resctrlfs resctrl rw\n"
        "32 22 0:32 / /y rw -\n"
        "\n", &mount));
    g_assert_null(mount);
    g_assert_false(resctrl_parse_mountinfo("", &mount));
    g_assert_null(mount);
}

static void test_parse_mode(void)
{
    ResctrlMode mode = RESCTRL_MODE__MAX;
    int m;

    for (m = 0; m < RESCTRL_MODE__MAX; m++) {
        g_autofree char *text = g_strdup_printf("%s\n",
                                                resctrl_mode_name(m));

        g_assert_true(resctrl_parse_mode(text, &mode));
        g_assert_cmpint(mode, ==, m);
    }
    mode = RESCTRL_MODE__MAX;
    g_assert_false(resctrl_parse_mode("pseudo-lock\n", &mode));
    g_assert_false(resctrl_parse_mode("", &mode));
    g_assert_false(resctrl_parse_mode("Shareable", &mode));
    g_assert_cmpint(mode, ==, RESCTRL_MODE__MAX);
}

static void test_parse_devices_major(void)
{
    unsigned major = 0;

    g_assert_true(resctrl_parse_devices_major(
        "Character devices:\n  1 mem\n240 pseudo_lock\n\n"
        "Block devices:\n  8 sd\n", "pseudo_lock", &major));
    g_assert_cmpuint(major, ==, 240);
    /* a block driver of the name does not count */
    major = 0;
    g_assert_false(resctrl_parse_devices_major(
        "Character devices:\n  1 mem\nBlock devices:\n  9 pseudo_lock\n",
        "pseudo_lock", &major));
    g_assert_false(resctrl_parse_devices_major(
        "Character devices:\n  1 pseudo_lock_x\n", "pseudo_lock", &major));
    g_assert_cmpuint(major, ==, 0);
}

static void test_schemata_level_cbm(void)
{
    g_autoptr(GArray) doms = NULL;
    bool has_level, has_domain;
    uint64_t cbm;
    Error *err = NULL;

    /* CDP: CODE and DATA masks are both held */
    g_assert_true(resctrl_schemata_level_cbm(
                      "L2CODE:0=0f;1=ff\nL2DATA:0=30;1=ff\n", 2, 0, &cbm,
                      &has_level, &has_domain, &doms, &error_abort));
    g_assert_cmphex(cbm, ==, 0x3f);
    g_assert_true(has_level);
    g_assert_true(has_domain);
    g_assert_cmpuint(doms->len, ==, 2);
    g_clear_pointer(&doms, g_array_unref);

    /* a pseudo-locked group lists only its domain */
    g_assert_true(resctrl_schemata_level_cbm("L2:1=c000\n", 2, 0, &cbm,
                                             &has_level, &has_domain, NULL,
                                             &error_abort));
    g_assert_cmphex(cbm, ==, 0);
    g_assert_true(has_level);
    g_assert_false(has_domain);

    /* pseudo-locksetup: nothing held yet; another level: no line */
    g_assert_true(resctrl_schemata_level_cbm("L2:uninitialized\n", 2, 0,
                                             &cbm, &has_level, &has_domain,
                                             NULL, &error_abort));
    g_assert_false(has_level);
    g_assert_true(resctrl_schemata_level_cbm("L3:0=ff\n", 2, 0, &cbm,
                                             &has_level, &has_domain, NULL,
                                             &error_abort));
    g_assert_false(has_level);
    g_assert_cmphex(cbm, ==, 0);

    g_assert_false(resctrl_schemata_level_cbm("L2DATA:0=zz\n", 2, 0, &cbm,
                                              &has_level, &has_domain, NULL,
                                              &err));
    assert_error(&err, "invalid bitmask 'zz'", NULL);
}

/* Which kernels' regions KVM can map, from the release alone */
static void test_release_kvm_maps_regions(void)
{
    /* Debian's stock kernels: compound pages, KVM before 6.13 */
    g_assert_false(resctrl_release_kvm_maps_regions("6.12.118+deb12-amd64"));
    g_assert_false(resctrl_release_kvm_maps_regions("6.1.0-41-amd64"));
    g_assert_false(resctrl_release_kvm_maps_regions("5.10.0-35-rt-amd64"));
    g_assert_false(resctrl_release_kvm_maps_regions("6.12.107"));
    /* the host patches' mark, also after other local versions */
    g_assert_true(resctrl_release_kvm_maps_regions("6.12.107-pseudolock1"));
    g_assert_true(resctrl_release_kvm_maps_regions(
                      "6.12.107-pseudolock1-rt23"));
    g_assert_true(resctrl_release_kvm_maps_regions(
                      "6.12.107-rt23-pseudolock2+"));
    /* not the mark: no revision, revision 0, another word */
    g_assert_false(resctrl_release_kvm_maps_regions("6.12.107-pseudolock"));
    g_assert_false(resctrl_release_kvm_maps_regions("6.12.107-pseudolock0"));
    g_assert_false(resctrl_release_kvm_maps_regions("6.12.107-pseudolocked"));
    g_assert_false(resctrl_release_kvm_maps_regions("6.12.1-xpseudolock1"));
    /* 6.13 and later map PFN mappings without page references */
    g_assert_true(resctrl_release_kvm_maps_regions("6.13.0"));
    g_assert_true(resctrl_release_kvm_maps_regions("6.18.44-fc-v1272"));
    g_assert_true(resctrl_release_kvm_maps_regions("7.0.0-rc1"));
    /* what is not a release */
    g_assert_false(resctrl_release_kvm_maps_regions(""));
    g_assert_false(resctrl_release_kvm_maps_regions("6"));
    g_assert_false(resctrl_release_kvm_maps_regions("6."));
    g_assert_false(resctrl_release_kvm_maps_regions("v6.13"));
    g_assert_false(resctrl_release_kvm_maps_regions(" 6.13"));
    g_assert_false(resctrl_release_kvm_maps_regions("6.-13"));
    g_assert_false(resctrl_release_kvm_maps_regions(
                      "99999999999999999999.1"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/resctrl/parse/cpu-list", test_cpu_list);
    g_test_add_func("/resctrl/parse/schemata", test_parse_schemata);
    g_test_add_func("/resctrl/parse/schemata-malformed",
                    test_parse_schemata_malformed);
    g_test_add_func("/resctrl/parse/size", test_parse_size);
    g_test_add_func("/resctrl/parse/bit-usage", test_parse_bit_usage);
    g_test_add_func("/resctrl/owner/stat-start-time", test_stat_start_time);
    g_test_add_func("/resctrl/owner/stat-state", test_stat_state);
    g_test_add_func("/resctrl/owner/group-name", test_owned_group_name);
    g_test_add_func("/resctrl/owner/lock-holder", test_lock_holder);
    g_test_add_func("/resctrl/parse/mountinfo", test_parse_mountinfo);
    g_test_add_func("/resctrl/parse/release-kvm-maps-regions",
                    test_release_kvm_maps_regions);
    g_test_add_func("/resctrl/parse/mode", test_parse_mode);
    g_test_add_func("/resctrl/parse/devices-major", test_parse_devices_major);
    g_test_add_func("/resctrl/parse/schemata-level-cbm",
                    test_schemata_level_cbm);

    return g_test_run();
}
