/*
 * resctrl parsing: the text of resctrl and procfs files turned into
 * values
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Pure functions only: nothing here opens, reads or writes a file, or
 * looks at the process it runs in, so each one can be tested and
 * fuzzed on its own.  util/resctrl-info.c reads the files and hands
 * their text here; util/resctrl-group.c changes groups.
 *
 * Formats follow Linux 6.12: info files and "mode", "size" and
 * "cpus_list" come from arch/x86/kernel/cpu/resctrl/rdtgroup.c,
 * "schemata" from ctrlmondata.c, /proc/PID/stat and mountinfo from
 * fs/proc/.
 */

#include "qemu/osdep.h"

#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/resctrl-parse.h"

/* cpus_list larger than this is taken as garbage, not as a CPU count */
#define RESCTRL_MAX_CPUS (1u << 16)

static const char *const resctrl_mode_names[RESCTRL_MODE__MAX] = {
    [RESCTRL_MODE_SHAREABLE] = "shareable",
    [RESCTRL_MODE_EXCLUSIVE] = "exclusive",
    [RESCTRL_MODE_PSEUDO_LOCKSETUP] = "pseudo-locksetup",
    [RESCTRL_MODE_PSEUDO_LOCKED] = "pseudo-locked",
};

/* Directories of the mount (or of a group) that are not groups */
static const char *const resctrl_non_groups[] = {
    "info", "mon_groups", "mon_data",
};

bool resctrl_parse_u64(const char *s, int base, uint64_t *val)
{
    const char *p = s;
    const char *q;
    char *end;
    uint64_t v;

    if (base == 16 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
    }
    if (!*p) {
        return false;
    }
    for (q = p; *q; q++) {
        if (base == 16 ? !g_ascii_isxdigit(*q) : !g_ascii_isdigit(*q)) {
            return false;
        }
    }
    errno = 0;
    v = g_ascii_strtoull(p, &end, base);
    if (errno || *end) {
        return false;
    }
    *val = v;
    return true;
}

static bool resctrl_parse_uint(const char *s, unsigned *val)
{
    uint64_t v;

    if (!resctrl_parse_u64(s, 10, &v) || v > UINT_MAX) {
        return false;
    }
    *val = v;
    return true;
}

static bool resctrl_valid_resource_name(const char *name)
{
    const char *p;

    if (!*name) {
        return false;
    }
    for (p = name; *p; p++) {
        if (!g_ascii_isalnum(*p) && *p != '_') {
            return false;
        }
    }
    return true;
}

bool resctrl_valid_group_name(const char *name)
{
    size_t i;

    if (!*name || strchr(name, '/') ||
        !strcmp(name, ".") || !strcmp(name, "..")) {
        return false;
    }
    for (i = 0; i < ARRAY_SIZE(resctrl_non_groups); i++) {
        if (!strcmp(name, resctrl_non_groups[i])) {
            return false;
        }
    }
    return true;
}

bool resctrl_parse_mountinfo(const char *text, char **mount)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    size_t i;

    /*
     * "36 35 98:0 /root /mnt/point opts [optional...] - fstype src opts":
     * the mount point is field 4, octal-escaped; the filesystem type
     * follows the "-" separator, which comes after field 5.
     */
    for (i = 0; lines[i]; i++) {
        g_auto(GStrv) fields = g_strsplit(lines[i], " ", -1);
        guint n = g_strv_length(fields);
        guint j;

        for (j = 6; j < n; j++) {
            if (!strcmp(fields[j], "-")) {
                break;
            }
        }
        if (j + 1 >= n || strcmp(fields[j + 1], "resctrl")) {
            continue;
        }
        *mount = g_strcompress(fields[4]);
        return true;
    }
    return false;
}

bool resctrl_parse_cpu_list(const char *text, GArray **cpus, Error **errp)
{
    g_autofree char *copy = g_strstrip(g_strdup(text));
    g_autoptr(GArray) arr = g_array_new(false, false, sizeof(unsigned));
    g_auto(GStrv) items = NULL;
    size_t i;

    if (!*copy) {
        *cpus = g_steal_pointer(&arr);
        return true;
    }

    items = g_strsplit(copy, ",", -1);
    for (i = 0; items[i]; i++) {
        const char *item = items[i];
        const char *dash = strchr(item, '-');
        g_autofree char *lo_str = NULL;
        unsigned lo, hi, cpu;

        lo_str = dash ? g_strndup(item, dash - item) : g_strdup(item);
        if (!resctrl_parse_uint(lo_str, &lo) ||
            (dash && !resctrl_parse_uint(dash + 1, &hi))) {
            error_setg(errp, "invalid item '%s' in CPU list '%s'",
                       item, copy);
            return false;
        }
        if (!dash) {
            hi = lo;
        }
        if (lo > hi || hi >= RESCTRL_MAX_CPUS) {
            error_setg(errp, "invalid CPU range '%s' in CPU list '%s'",
                       item, copy);
            return false;
        }
        for (cpu = lo; cpu <= hi; cpu++) {
            g_array_append_val(arr, cpu);
        }
    }
    *cpus = g_steal_pointer(&arr);
    return true;
}

