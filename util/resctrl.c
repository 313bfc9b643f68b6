/*
 * Linux resctrl helpers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * File formats follow Linux 6.12: info files and "mode", "size" and
 * "cpus_list" come from arch/x86/kernel/cpu/resctrl/rdtgroup.c,
 * "schemata" from ctrlmondata.c.
 */

#include "qemu/osdep.h"

#include <dirent.h>
#include <sys/file.h>
#include <sys/sysmacros.h>

#include "qapi/error.h"
#include "qemu/host-utils.h"
#include "qemu/resctrl.h"

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

/*
 * Read a whole file.  g_file_get_contents() trusts st_size for regular
 * files, and kernfs reports 4096 whatever the content, so read to EOF.
 * Returns 0 or -errno.
 */
static int resctrl_read_raw(const char *path, char **contents)
{
    g_autoptr(GString) buf = g_string_new(NULL);
    char chunk[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return -errno;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0) {
            int err = errno;

            if (err == EINTR) {
                continue;
            }
            close(fd);
            return -err;
        }
        if (n == 0) {
            break;
        }
        g_string_append_len(buf, chunk, n);
    }
    close(fd);
    *contents = g_string_free(g_steal_pointer(&buf), false);
    return 0;
}

static bool resctrl_read_file(const char *path, char **contents,
                              Error **errp)
{
    int ret = resctrl_read_raw(path, contents);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot read %s", path);
        return false;
    }
    return true;
}

/*
 * Strict number parsing: digits of @base only (an optional "0x" for
 * base 16), no sign, no white space, no overflow.
 */
static bool resctrl_parse_u64(const char *s, int base, uint64_t *val)
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

static uint64_t resctrl_low_mask(unsigned nbits)
{
    return nbits >= 64 ? UINT64_MAX : (UINT64_C(1) << nbits) - 1;
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

static bool resctrl_valid_group_name(const char *name)
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

bool resctrl_find_mount_in(const char *mountinfo_path, char **mount,
                           Error **errp)
{
    ERRP_GUARD();
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    size_t i;

    if (!resctrl_read_file(mountinfo_path, &text, errp)) {
        return false;
    }

    /*
     * "36 35 98:0 /root /mnt/point opts [optional...] - fstype src opts":
     * the mount point is field 4, octal-escaped; the filesystem type
     * follows the "-" separator, which comes after field 5.
     */
    lines = g_strsplit(text, "\n", -1);
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

    error_setg(errp, "resctrl filesystem not mounted (no entry in %s)",
               mountinfo_path);
    error_append_hint(errp, "Mount it with: mount -t resctrl resctrl %s\n",
                      RESCTRL_DEFAULT_MOUNT);
    return false;
}

bool resctrl_find_mount(char **mount, Error **errp)
{
    return resctrl_find_mount_in("/proc/self/mountinfo", mount, errp);
}

static bool resctrl_read_info_value(const char *dir, const char *file,
                                    int base, uint64_t *val, Error **errp)
{
    g_autofree char *path = g_build_filename(dir, file, NULL);
    g_autofree char *text = NULL;

    if (!resctrl_read_file(path, &text, errp)) {
        return false;
    }
    g_strstrip(text);
    if (!resctrl_parse_u64(text, base, val)) {
        error_setg(errp, "unexpected content '%s' in %s", text, path);
        return false;
    }
    return true;
}

static gint resctrl_compare_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted, comma-separated names of the subdirectories of @dir */
static char *resctrl_list_subdirs(const char *dir, Error **errp)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    DIR *d = opendir(dir);
    struct dirent *de;

    if (!d) {
        error_setg_errno(errp, errno, "cannot open %s", dir);
        return NULL;
    }
    while ((de = readdir(d))) {
        g_autofree char *path = NULL;

        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
            continue;
        }
        path = g_build_filename(dir, de->d_name, NULL);
        if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
            g_ptr_array_add(names, g_strdup(de->d_name));
        }
    }
    closedir(d);
    if (!names->len) {
        return g_strdup("none");
    }
    g_ptr_array_sort(names, resctrl_compare_names);
    g_ptr_array_add(names, NULL);
    return g_strjoinv(", ", (char **)names->pdata);
}

