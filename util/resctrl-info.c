/*
 * resctrl discovery: the mount, the caches' allocation info, what each
 * group holds, and which group a region's device belongs to
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * This file reads resctrl (and /proc and /sys for a device) and never
 * writes: choosing a new region's ways is util/resctrl-plan.c's job,
 * changing groups util/resctrl-group.c's.  The text of every file goes
 * to the pure parsers of util/resctrl-parse.c, so that nothing here
 * interprets a format itself.
 */

#include "qemu/osdep.h"

#include <dirent.h>
#include <sys/sysmacros.h>

#include "qapi/error.h"
#include "qemu/host-utils.h"
#include "qemu/resctrl-info.h"

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

bool resctrl_read_file(const char *path, char **contents, Error **errp)
{
    int ret = resctrl_read_raw(path, contents);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot read %s", path);
        return false;
    }
    return true;
}

bool resctrl_find_mount_in(const char *mountinfo_path, char **mount,
                           Error **errp)
{
    ERRP_GUARD();
    g_autofree char *text = NULL;

    if (!resctrl_read_file(mountinfo_path, &text, errp)) {
        return false;
    }
    if (resctrl_parse_mountinfo(text, mount)) {
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
    if (!resctrl_schemata_level_cbm(text, level, cache_id, &total,
                                    &has_level, &has_domain, &root_domains,
                                    errp)) {
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
        if (ret == -ENODEV || ret == -ENOENT) {
            /*
             * A pseudo-locked group whose cache domain went offline: it
             * holds no ways on any online cache.  Or a group that a tool
             * not taking the resctrl lock removed since readdir(): it
             * holds none at all.
             */
            continue;
        }
        if (ret < 0) {
            error_setg_errno(errp, -ret, "cannot read %s", path);
            closedir(d);
            return false;
        }
        if (!resctrl_schemata_level_cbm(group_text, level, cache_id, &cbm,
                                        &has_level, &has_domain, NULL,
                                        errp)) {
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

    if (!dir) {
        return false;
    }
    path = g_build_filename(dir, "mode", NULL);
    if (!resctrl_read_file(path, &text, errp)) {
        return false;
    }
    if (!resctrl_parse_mode(text, mode)) {
        error_setg(errp, "unexpected content '%s' in %s", g_strstrip(text),
                   path);
        return false;
    }
    return true;
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

/*
 * The hint for a file QEMU was denied: the file is fine, QEMU's
 * confinement is not (Debian confines QEMU under libvirt with AppArmor,
 * Fedora with SELinux).
 */
void resctrl_hint_confined(Error **errp, const char *access,
                           const char *fmt, ...)
{
    ERRP_GUARD();
    g_autofree char *use = NULL;
    va_list ap;

    va_start(ap, fmt);
    use = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    error_append_hint(errp, "%s  If a security policy confines QEMU "
                      "(AppArmor, SELinux), let it %s that.\n", use, access);
}

/* Why QEMU reads the files that tell it which region a descriptor is */
#define RESCTRL_READS_TO_IDENTIFY \
    "QEMU reads %s to learn which pseudo-locked region a device is."

/* The one hint for a descriptor of something else than a region */
static void resctrl_hint_not_a_region(Error **errp)
{
    ERRP_GUARD();

    error_append_hint(errp, "Give a pseudo-locked region's device, "
                      "/dev/pseudo_lock/<group>.\n");
}

/* The major number of the pseudo_lock driver, from /proc/devices */
static bool resctrl_pseudo_lock_major(const char *proc_devices,
                                      unsigned *major, Error **errp)
{
    ERRP_GUARD();
    g_autofree char *text = NULL;
    g_autoptr(GError) gerr = NULL;

    if (!g_file_get_contents(proc_devices, &text, NULL, &gerr)) {
        error_setg(errp, "cannot read %s: %s", proc_devices, gerr->message);
        resctrl_hint_confined(errp, "read", RESCTRL_READS_TO_IDENTIFY,
                              proc_devices);
        return false;
    }
    if (resctrl_parse_devices_major(text, "pseudo_lock", major)) {
        return true;
    }
    error_setg(errp, "this host has no pseudo-locked regions: no "
               "pseudo_lock driver in %s", proc_devices);
    error_append_hint(errp, "Pseudo-locking needs Linux resctrl on a CPU "
                      "with cache allocation.\n");
    return false;
}

char *resctrl_dev_char_path(const char *sys_dev_char, dev_t rdev)
{
    return g_strdup_printf("%s/%u:%u", sys_dev_char, major(rdev),
                           minor(rdev));
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
        resctrl_hint_not_a_region(errp);
        return false;
    }
    if (!resctrl_pseudo_lock_major(proc_devices, &pl_major, errp)) {
        return false;
    }
    if (major(st.st_rdev) != pl_major) {
        error_setg(errp, "device %u:%u is not a pseudo-locked region "
                   "(those are %u:*)", major(st.st_rdev), minor(st.st_rdev),
                   pl_major);
        resctrl_hint_not_a_region(errp);
        return false;
    }
    /* /sys/dev/char/M:m links to .../pseudo_lock/<group> */
    link = resctrl_dev_char_path(sys_dev_char, st.st_rdev);
    target = g_file_read_link(link, NULL);
    if (!target) {
        error_setg_errno(errp, errno, "cannot read %s", link);
        resctrl_hint_confined(errp, "read", RESCTRL_READS_TO_IDENTIFY, link);
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
