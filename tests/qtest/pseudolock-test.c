/*
 * QTest of memory-backend-pseudolock without a pseudo-locked region:
 * bad configurations are refused with a clear error and leave nothing
 * behind, query-pseudolock answers an empty list, and the commands on
 * one backend refuse ids that name none.  The rig tests
 * the backend against the kernel's real device.
 *
 * Copyright (c) 2026 qemu-pseudolock developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/personality.h>
#include <sys/utsname.h>
#include "libqtest.h"
#include "qemu/resctrl-parse.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qjson.h"
#include "qapi/error.h"

/* Open descriptors of the QEMU process */
static int count_fds(QTestState *qts)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/fd", qtest_pid(qts));
    GDir *d = g_dir_open(dir, 0, NULL);
    int n = 0;

    g_assert_nonnull(d);
    while (g_dir_read_name(d)) {
        n++;
    }
    g_dir_close(d);
    return n;
}

static bool object_exists(QTestState *qts, const char *id)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'qom-list',"
                            "  'arguments': { 'path': '/objects' } }");
    QList *list = qdict_get_qlist(resp, "return");
    QListEntry *e;
    bool found = false;

    QLIST_FOREACH_ENTRY(list, e) {
        QDict *prop = qobject_to(QDict, qlist_entry_obj(e));

        if (!strcmp(qdict_get_str(prop, "name"), id)) {
            found = true;
        }
    }
    qobject_unref(resp);
    return found;
}

/*
 * object-add @args must fail with an error containing @want, without
 * leaving the object or a descriptor behind.
 */
static void assert_refused(QTestState *qts, const char *args,
                           const char *want)
{
    int fds = count_fds(qts);
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'object-add',"
                            "  'arguments': %p }",
                            qobject_from_json(args, &error_abort));
    const char *desc;

    g_assert(qdict_haskey(resp, "error"));
    desc = qdict_get_str(qdict_get_qdict(resp, "error"), "desc");
    g_test_message("%s: %s", args, desc);
    g_assert_nonnull(strstr(desc, want));
    qobject_unref(resp);

    g_assert_false(object_exists(qts, "pl0"));
    g_assert_cmpint(count_fds(qts), ==, fds);
}

static bool resctrl_mounted(void)
{
    g_autofree char *mountinfo = NULL;

    g_assert_true(g_file_get_contents("/proc/self/mountinfo", &mountinfo,
                                      NULL, NULL));
    return strstr(mountinfo, " - resctrl ") != NULL;
}

static void test_bad_config(void)
{
    QTestState *qts = qtest_init("-machine none");

    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0' }",
                   "give either path= to map an existing region, or "
                   "cache-level=, cache-id= and size= to create one");
    /* Creating a region: the parameters are checked before resctrl */
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'cache-level': 4, 'cache-id': 0,"
                   "  'size': 1048576 }",
                   "cache-level=4 is not supported: Linux pseudo-locks L2 "
                   "or L3 caches, so give 2 or 3");
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'cache-level': 2, 'size': 1048576 }",
                   "cache-level=, cache-id= and size= to create one");
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'cache-level': 2, 'cache-id': 0 }",
                   "cache-level=, cache-id= and size= to create one");
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'path': '/dev/zero', 'cache-level': 2,"
                   "  'cache-id': 0 }",
                   "give one or the other");
    if (!resctrl_mounted()) {
        assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                       "  'id': 'pl0', 'cache-level': 2, 'cache-id': 0,"
                       "  'size': 1048576 }",
                       "resctrl filesystem not mounted");
    } else {
        g_test_message("resctrl is mounted here: the error without it "
                       "is not tested");
    }
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'path': '/nonexistent/pseudo_lock' }",
                   "No such file or directory");
    /* A character device, but not one of the pseudo_lock driver */
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'path': '/dev/zero' }",
                   "/dev/zero: ");
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'path': '/dev/zero', 'size': 1048576 }",
                   "/dev/zero: ");
    /* Not a device at all */
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'path': '/proc/self/status' }",
                   "not a character device");
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'path': '/dev/zero', 'share': false }",
                   "share=off is not supported");
    assert_refused(qts, "{ 'qom-type': 'memory-backend-pseudolock',"
                   "  'id': 'pl0', 'path': '/dev/zero', 'policy': 'bind',"
                   "  'host-nodes': [ 0 ] }",
                   "host-nodes and policy do not apply");
    qtest_quit(qts);
}