bool resctrl_read_cache_info(const char *mount, unsigned level,
                             ResctrlCacheInfo *info, Error **errp)
{
    ERRP_GUARD();
    g_autofree char *info_dir = g_build_filename(mount, "info", NULL);
    g_autofree char *name = g_strdup_printf("L%u", level);
    g_autofree char *code = g_strdup_printf("L%uCODE", level);
    g_autofree char *data = g_strdup_printf("L%uDATA", level);
    g_autofree char *dir = g_build_filename(info_dir, name, NULL);
    g_autofree char *min_path = NULL;
    ResctrlCacheInfo tmp = { .level = level };
    uint64_t v;

    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_autofree char *code_dir = g_build_filename(info_dir, code, NULL);
        g_autofree char *data_dir = g_build_filename(info_dir, data, NULL);

        if (!g_file_test(code_dir, G_FILE_TEST_IS_DIR) ||
            !g_file_test(data_dir, G_FILE_TEST_IS_DIR)) {
            g_autofree char *present = resctrl_list_subdirs(info_dir, errp);

            if (!present) {
                return false;
            }
            error_setg(errp, "no L%u cache allocation in %s "
                       "(info directories: %s)", level, mount, present);
            error_append_hint(errp, "The CPU or the kernel does not "
                              "support L%u cache allocation, or resctrl "
                              "is mounted without it\n", level);
            return false;
        }
        g_free(dir);
        dir = g_steal_pointer(&code_dir);
        tmp.cdp = true;
    }

    if (!resctrl_read_info_value(dir, "cbm_mask", 16, &v, errp)) {
        return false;
    }
    /* The kernel prints default_ctrl: bits 0 to cbm_len - 1 set */
    if (!v || (v & (v + 1))) {
        g_autofree char *path = g_build_filename(dir, "cbm_mask", NULL);

        error_setg(errp, "unexpected content '%" PRIx64 "' in %s: not a "
                   "contiguous mask from bit 0", v, path);
        return false;
    }
    tmp.cbm_mask = v;
    tmp.cbm_len = ctpop64(v);

    if (!resctrl_read_info_value(dir, "num_closids", 10, &v, errp)) {
        return false;
    }
    if (!v || v > UINT_MAX) {
        g_autofree char *path = g_build_filename(dir, "num_closids", NULL);

        error_setg(errp, "unexpected content '%" PRIu64 "' in %s", v, path);
        return false;
    }
    tmp.num_closids = v;

    if (!resctrl_read_info_value(dir, "min_cbm_bits", 10, &v, errp)) {
        return false;
    }
    min_path = g_build_filename(dir, "min_cbm_bits", NULL);
    if (v > tmp.cbm_len) {
        error_setg(errp, "unexpected content '%" PRIu64 "' in %s: more "
                   "than the %u bits of cbm_mask", v, min_path, tmp.cbm_len);
        return false;
    }
    tmp.min_cbm_bits = v;

    if (!resctrl_read_info_value(dir, "shareable_bits", 16, &v, errp)) {
        return false;
    }
    if (v & ~tmp.cbm_mask) {
        g_autofree char *path = g_build_filename(dir, "shareable_bits",
                                                 NULL);

        error_setg(errp, "unexpected content '%" PRIx64 "' in %s: bits "
                   "outside cbm_mask %" PRIx64, v, path, tmp.cbm_mask);
        return false;
    }
    tmp.shareable_bits = v;

    *info = tmp;
    return true;
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

/*
 * The bitmasks a group holds on @cache_id of cache level @level.  A
 * pseudo-locked group prints its single domain under the resource name
 * ("L2") even with CDP, other groups print one line per schema ("L2" or
 * "L2CODE" and "L2DATA").  @has_level tells whether any of these lines
 * lists a domain, @has_domain whether one lists @cache_id.
 */