/*
 * Parse the line of @resource in a schemata or size file, written by the
 * kernel as "%*s:" (right-aligned name) then ';'-separated "%d=value"
 * items.  @file names the file kind in messages; @what the value.
 */
static bool resctrl_parse_domains(const char *text, const char *resource,
                                  int base, const char *file,
                                  const char *what, GArray **domains,
                                  Error **errp)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(GArray) doms = g_array_new(false, false,
                                         sizeof(ResctrlDomainValue));
    bool found = false;
    size_t i, j;

    for (i = 0; lines[i]; i++) {
        const char *line = g_strstrip(lines[i]);
        const char *colon = strchr(line, ':');
        g_autofree char *name = NULL;
        g_autofree char *body = NULL;
        g_auto(GStrv) items = NULL;

        if (!*line) {
            continue;
        }
        if (!colon) {
            error_setg(errp, "%s line '%s' has no ':'", file, line);
            return false;
        }
        name = g_strstrip(g_strndup(line, colon - line));
        if (!resctrl_valid_resource_name(name)) {
            error_setg(errp, "%s line '%s' has an invalid resource name",
                       file, line);
            return false;
        }
        if (strcmp(name, resource)) {
            continue;
        }
        if (found) {
            error_setg(errp, "more than one %s line in %s", resource, file);
            return false;
        }
        found = true;

        body = g_strstrip(g_strdup(colon + 1));
        /* a group in pseudo-locksetup mode holds no bitmask yet */
        if (!*body || !strcmp(body, "uninitialized")) {
            continue;
        }

        items = g_strsplit(body, ";", -1);
        for (j = 0; items[j]; j++) {
            const char *item = g_strstrip(items[j]);
            const char *eq = strchr(item, '=');
            g_autofree char *id_str = NULL;
            g_autofree char *val_str = NULL;
            ResctrlDomainValue dv;

            if (!*item) {
                error_setg(errp, "%s line '%s' has an empty item",
                           file, line);
                return false;
            }
            if (!eq) {
                error_setg(errp, "%s line '%s': missing '=' in '%s'",
                           file, line, item);
                return false;
            }
            id_str = g_strstrip(g_strndup(item, eq - item));
            /* the kernel pads values with spaces ("MB:0= 90") or zeros */
            val_str = g_strstrip(g_strdup(eq + 1));
            if (!resctrl_parse_uint(id_str, &dv.id)) {
                error_setg(errp, "%s line '%s': invalid domain id '%s'",
                           file, line, id_str);
                return false;
            }
            if (!resctrl_parse_u64(val_str, base, &dv.value)) {
                error_setg(errp, "%s line '%s': invalid %s '%s' for "
                           "domain %u", file, line, what, val_str, dv.id);
                return false;
            }
            if (resctrl_domain_lookup(doms, dv.id, NULL)) {
                error_setg(errp, "%s line '%s': domain %u listed twice",
                           file, line, dv.id);
                return false;
            }
            g_array_append_val(doms, dv);
        }
    }
    *domains = g_steal_pointer(&doms);
    return true;
}

bool resctrl_parse_schemata(const char *text, const char *resource,
                            GArray **domains, Error **errp)
{
    return resctrl_parse_domains(text, resource, 16, "schemata", "bitmask",
                                 domains, errp);
}

bool resctrl_parse_size(const char *text, const char *resource,
                        GArray **domains, Error **errp)
{
    return resctrl_parse_domains(text, resource, 10, "size", "size",
                                 domains, errp);
}