static void test_query_empty(void)
{
    QTestState *qts = qtest_init("-machine none");
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-pseudolock' }");
    g_autofree char *hmp = NULL;

    g_assert(qdict_haskey(resp, "return"));
    g_assert(qlist_empty(qdict_get_qlist(resp, "return")));
    qobject_unref(resp);

    hmp = qtest_hmp(qts, "info pseudolock");
    g_assert_cmpstr(hmp, ==, "No pseudo-locked memory backends\r\n");
    qtest_quit(qts);
}

/* The commands on one backend refuse an id that names none */
static void test_no_such_backend(void)
{
    QTestState *qts = qtest_init("-machine none "
                                 "-object memory-backend-ram,id=ram0,size=1M");
    static const char *const commands[] = {
        "pseudolock-relock", "query-pseudolock-residency",
    };
    static const char *const ids[] = { "nope", "ram0" };
    g_autofree char *hmp = NULL;

    for (int i = 0; i < ARRAY_SIZE(commands); i++) {
        for (int j = 0; j < ARRAY_SIZE(ids); j++) {
            QDict *resp = qtest_qmp(qts, "{ 'execute': %s,"
                                    "  'arguments': { 'id': %s } }",
                                    commands[i], ids[j]);
            g_autofree char *want =
                g_strdup_printf("'%s' is not a mapped "
                                "memory-backend-pseudolock object", ids[j]);

            g_assert(qdict_haskey(resp, "error"));
            g_assert_cmpstr(qdict_get_str(qdict_get_qdict(resp, "error"),
                                          "desc"), ==, want);
            qobject_unref(resp);
        }
    }
    /* HMP's threshold is signed: a negative one is refused, not wrapped */
    hmp = qtest_hmp(qts, "info pseudolock-residency nope -5");
    g_assert_cmpstr(hmp, ==, "Error: the threshold is a number of cycles, "
                    "0 or more, not -5\r\n");
    qtest_quit(qts);
}

/*
 * Under KVM, a region of a host kernel whose regions KVM cannot map is
 * refused before anything is opened, naming the cause; on a kernel
 * whose regions it can map, the backend goes on (to fail here at the
 * path that does not exist).  The kernel's release is what QEMU decides
 * on: this host's own, then, with the UNAME26 personality (which QEMU
 * inherits), "2.6.<n>", which is older than 6.13 and has no mark of the
 * host patches.
 */
static void test_kvm_release(void)
{
    static const char *const args =
        "{ 'qom-type': 'memory-backend-pseudolock', 'id': 'pl0',"
        "  'path': '/nonexistent/pseudo_lock' }";
    static const char *const refusal =
        "KVM cannot map a pseudo-locked region of host kernel ";
    int saved = personality(0xffffffff);
    struct utsname host;
    QTestState *qts;

    if (!qtest_has_accel("kvm")) {
        g_test_skip("KVM is not available here");
        return;
    }
    g_assert_cmpint(uname(&host), ==, 0);
    qts = qtest_init("-machine none -accel kvm");
    assert_refused(qts, args,
                   resctrl_release_kvm_maps_regions(host.release)
                   ? "No such file or directory" : refusal);
    qtest_quit(qts);

    g_assert_cmpint(personality(saved | UNAME26), !=, -1);
    qts = qtest_init("-machine none -accel kvm");
    g_assert_cmpint(personality(saved), !=, -1);
    assert_refused(qts, args, refusal);
    assert_refused(qts, args, "boot Linux 6.13 or later, or a kernel with "
                   "qemu-pseudolock's host patches");
    qtest_quit(qts);

    /* Under TCG nothing is refused for the kernel's sake */
    g_assert_cmpint(personality(saved | UNAME26), !=, -1);
    qts = qtest_init("-machine none -accel tcg");
    g_assert_cmpint(personality(saved), !=, -1);
    assert_refused(qts, args, "No such file or directory");
    qtest_quit(qts);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/pseudolock/bad-config", test_bad_config);
    qtest_add_func("/pseudolock/query-empty", test_query_empty);
    qtest_add_func("/pseudolock/no-such-backend", test_no_such_backend);
    qtest_add_func("/pseudolock/kvm-release", test_kvm_release);
    return g_test_run();
}