static bool resctrl_schemata_cbm(const char *schemata, unsigned level,
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

static char *resctrl_domain_ids(GArray *domains)
{
    g_autoptr(GString) s = g_string_new(NULL);
    guint i;

    for (i = 0; domains && i < domains->len; i++) {
        g_string_append_printf(s, "%s%u", i ? ", " : "",
                               g_array_index(domains, ResctrlDomainValue,
                                             i).id);
    }
    return g_string_free(g_steal_pointer(&s), false);
}

bool resctrl_used_bits(const char *mount, unsigned level, unsigned cache_id,
                       uint64_t *used, Error **errp)
{
    ERRP_GUARD();
    g_autofree char *root_path = g_build_filename(mount, "schemata", NULL);
    g_autofree char *text = NULL;
    g_autoptr(GArray) root_domains = NULL;
    bool has_level, has_domain;
    uint64_t total, cbm;
    struct dirent *de;
    DIR *d;

    /* The default group lists every domain of the level */
    if (!resctrl_read_file(root_path, &text, errp)) {
        return false;
    }
    if (!resctrl_schemata_cbm(text, level, cache_id, &total, &has_level,
                              &has_domain, &root_domains, errp)) {
        error_prepend(errp, "%s: ", root_path);
        return false;
    }
    if (!has_level) {
        error_setg(errp, "no L%u line in %s", level, root_path);
        error_append_hint(errp, "Cache allocation for L%u is not enabled "
                          "on this host\n", level);
        return false;
    }
    if (!has_domain) {
        g_autofree char *ids = resctrl_domain_ids(root_domains);

        error_setg(errp, "unknown L%u cache id %u", level, cache_id);
        error_append_hint(errp, "L%u cache ids in %s: %s\n", level,
                          root_path, ids);
        return false;
    }

    d = opendir(mount);
    if (!d) {
        error_setg_errno(errp, errno, "cannot open %s", mount);
        return false;
    }
    while ((de = readdir(d))) {
        g_autofree char *dir = NULL;
        g_autofree char *path = NULL;
        g_autofree char *group_text = NULL;
        int ret;

        if (!resctrl_valid_group_name(de->d_name)) {
            continue;
        }
        dir = g_build_filename(mount, de->d_name, NULL);
        if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
            continue;
        }
        path = g_build_filename(dir, "schemata", NULL);
        ret = resctrl_read_raw(path, &group_text);
        if (ret == -ENODEV) {
            /*
             * A pseudo-locked group whose cache domain went offline: it
             * holds no ways on any online cache.
             */
            continue;
        }
        if (ret < 0) {
            error_setg_errno(errp, -ret, "cannot read %s", path);
            closedir(d);
            return false;
        }
        if (!resctrl_schemata_cbm(group_text, level, cache_id, &cbm,
                                  &has_level, &has_domain, NULL, errp)) {
            error_prepend(errp, "%s: ", path);
            closedir(d);
            return false;
        }
        total |= cbm;
    }
    closedir(d);

    *used = total;
    return true;
}

bool resctrl_find_free_bits(uint64_t used, unsigned cbm_len, unsigned nbits,
                            uint64_t *cbm)
{
    uint64_t run;
    unsigned start;

    if (!nbits || cbm_len > 64 || nbits > cbm_len) {
        return false;
    }
    run = resctrl_low_mask(nbits);
    /* from the highest position down to bit 0 */
    for (start = cbm_len - nbits + 1; start-- > 0;) {
        uint64_t mask = run << start;

        if (!(used & mask)) {
            *cbm = mask;
            return true;
        }
    }
    return false;
}

unsigned resctrl_longest_free_run(uint64_t used, unsigned cbm_len)
{
    unsigned best = 0, cur = 0, i;

    for (i = 0; i < cbm_len && i < 64; i++) {
        if (used & (UINT64_C(1) << i)) {
            cur = 0;
        } else {
            cur++;
            best = MAX(best, cur);
        }
    }
    return best;
}

const char *resctrl_mode_name(ResctrlMode mode)
{
    assert(mode < RESCTRL_MODE__MAX);
    return resctrl_mode_names[mode];
}

void resctrl_group_clear(ResctrlGroup *g)
{
    g_clear_pointer(&g->name, g_free);
    g_clear_pointer(&g->schemata, g_free);
    g_clear_pointer(&g->size, g_free);
    g_clear_pointer(&g->cpus, g_array_unref);
    g->mode = RESCTRL_MODE_SHAREABLE;
}

/* The directory of @group (NULL or "" for the default group) */
static char *resctrl_group_dir(const char *mount, const char *group,
                               Error **errp)
{
    if (!group || !*group) {
        return g_strdup(mount);
    }
    if (!resctrl_valid_group_name(group)) {
        error_setg(errp, "invalid resctrl group name '%s'", group);
        return NULL;
    }
    return g_build_filename(mount, group, NULL);
}