bool resctrl_parse_bit_usage(const char *text, unsigned cache_id,
                             uint64_t *used, uint64_t *locked, Error **errp)
{
    g_autofree char *copy = g_strstrip(g_strdup(text));
    g_auto(GStrv) items = g_strsplit(copy, ";", -1);
    uint64_t found_used = 0, found_locked = 0;
    bool found = false;
    size_t i;

    for (i = 0; items[i]; i++) {
        const char *item = g_strstrip(items[i]);
        const char *eq = strchr(item, '=');
        g_autofree char *id_str = NULL;
        const char *usage;
        size_t len, k;
        unsigned id;
        uint64_t u = 0, l = 0;

        if (!eq) {
            error_setg(errp, "bit_usage '%s': missing '=' in '%s'",
                       copy, item);
            return false;
        }
        id_str = g_strndup(item, eq - item);
        if (!resctrl_parse_uint(id_str, &id)) {
            error_setg(errp, "bit_usage '%s': invalid domain id '%s'",
                       copy, id_str);
            return false;
        }
        usage = eq + 1;
        len = strlen(usage);
        if (!len || len > 64 || strspn(usage, "0HXSEP") != len) {
            error_setg(errp, "bit_usage '%s': invalid usage '%s' for "
                       "domain %u", copy, usage, id);
            return false;
        }
        for (k = 0; k < len; k++) {
            uint64_t bit = UINT64_C(1) << (len - 1 - k);

            if (usage[k] != '0') {
                u |= bit;
            }
            if (usage[k] == 'P') {
                l |= bit;
            }
        }
        if (id == cache_id) {
            if (found) {
                error_setg(errp, "bit_usage '%s': domain %u listed twice",
                           copy, id);
                return false;
            }
            found = true;
            found_used = u;
            found_locked = l;
        }
    }
    if (!found) {
        error_setg(errp, "bit_usage '%s' does not list domain %u",
                   copy, cache_id);
        return false;
    }
    *used = found_used;
    if (locked) {
        *locked = found_locked;
    }
    return true;
}

bool resctrl_domain_lookup(GArray *domains, unsigned id, uint64_t *value)
{
    guint i;

    for (i = 0; i < domains->len; i++) {
        ResctrlDomainValue *dv = &g_array_index(domains, ResctrlDomainValue,
                                                i);

        if (dv->id == id) {
            if (value) {
                *value = dv->value;
            }
            return true;
        }
    }
    return false;
}

bool resctrl_schemata_level_cbm(const char *schemata, unsigned level,
                                unsigned cache_id, uint64_t *cbm,
                                bool *has_level, bool *has_domain,
                                GArray **level_domains, Error **errp)
{
    static const char *const suffixes[] = { "", "CODE", "DATA" };
    size_t i;

    *cbm = 0;
    *has_level = false;
    *has_domain = false;
    for (i = 0; i < ARRAY_SIZE(suffixes); i++) {
        g_autofree char *res = g_strdup_printf("L%u%s", level, suffixes[i]);
        g_autoptr(GArray) doms = NULL;
        uint64_t v;

        if (!resctrl_parse_schemata(schemata, res, &doms, errp)) {
            return false;
        }
        if (doms->len) {
            *has_level = true;
            if (level_domains && !*level_domains) {
                *level_domains = g_array_ref(doms);
            }
        }
        if (resctrl_domain_lookup(doms, cache_id, &v)) {
            *has_domain = true;
            *cbm |= v;
        }
    }
    return true;
}

const char *resctrl_mode_name(ResctrlMode mode)
{
    assert(mode < RESCTRL_MODE__MAX);
    return resctrl_mode_names[mode];
}

bool resctrl_parse_mode(const char *text, ResctrlMode *mode)
{
    g_autofree char *copy = g_strstrip(g_strdup(text));
    int m;

    for (m = 0; m < RESCTRL_MODE__MAX; m++) {
        if (!strcmp(copy, resctrl_mode_names[m])) {
            *mode = m;
            return true;
        }
    }
    return false;
}

bool resctrl_parse_devices_major(const char *text, const char *driver,
                                 unsigned *major)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    char **line;

    /* "Character devices:" lines are "<major> <name>" */
    for (line = lines; *line; line++) {
        unsigned m;
        char name[32];

        if (sscanf(*line, "%u %31s", &m, name) == 2 &&
            !strcmp(name, driver)) {
            *major = m;
            return true;
        }
        if (g_str_has_prefix(*line, "Block devices:")) {
            break;
        }
    }
    return false;
}

bool resctrl_parse_stat_start_time(const char *text, uint64_t *start_time)
{
    /* "pid (comm) state ...": comm may hold spaces and parentheses */
    const char *p = strrchr(text, ')');
    g_auto(GStrv) fields = NULL;

    if (!p || p[1] != ' ') {
        return false;
    }
    fields = g_strsplit(p + 2, " ", 0);
    /* field 22 of the line is the 20th after comm */
    if (g_strv_length(fields) < 20) {
        return false;
    }
    return resctrl_parse_u64(fields[19], 10, start_time);
}

