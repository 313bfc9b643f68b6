/*
 * Helpers of the resctrl unit tests: fake resctrl trees and error checks
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Shared by tests/unit/test-resctrl-*.c, one test program per room of
 * the resctrl library.
 */

#ifndef TESTS_UNIT_RESCTRL_TEST_HELPERS_H
#define TESTS_UNIT_RESCTRL_TEST_HELPERS_H

/* Write @content to @root/@rel, creating the directories on the way */
void put_file(const char *root, const char *rel, const char *content);

/* Create the directory @root/@rel and its parents */
void put_dir(const char *root, const char *rel);

/*
 * A new temporary tree from NULL-terminated (relative path, content)
 * pairs; a NULL content makes a directory.  Free with tree_free().
 */
char *G_GNUC_NULL_TERMINATED tree_new(const char *rel, ...);

/* Remove a tree made by tree_new() or a tree_*() layout, and free @root */
void tree_free(char *root);

/* Check that *@errp is set and mentions @s1 and @s2 (if not NULL) */
void assert_error(Error **errp, const char *s1, const char *s2);

/* Check that @err's hint (or message) mentions @s; @err stays */
void assert_hint(Error *err, const char *s);

/* The value of domain @id in a parsed schemata or size line; must exist */
uint64_t domain_value(GArray *domains, unsigned id);

/*
 * The layouts, each documented where it is written: L2 with two domains
 * and groups in every mode; L3 with one domain and hardware-shareable
 * ways; L2 with code/data prioritization.
 */
char *tree_l2_modes(void);
char *tree_l3(void);
char *tree_l2_cdp(void);

#endif /* TESTS_UNIT_RESCTRL_TEST_HELPERS_H */
