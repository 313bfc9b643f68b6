/*
 * Helpers of the resctrl unit tests: fake resctrl trees and error checks
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The tests write the files of a resctrl mount into a fresh temporary
 * directory, in the formats Linux 6.12 prints, and remove it
 * afterwards.  The trees here are the layouts that several rooms' tests
 * read: L2 with groups in every mode, L3 with shareable ways, L2 with
 * code/data prioritization.
 */

#include "qemu/osdep.h"

#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/resctrl-parse.h"
#include "resctrl-test-helpers.h"

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

void put_file(const char *root, const char *rel, const char *content)
{
    g_autofree char *path = g_build_filename(root, rel, NULL);
    g_autofree char *dir = g_path_get_dirname(path);
    g_autoptr(GError) gerr = NULL;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_file_set_contents(path, content, -1, &gerr);
    g_assert_no_error(gerr);
}

void put_dir(const char *root, const char *rel)
{
    g_autofree char *path = g_build_filename(root, rel, NULL);

    g_assert_cmpint(g_mkdir_with_parents(path, 0755), ==, 0);
}

/*
 * Create a tree from NULL-terminated (relative path, content) pairs; a
 * NULL content makes a directory.
 */
char *tree_new(const char *rel, ...)
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

void tree_free(char *root)
{
    rm_rf(root);
    g_free(root);
}

/* Check that *errp is set and mentions @s1 and @s2 (if not NULL) */
void assert_error(Error **errp, const char *s1, const char *s2)
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

void assert_hint(Error *err, const char *s)
{
    g_autofree char *path = NULL;
    g_autofree char *text = NULL;
    int fd = g_file_open_tmp("test-resctrl-hint-XXXXXX", &path, NULL);
    int saved = dup(STDERR_FILENO);

    /* Hints are only ever printed: print one to a file and read it */
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(saved, >=, 0);
    fflush(stderr);
    g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
    error_report_err(error_copy(err));
    fflush(stderr);
    g_assert_cmpint(dup2(saved, STDERR_FILENO), ==, STDERR_FILENO);
    close(saved);
    close(fd);
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    unlink(path);
    g_test_message("error and hint: %s", text);
    g_assert_nonnull(strstr(text, s));
}

uint64_t domain_value(GArray *domains, unsigned id)
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
char *tree_l2_modes(void)
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
char *tree_l3(void)
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
char *tree_l2_cdp(void)
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