bool resctrl_parse_stat_state(const char *text, char *state)
{
    /* the state is the first field after "(comm) " */
    const char *p = strrchr(text, ')');

    if (!p || p[1] != ' ' || !g_ascii_isalpha(p[2]) ||
        (p[3] != ' ' && p[3] != '\0' && p[3] != '\n')) {
        return false;
    }
    *state = p[2];
    return true;
}

bool resctrl_parse_lock_holder(const char *text, unsigned dev_major,
                               unsigned dev_minor, uint64_t ino,
                               int64_t *pid)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    char **line;

    /*
     * "1: FLOCK  ADVISORY  WRITE 1234 00:16:2 0 EOF": the holder's pid
     * as this pid namespace sees it (0 if it cannot), then the device in
     * hex and the inode in decimal.  Waiters' lines have "->" after the
     * number and come after the holder's.
     */
    for (line = lines; *line; line++) {
        g_auto(GStrv) f = g_strsplit_set(*line, " ", -1);
        g_auto(GStrv) id = NULL;
        g_autoptr(GPtrArray) words = g_ptr_array_new();
        uint64_t maj, min, inode;
        int64_t holder;
        char **w;

        for (w = f; *w; w++) {
            if (**w) {
                g_ptr_array_add(words, *w);
            }
        }
        if (words->len < 6 ||
            strcmp(g_ptr_array_index(words, 1), "FLOCK") ||
            strcmp(g_ptr_array_index(words, 3), "WRITE")) {
            continue;
        }
        id = g_strsplit(g_ptr_array_index(words, 5), ":", 3);
        if (g_strv_length(id) != 3 ||
            !resctrl_parse_u64(id[0], 16, &maj) ||
            !resctrl_parse_u64(id[1], 16, &min) ||
            !resctrl_parse_u64(id[2], 10, &inode) ||
            maj != dev_major || min != dev_minor || inode != ino) {
            continue;
        }
        if (!qemu_strtoi64(g_ptr_array_index(words, 4), NULL, 10, &holder)) {
            *pid = holder > 0 ? holder : 0;
            return true;
        }
    }
    return false;
}

/* Owner of a process as it appears under @proc (a procfs mount) */
char *resctrl_owned_group_name(const ResctrlOwner *owner, const char *id)
{
    return g_strdup_printf(RESCTRL_OWNED_PREFIX "%" PRIu64 "-%" PRIu64
                           "-%" PRIu64 "-%s", owner->pidns, owner->pid,
                           owner->start_time, id);
}

bool resctrl_parse_owned_group_name(const char *name, ResctrlOwner *owner)
{
    g_auto(GStrv) fields = NULL;
    ResctrlOwner o;

    if (!g_str_has_prefix(name, RESCTRL_OWNED_PREFIX)) {
        return false;
    }
    /* pidns, pid, start time, then an id that may hold '-' itself */
    fields = g_strsplit(name + strlen(RESCTRL_OWNED_PREFIX), "-", 4);
    if (g_strv_length(fields) != 4 || !*fields[3] ||
        !resctrl_parse_u64(fields[0], 10, &o.pidns) ||
        !resctrl_parse_u64(fields[1], 10, &o.pid) ||
        !resctrl_parse_u64(fields[2], 10, &o.start_time)) {
        return false;
    }
    *owner = o;
    return true;
}

/* The decimal number at *@s, which must start with a digit; moves @s on */
static bool resctrl_parse_release_number(const char **s, unsigned *value)
{
    const char *end;

    if (!g_ascii_isdigit(**s) || qemu_strtoui(*s, &end, 10, value) < 0) {
        return false;
    }
    *s = end;
    return true;
}

bool resctrl_release_kvm_maps_regions(const char *release)
{
    static const char mark[] = "-pseudolock";
    const char *p = release;
    unsigned major, minor, revision;

    if (!resctrl_parse_release_number(&p, &major) || *p++ != '.' ||
        !resctrl_parse_release_number(&p, &minor)) {
        return false;
    }
    /* From 6.13, KVM takes no references on the pages of PFN mappings */
    if (major > 6 || (major == 6 && minor >= 13)) {
        return true;
    }
    for (p = strstr(p, mark); p; p = strstr(p, mark)) {
        p += strlen(mark);
        if (resctrl_parse_release_number(&p, &revision) && revision >= 1) {
            return true;
        }
    }
    return false;
}