bool resctrl_group_mode(const char *mount, const char *group,
                        ResctrlMode *mode, Error **errp)
{
    g_autofree char *dir = resctrl_group_dir(mount, group, errp);
    g_autofree char *path = NULL;
    g_autofree char *text = NULL;
    int m;

    if (!dir) {
        return false;
    }
    path = g_build_filename(dir, "mode", NULL);
    if (!resctrl_read_file(path, &text, errp)) {
        return false;
    }
    g_strstrip(text);
    for (m = 0; m < RESCTRL_MODE__MAX; m++) {
        if (!strcmp(text, resctrl_mode_names[m])) {
            *mode = m;
            return true;
        }
    }
    error_setg(errp, "unexpected content '%s' in %s", text, path);
    return false;
}

bool resctrl_group_read(const char *mount, const char *group,
                        ResctrlGroup *g, Error **errp)
{
    ERRP_GUARD();
    g_auto(ResctrlGroup) tmp = { 0 };
    g_autofree char *dir = resctrl_group_dir(mount, group, errp);
    g_autofree char *path = NULL;
    g_autofree char *text = NULL;
    int ret;

    if (!dir || !resctrl_group_mode(mount, group, &tmp.mode, errp)) {
        return false;
    }
    tmp.name = g_strdup(group ? group : "");

    path = g_build_filename(dir, "schemata", NULL);
    if (!resctrl_read_file(path, &tmp.schemata, errp)) {
        return false;
    }

    g_free(path);
    path = g_build_filename(dir, "size", NULL);
    if (!resctrl_read_file(path, &tmp.size, errp)) {
        return false;
    }

    g_free(path);
    path = g_build_filename(dir, "cpus_list", NULL);
    ret = resctrl_read_raw(path, &text);
    if (ret == -EACCES) {
        /* mode 0 in pseudo-locksetup and pseudo-locked modes */
        tmp.cpus = NULL;
    } else if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot read %s", path);
        return false;
    } else if (!resctrl_parse_cpu_list(text, &tmp.cpus, errp)) {
        error_prepend(errp, "%s: ", path);
        return false;
    }

    *g = tmp;
    memset(&tmp, 0, sizeof(tmp));
    return true;
}

/* The major number of the pseudo_lock driver, from /proc/devices */
static bool resctrl_pseudo_lock_major(const char *proc_devices,
                                      unsigned *major, Error **errp)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(GError) gerr = NULL;
    char **line;

    if (!g_file_get_contents(proc_devices, &text, NULL, &gerr)) {
        error_setg(errp, "cannot read %s: %s", proc_devices, gerr->message);
        return false;
    }
    /* "Character devices:" lines are "<major> <name>" */
    lines = g_strsplit(text, "\n", -1);
    for (line = lines; *line; line++) {
        unsigned m;
        char name[32];

        if (sscanf(*line, "%u %31s", &m, name) == 2 &&
            !strcmp(name, "pseudo_lock")) {
            *major = m;
            return true;
        }
        if (g_str_has_prefix(*line, "Block devices:")) {
            break;
        }
    }
    error_setg(errp, "this host has no pseudo-locked regions: no "
               "pseudo_lock driver in %s", proc_devices);
    error_append_hint(errp, "Pseudo-locking needs Linux resctrl on a CPU "
                      "with cache allocation.\n");
    return false;
}

bool resctrl_group_of_fd_in(int fd, const char *proc_devices,
                            const char *sys_dev_char, char **group,
                            Error **errp)
{
    ERRP_GUARD();
    g_autofree char *link = NULL;
    g_autofree char *target = NULL;
    g_autofree char *name = NULL;
    struct stat st;
    unsigned pl_major;

    if (fstat(fd, &st) < 0) {
        error_setg_errno(errp, errno, "cannot stat the device");
        return false;
    }
    if (!S_ISCHR(st.st_mode)) {
        error_setg(errp, "not a character device");
        return false;
    }
    if (!resctrl_pseudo_lock_major(proc_devices, &pl_major, errp)) {
        return false;
    }
    if (major(st.st_rdev) != pl_major) {
        error_setg(errp, "device %u:%u is not a pseudo-locked region "
                   "(those are %u:*)", major(st.st_rdev), minor(st.st_rdev),
                   pl_major);
        return false;
    }
    /* /sys/dev/char/M:m links to .../pseudo_lock/<group> */
    link = g_strdup_printf("%s/%u:%u", sys_dev_char, major(st.st_rdev),
                           minor(st.st_rdev));
    target = g_file_read_link(link, NULL);
    if (!target) {
        error_setg_errno(errp, errno, "cannot read %s", link);
        return false;
    }
    name = g_path_get_basename(target);
    if (!resctrl_valid_group_name(name)) {
        error_setg(errp, "%s names no resctrl group", link);
        return false;
    }
    *group = g_steal_pointer(&name);
    return true;
}

