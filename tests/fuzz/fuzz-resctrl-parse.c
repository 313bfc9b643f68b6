/*
 * libFuzzer targets for the resctrl parsers (util/resctrl-parse.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One program per parser, chosen at build time with -DFUZZ_<NAME>: each
 * input is the text of the file that parser reads (NUL ends it, as it
 * ends a file read into a string).  A parser must return true or false,
 * with an error exactly when false, and what it returns must hold
 * together; AddressSanitizer and UndefinedBehaviorSanitizer catch the
 * rest.  tests/fuzz/corpus/<name>/ seeds each one with real kernel
 * output.
 */

#include "qemu/osdep.h"

#include "qapi/error.h"
#include "qemu/resctrl-parse.h"

/* An error exactly when the parser says it failed */
static void check_error(bool ok, Error *err)
{
    if (ok != !err) {
        abort();
    }
    error_free(err);
}

static void check_domains(GArray *domains)
{
    guint i;
    uint64_t v;

    for (i = 0; i < domains->len; i++) {
        ResctrlDomainValue *d = &g_array_index(domains, ResctrlDomainValue,
                                               i);

        if (!resctrl_domain_lookup(domains, d->id, &v) || v != d->value) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *text = g_strndup((const char *)data, size);
    Error *err = NULL;
    bool ok;

#if defined(FUZZ_SCHEMATA)
    g_autoptr(GArray) domains = NULL;
    g_autoptr(GArray) level_domains = NULL;
    uint64_t cbm;
    bool has_level, has_domain;

    ok = resctrl_parse_schemata(text, "L2", &domains, &err);
    if (ok) {
        check_domains(domains);
    }
    check_error(ok, err);
    err = NULL;
    ok = resctrl_schemata_level_cbm(text, 3, 0, &cbm, &has_level,
                                    &has_domain, &level_domains, &err);
    if (ok && has_domain && !has_level) {
        abort();
    }
    check_error(ok, err);
#elif defined(FUZZ_SIZE)
    g_autoptr(GArray) domains = NULL;

    ok = resctrl_parse_size(text, "L3", &domains, &err);
    if (ok) {
        check_domains(domains);
    }
    check_error(ok, err);
#elif defined(FUZZ_BIT_USAGE)
    uint64_t used, locked;

    ok = resctrl_parse_bit_usage(text, 1, &used, &locked, &err);
    if (ok && (locked & ~used)) {
        abort();
    }
    check_error(ok, err);
#elif defined(FUZZ_CPU_LIST)
    g_autoptr(GArray) cpus = NULL;

    ok = resctrl_parse_cpu_list(text, &cpus, &err);
    if (ok && !cpus) {
        abort();
    }
    check_error(ok, err);
#elif defined(FUZZ_MOUNTINFO)
    g_autofree char *mount = NULL;

    if (resctrl_parse_mountinfo(text, &mount) != !!mount) {
        abort();
    }
#elif defined(FUZZ_PROC_STAT)
    uint64_t start_time;
    char state;

    (void)resctrl_parse_stat_start_time(text, &start_time);
    if (resctrl_parse_stat_state(text, &state) && !g_ascii_isalpha(state)) {
        abort();
    }
#elif defined(FUZZ_PROC_LOCKS)
    int64_t pid;

    if (resctrl_parse_lock_holder(text, 0, 0x25, 1, &pid) && pid < 0) {
        abort();
    }
#elif defined(FUZZ_GROUP_NAME)
    ResctrlOwner owner, back;
    ResctrlMode mode;

    /* a name that parses as an owned group's prints back as the same */
    if (resctrl_parse_owned_group_name(text, &owner)) {
        const char *id = text;
        g_autofree char *again = NULL;
        int dashes = 0;

        /* "qemu-pl-" and three numbers, then the id */
        while (*id && dashes < 5) {
            dashes += *id++ == '-';
        }
        again = resctrl_owned_group_name(&owner, id);
        if (!resctrl_parse_owned_group_name(again, &back) ||
            back.pidns != owner.pidns || back.pid != owner.pid ||
            back.start_time != owner.start_time) {
            abort();
        }
    }
    if (resctrl_parse_mode(text, &mode) && mode >= RESCTRL_MODE__MAX) {
        abort();
    }
    (void)resctrl_valid_group_name(text);
#else
#error "define one FUZZ_<NAME>"
#endif
    return 0;
}