bool resctrl_group_of_fd(int fd, char **group, Error **errp)
{
    return resctrl_group_of_fd_in(fd, "/proc/devices", "/sys/dev/char",
                                  group, errp);
}

/*
 * libvirt's virResctrlLock() opens /sys/fs/resctrl with O_RDONLY |
 * O_CLOEXEC and takes flock(LOCK_EX) on it before it reads the
 * allocations and creates a group; virResctrlUnlock() releases the lock
 * by closing the descriptor.  Documentation/arch/x86/resctrl.rst
 * describes the same protocol.  It must be flock(): QEMU's
 * qemu_lock_fd() takes fcntl() locks, which do not exclude flock() ones.
 */
bool resctrl_lock(const char *mount, int *fd, Error **errp)
{
    int lfd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int ret;

    if (lfd < 0) {
        error_setg_errno(errp, errno, "cannot open %s", mount);
        return false;
    }
    do {
        ret = flock(lfd, LOCK_EX);
    } while (ret < 0 && errno == EINTR);
    if (ret < 0) {
        error_setg_errno(errp, errno, "cannot lock %s", mount);
        close(lfd);
        return false;
    }
    *fd = lfd;
    return true;
}

void resctrl_unlock(int fd)
{
    if (fd >= 0) {
        /* closing the only descriptor of the open file drops the lock */
        close(fd);
    }
}

static bool resctrl_write_file(const char *path, const char *text,
                               Error **errp)
{
    size_t len = strlen(text);
    ssize_t n;
    int fd = open(path, O_WRONLY | O_CLOEXEC);

    if (fd < 0) {
        error_setg_errno(errp, errno, "cannot open %s", path);
        return false;
    }
    /* kernfs takes the whole write or refuses it */
    do {
        n = write(fd, text, len);
    } while (n < 0 && errno == EINTR);
    if (n < 0 || (size_t)n != len) {
        error_setg_errno(errp, n < 0 ? errno : EIO, "cannot write %s",
                         path);
        close(fd);
        return false;
    }
    if (close(fd) < 0) {
        error_setg_errno(errp, errno, "cannot write %s", path);
        return false;
    }
    return true;
}

/*
 * Add the kernel's explanation of the last failed resctrl command, from
 * info/last_cmd_status, to @errp.
 */
static void resctrl_append_last_cmd_status(const char *mount, Error **errp)
{
    g_autofree char *path = g_build_filename(mount, "info",
                                             "last_cmd_status", NULL);
    g_autofree char *text = NULL;

    if (resctrl_read_raw(path, &text) == 0) {
        g_strstrip(text);
        if (*text && strcmp(text, "ok")) {
            error_append_hint(errp, "The kernel says (%s): %s\n", path,
                              text);
        }
    }
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

/* Owner of a process as it appears under @proc (a procfs mount) */
static bool resctrl_owner_of_pid(const char *proc, const char *pid,
                                 ResctrlOwner *owner, Error **errp)
{
    g_autofree char *ns = g_build_filename(proc, pid, "ns", "pid", NULL);
    g_autofree char *stat_path = g_build_filename(proc, pid, "stat", NULL);
    g_autofree char *text = NULL;
    struct stat st;

    if (stat(ns, &st) < 0) {
        error_setg_errno(errp, errno, "cannot stat %s", ns);
        return false;
    }
    if (!resctrl_read_file(stat_path, &text, errp)) {
        return false;
    }
    if (!resctrl_parse_u64(pid, 10, &owner->pid) ||
        !resctrl_parse_stat_start_time(text, &owner->start_time)) {
        error_setg(errp, "cannot parse %s", stat_path);
        return false;
    }
    owner->pidns = st.st_ino;
    return true;
}

bool resctrl_owner_self(ResctrlOwner *owner, Error **errp)
{
    g_autofree char *pid = g_strdup_printf("%d", (int)getpid());

    return resctrl_owner_of_pid("/proc", pid, owner, errp);
}

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

bool resctrl_reclaim_dead_groups_in(const char *mount, const char *proc,
                                    const ResctrlOwner *self,
                                    GPtrArray *reclaimed, Error **errp)
{
    struct dirent *de;
    DIR *d = opendir(mount);

    if (!d) {
        error_setg_errno(errp, errno, "cannot open %s", mount);
        return false;
    }
    while ((de = readdir(d))) {
        g_autofree char *pid = NULL;
        g_autofree char *path = NULL;
        ResctrlOwner o, now;

        if (!resctrl_parse_owned_group_name(de->d_name, &o) ||
            o.pidns != self->pidns) {
            /* not ours, or another PID namespace's: /proc cannot tell */
            continue;
        }
        pid = g_strdup_printf("%" PRIu64, o.pid);
        if (resctrl_owner_of_pid(proc, pid, &now, NULL) &&
            now.pidns == o.pidns && now.start_time == o.start_time) {
            continue;           /* its QEMU is alive */
        }
        path = g_build_filename(mount, de->d_name, NULL);
        if (rmdir(path) < 0 && errno != ENOENT) {
            error_setg_errno(errp, errno, "cannot remove %s, left by a "
                             "QEMU that is gone", path);
            closedir(d);
            return false;
        }
        if (reclaimed) {
            g_ptr_array_add(reclaimed, g_strdup(de->d_name));
        }
    }
    closedir(d);
    return true;
}

bool resctrl_reclaim_dead_groups(const char *mount, GPtrArray *reclaimed,
                                 Error **errp)
{
    ResctrlOwner self;

    return resctrl_owner_self(&self, errp) &&
           resctrl_reclaim_dead_groups_in(mount, "/proc", &self, reclaimed,
                                          errp);
}

/* Bytes of cache that one capacity bit stands for on a cache instance */
static bool resctrl_way_size(const char *mount, unsigned level,
                             unsigned cache_id, uint64_t *bytes,
                             Error **errp)
{
    g_auto(ResctrlGroup) root = { 0 };
    g_autofree char *res = g_strdup_printf("L%u", level);
    g_autoptr(GArray) sizes = NULL;
    g_autoptr(GArray) masks = NULL;
    uint64_t size, cbm;

    /*
     * The kernel computes "size" as cache size / cbm_len * ways, so the
     * default group's size over its number of ways is exact.
     */
    if (!resctrl_group_read(mount, NULL, &root, errp) ||
        !resctrl_parse_size(root.size, res, &sizes, errp) ||
        !resctrl_parse_schemata(root.schemata, res, &masks, errp)) {
        return false;
    }
    if (!resctrl_domain_lookup(sizes, cache_id, &size) ||
        !resctrl_domain_lookup(masks, cache_id, &cbm) || !cbm) {
        error_setg(errp, "the default group of %s has no %s:%u size", mount,
                   res, cache_id);
        return false;
    }
    *bytes = size / ctpop64(cbm);
    return *bytes != 0;
}

/*
 * Linux locks at most one region per cache instance (the whole cache
 * hierarchy, in fact: rdtgroup_pseudo_locked_in_hierarchy()), and
 * bit_usage shows a locked region's ways as 'P'.  Catch the common case
 * here, to say what to do instead; the kernel's own refusal, in
 * last_cmd_status, covers a region in another level.
 */
static bool resctrl_check_no_region(const char *mount, unsigned level,
                                    unsigned cache_id, Error **errp)
{
    g_autofree char *path = g_strdup_printf("%s/info/L%u/bit_usage", mount,
                                            level);
    g_autofree char *text = NULL;
    uint64_t used, locked;

    if (!resctrl_read_file(path, &text, errp) ||
        !resctrl_parse_bit_usage(text, cache_id, &used, &locked, errp)) {
        return false;
    }
    if (locked) {
        error_setg(errp, "L%u cache %u already holds a pseudo-locked region "
                   "(bitmask %" PRIx64 "), and Linux locks one region per "
                   "cache", level, cache_id, locked);
        error_append_hint(errp, "Use another cache-id=, or map the existing "
                          "region with path=/dev/pseudo_lock/<group>.  "
                          "The group whose mode is pseudo-locked under %s "
                          "holds it.\n", mount);
        return false;
    }
    return true;
}

bool resctrl_plan_region(const char *mount, unsigned level,
                         unsigned cache_id, uint64_t size, uint64_t *cbm,
                         uint64_t *region_size, Error **errp)
{
    ERRP_GUARD();
    ResctrlCacheInfo info;
    uint64_t used, way_size, free_bits;
    unsigned nbits, nfree, longest;

    if (!resctrl_read_cache_info(mount, level, &info, errp)) {
        return false;
    }
    if (info.cdp) {
        error_setg(errp, "L%u code/data prioritization is on: Linux cannot "
                   "pseudo-lock then", level);
        error_append_hint(errp, "Mount resctrl without the cdp and cdpl2 "
                          "options.\n");
        return false;
    }
    if (!resctrl_used_bits(mount, level, cache_id, &used, errp) ||
        !resctrl_way_size(mount, level, cache_id, &way_size, errp)) {
        return false;
    }
    used |= info.shareable_bits;
    nbits = MAX(DIV_ROUND_UP(size, way_size), info.min_cbm_bits);
    if (nbits > info.cbm_len) {
        error_setg(errp, "L%u cache %u is too small for %" PRIu64 " bytes: "
                   "it has %u ways of %" PRIu64 " bytes", level, cache_id,
                   size, info.cbm_len, way_size);
        return false;
    }
    if (!resctrl_check_no_region(mount, level, cache_id, errp)) {
        return false;
    }
    if (resctrl_find_free_bits(used, info.cbm_len, nbits, cbm)) {
        *region_size = nbits * way_size;
        return true;
    }

    free_bits = ~used & resctrl_low_mask(info.cbm_len);
    nfree = ctpop64(free_bits);
    longest = resctrl_longest_free_run(used, info.cbm_len);
    error_setg(errp, "not enough free ways on L%u cache %u: %" PRIu64
               " bytes need %u contiguous ways of %" PRIu64 " bytes, "
               "%u are free (the longest contiguous run is %u)", level,
               cache_id, size, nbits, way_size, nfree, longest);
    error_append_hint(errp, "A region may only use ways that no group, "
                      "the default group included, holds and that are "
                      "not shareable with other agents.  See "
                      "%s/info/L%u/bit_usage, and free ways by shrinking "
                      "the default group's mask in %s/schemata.\n", mount,
                      level, mount);
    return false;
}

bool resctrl_pseudo_lock_create(const char *mount, const char *group,
                                unsigned level, unsigned cache_id,
                                uint64_t cbm, Error **errp)
{
    ERRP_GUARD();
    g_autofree char *dir = NULL;
    g_autofree char *path = NULL;
    g_autofree char *line = NULL;

    if (!resctrl_valid_group_name(group)) {
        error_setg(errp, "invalid resctrl group name '%s'", group);
        return false;
    }
    dir = g_build_filename(mount, group, NULL);
    if (mkdir(dir, 0755) < 0) {
        error_setg_errno(errp, errno, "cannot create resctrl group %s", dir);
        resctrl_append_last_cmd_status(mount, errp);
        return false;
    }

    path = g_build_filename(dir, "mode", NULL);
    if (!resctrl_write_file(path, "pseudo-locksetup\n", errp)) {
        goto fail;
    }
    /* The kernel locks the region while it takes this write */
    g_free(path);
    path = g_build_filename(dir, "schemata", NULL);
    line = g_strdup_printf("L%u:%u=%" PRIx64 "\n", level, cache_id, cbm);
    if (!resctrl_write_file(path, line, errp)) {
        goto fail;
    }
    return true;

fail:
    resctrl_append_last_cmd_status(mount, errp);
    if (rmdir(dir) < 0) {
        error_append_hint(errp, "Could not remove %s again: %s\n", dir,
                          strerror(errno));
    }
    return false;
}

bool resctrl_group_remove(const char *mount, const char *group,
                          Error **errp)
{
    g_autofree char *dir = NULL;

    if (!resctrl_valid_group_name(group)) {
        error_setg(errp, "invalid resctrl group name '%s'", group);
        return false;
    }
    dir = g_build_filename(mount, group, NULL);
    if (rmdir(dir) < 0 && errno != ENOENT) {
        error_setg_errno(errp, errno, "cannot remove resctrl group %s", dir);
        return false;
    }
    return true;
}
