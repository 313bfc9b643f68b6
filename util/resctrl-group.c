/*
 * resctrl groups: the lock, creating and removing groups, and the
 * owners of the groups QEMU creates
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The only file of the resctrl library that changes the filesystem:
 * it takes the lock that libvirt takes too, makes a group pseudo-lock
 * the ways that util/resctrl-plan.c chose, removes groups, and removes
 * the groups of QEMUs that are gone.  It reads through
 * util/resctrl-info.c and parses through util/resctrl-parse.c.
 */

#include "qemu/osdep.h"

#include <dirent.h>
#include <sys/file.h>
#include <sys/sysmacros.h>

#include "qapi/error.h"
#include "qemu/resctrl-group.h"
#include "qemu/resctrl-info.h"

/* Where the kernel lists pseudo-locked regions' devices, by group */
#define RESCTRL_PSEUDO_LOCK_CLASS "/sys/class/pseudo_lock"

/* How often a held lock is tried again */
#define RESCTRL_LOCK_POLL_US (10 * 1000)

/*
 * Who holds the flock() of @fd, in words, for an error message: the
 * kernel lists holders in /proc/locks by device and inode.
 */
static char *resctrl_lock_holder(int fd, const char *proc_locks)
{
    g_autofree char *locks = NULL;
    struct stat st;
    int64_t pid;

    if (fstat(fd, &st) < 0 ||
        !g_file_get_contents(proc_locks, &locks, NULL, NULL) ||
        !resctrl_parse_lock_holder(locks, major(st.st_dev), minor(st.st_dev),
                                   st.st_ino, &pid)) {
        return g_strdup("another process");
    }
    if (pid == getpid()) {
        return g_strdup("this process");
    }
    if (pid == 0) {
        return g_strdup("a process in another PID namespace");
    }
    return g_strdup_printf("process %" PRId64, pid);
}

/*
 * flock(LOCK_EX) on @fd (the file @what), waiting at most @timeout_ms:
 * whoever holds it may be any user, and may never let go.  Returns 0, or
 * -EWOULDBLOCK when someone else still holds it, or another -errno when
 * the lock cannot be taken at all (a security policy may deny it).
 */
static int resctrl_flock(int fd, const char *what, int64_t timeout_ms,
                         const char *proc_locks, Error **errp)
{
    int64_t deadline = g_get_monotonic_time() + timeout_ms * 1000;
    g_autofree char *holder = NULL;

    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EINTR) {
            continue;
        }
        if (errno != EWOULDBLOCK) {
            int err = errno;

            error_setg_errno(errp, err, "cannot lock %s", what);
            return -err;
        }
        if (g_get_monotonic_time() >= deadline) {
            holder = resctrl_lock_holder(fd, proc_locks);
            if (timeout_ms) {
                error_setg(errp, "%s holds the lock on %s, still after "
                           "%" PRId64 " ms", holder, what, timeout_ms);
            } else {
                error_setg(errp, "%s holds the lock on %s", holder, what);
            }
            return -EWOULDBLOCK;
        }
        g_usleep(RESCTRL_LOCK_POLL_US);
    }
    return 0;
}

/* For an open() or flock() that failed otherwise than by contention */
static void resctrl_hint_lock_confined(Error **errp, const char *path)
{
    resctrl_hint_confined(errp, "read and lock", "QEMU opens and locks %s.",
                          path);
}

/*
 * libvirt's virResctrlLock() opens /sys/fs/resctrl with O_RDONLY |
 * O_CLOEXEC and takes flock(LOCK_EX) on it before it reads the
 * allocations and creates a group; virResctrlUnlock() releases the lock
 * by closing the descriptor.  Documentation/arch/x86/resctrl.rst
 * describes the same protocol.  It must be flock(): QEMU's
 * qemu_lock_fd() takes fcntl() locks, which do not exclude flock() ones.
 */
bool resctrl_lock(const char *mount, int64_t timeout_ms, int *fd,
                  Error **errp)
{
    ERRP_GUARD();
    int lfd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int ret;

    if (lfd < 0) {
        error_setg_errno(errp, errno, "cannot open %s", mount);
        resctrl_hint_lock_confined(errp, mount);
        return false;
    }
    ret = resctrl_flock(lfd, mount, timeout_ms, "/proc/locks", errp);
    if (ret == -EWOULDBLOCK) {
        error_append_hint(errp, "Another resctrl user (libvirt, pqos, a "
                          "script under flock(1)) holds %s; QEMU does not "
                          "wait longer with the monitor blocked.\n", mount);
    } else if (ret < 0) {
        resctrl_hint_lock_confined(errp, mount);
    }
    if (ret < 0) {
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

/*
 * The kernel lets any number of processes map a region's device, and
 * each mmap zeroes the region, so users must agree on one lock per
 * region.  A lock on the device node would not do: a node made with
 * mknod (libvirt's private /dev) is another inode, and descriptors that
 * share one open file (/dev/fdset dups) share its flock too.  The
 * device's directory in sysfs is one inode per region, in every mount
 * namespace, readable by every user, and gone with the region; and each
 * claim opens it anew, so two claims in one process exclude each other.
 */
bool resctrl_region_claim_in(dev_t rdev, const char *sys_dev_char,
                             const char *proc_locks, int *claim_fd,
                             Error **errp)
{
    ERRP_GUARD();
    g_autofree char *dir = resctrl_dev_char_path(sys_dev_char, rdev);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int ret;

    if (dfd < 0) {
        error_setg_errno(errp, errno, "cannot be claimed: cannot open %s",
                         dir);
        resctrl_hint_lock_confined(errp, dir);
        return false;
    }
    ret = resctrl_flock(dfd, dir, 0, proc_locks, errp);
    if (ret == -EWOULDBLOCK) {
        error_prepend(errp, "is in use: ");
        error_append_hint(errp, "A region is the memory of one QEMU at "
                          "most, whichever device node or descriptor it "
                          "is given by: every mapping zeroes it.\n");
    } else if (ret < 0) {
        error_prepend(errp, "cannot be claimed: ");
        resctrl_hint_lock_confined(errp, dir);
    }
    if (ret < 0) {
        close(dfd);
        return false;
    }
    *claim_fd = dfd;
    return true;
}

bool resctrl_region_claim(dev_t rdev, int *claim_fd, Error **errp)
{
    return resctrl_region_claim_in(rdev, "/sys/dev/char", "/proc/locks",
                                   claim_fd, errp);
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
 * The kernel's explanation of the last failed resctrl command, from
 * info/last_cmd_status, or NULL if it has none.
 */
static char *resctrl_last_cmd_status(const char *mount)
{
    g_autofree char *path = g_build_filename(mount, "info",
                                             "last_cmd_status", NULL);
    g_autofree char *text = NULL;

    if (!resctrl_read_file(path, &text, NULL)) {
        return NULL;
    }
    g_strstrip(text);
    if (!*text || !strcmp(text, "ok")) {
        return NULL;
    }
    return g_steal_pointer(&text);
}

/*
 * Write @text to @path, a file of the resctrl mounted at @mount.  The
 * kernel's explanation of a refusal goes into the message itself, not
 * into a hint, so that QMP clients such as libvirt get it too.
 */
static bool resctrl_write_command(const char *mount, const char *path,
                                  const char *text, Error **errp)
{
    Error *err = NULL;
    g_autofree char *status = NULL;

    if (resctrl_write_file(path, text, &err)) {
        return true;
    }
    status = resctrl_last_cmd_status(mount);
    if (!status) {
        error_propagate(errp, err);
        return false;
    }
    error_setg(errp, "%s (the kernel says: %s)", error_get_pretty(err),
               status);
    error_free(err);
    return false;
}

bool resctrl_owner_self(ResctrlOwner *owner, Error **errp)
{
    g_autofree char *pid = g_strdup_printf("%d", (int)getpid());
    g_autofree char *ns = g_build_filename("/proc", pid, "ns", "pid", NULL);
    g_autofree char *stat_path = g_build_filename("/proc", pid, "stat",
                                                  NULL);
    g_autofree char *text = NULL;
    struct stat st;

    if (stat(ns, &st) < 0) {
        error_setg_errno(errp, errno, "cannot stat %s", ns);
        return false;
    }
    if (!resctrl_read_file(stat_path, &text, errp)) {
        return false;
    }
    if (!resctrl_parse_stat_start_time(text, &owner->start_time)) {
        error_setg(errp, "cannot parse %s", stat_path);
        return false;
    }
    owner->pid = getpid();
    owner->pidns = st.st_ino;
    return true;
}

/* The largest pid Linux hands out (PID_MAX_LIMIT on 64-bit hosts) */
#define RESCTRL_PID_MAX (4 * 1024 * 1024)

/*
 * Whether the QEMU that created a group is provably gone: no process has
 * its pid (kill() says ESRCH), the process that has it started at
 * another time (a reused pid), or it is a zombie (it exited, and its
 * parent has not reaped it yet).  Returns 1 if gone, 0 if it runs, and -1
 * with @why set if that cannot be told: /proc hides the process
 * (hidepid=), or its stat file cannot be read or parsed.  A group whose
 * owner cannot be told dead must stay, because removing a live VM's
 * group orphans its region until the host reboots.
 *
 * The pid is one of this process's PID namespace (the caller checks the
 * group's), and so are kill() and @proc when @proc is this namespace's
 * procfs.
 */
static int resctrl_owner_gone(const char *proc, const ResctrlOwner *o,
                              char **why)
{
    g_autofree char *pid = g_strdup_printf("%" PRIu64, o->pid);
    g_autofree char *stat_path = g_build_filename(proc, pid, "stat", NULL);
    g_autofree char *text = NULL;
    Error *err = NULL;
    uint64_t start_time;
    char state;

    /* kill(0) and kill(-1) would probe groups of processes, not a pid */
    if (o->pid < 1 || o->pid > RESCTRL_PID_MAX) {
        return 1;
    }
    if (kill((pid_t)o->pid, 0) < 0 && errno == ESRCH) {
        return 1;
    }
    /* it exists (EPERM: another user's); is it the same process? */
    if (!resctrl_read_file(stat_path, &text, &err)) {
        *why = g_strdup(error_get_pretty(err));
        error_free(err);
        return -1;
    }
    if (!resctrl_parse_stat_start_time(text, &start_time) ||
        !resctrl_parse_stat_state(text, &state)) {
        *why = g_strdup_printf("cannot parse %s", stat_path);
        return -1;
    }
    /*
     * A zombie has exited and closed its files, the device among them;
     * only its parent has not reaped it yet
     */
    return start_time != o->start_time || state == 'Z' || state == 'X';
}

/*
 * Whether another process still claims the region of @group, whose QEMU
 * is gone (a child that inherited its descriptors, or a QEMU that is
 * claiming the region now): then the region is in use, and removing its
 * group would orphan it.  The device number comes from sysfs, which a
 * private /dev does not change.  Returns false if the group has no
 * device (never locked); otherwise, true with @why set, or false with
 * the region claimed for the caller in @claim_fd until it is removed.
 */
static bool resctrl_region_still_claimed(const char *group, int *claim_fd,
                                         char **why)
{
    g_autofree char *path = g_build_filename(RESCTRL_PSEUDO_LOCK_CLASS,
                                             group, "dev", NULL);
    g_autofree char *text = NULL;
    unsigned major, minor;
    Error *err = NULL;

    *claim_fd = -1;
    if (!resctrl_read_file(path, &text, NULL) ||
        sscanf(text, "%u:%u", &major, &minor) != 2) {
        return false;
    }
    if (!resctrl_region_claim(makedev(major, minor), claim_fd, &err)) {
        /* "is in use: ..." or "cannot be claimed: ..." */
        *why = g_strdup(error_get_pretty(err));
        error_free(err);
        return true;
    }
    return false;
}

bool resctrl_reclaim_dead_groups_in(const char *mount, const char *proc,
                                    const ResctrlOwner *self,
                                    GPtrArray *reclaimed,
                                    GPtrArray *undecided, Error **errp)
{
    struct dirent *de;
    DIR *d = opendir(mount);

    if (!d) {
        error_setg_errno(errp, errno, "cannot open %s", mount);
        return false;
    }
    while ((de = readdir(d))) {
        g_autofree char *path = NULL;
        g_autofree char *why = NULL;
        ResctrlOwner o;
        int claim_fd;
        int gone;

        if (!resctrl_parse_owned_group_name(de->d_name, &o) ||
            o.pidns != self->pidns) {
            /* not ours, or another PID namespace's: /proc cannot tell */
            continue;
        }
        gone = resctrl_owner_gone(proc, &o, &why);
        if (gone < 0) {
            if (undecided) {
                g_ptr_array_add(undecided, g_strdup_printf(
                    "%s: cannot tell whether its QEMU (pid %" PRIu64 ") "
                    "is gone: %s", de->d_name, o.pid, why));
            }
            continue;
        }
        if (!gone) {
            continue;           /* its QEMU is alive */
        }
        if (resctrl_region_still_claimed(de->d_name, &claim_fd, &why)) {
            if (undecided) {
                g_ptr_array_add(undecided, g_strdup_printf(
                    "%s: its QEMU (pid %" PRIu64 ") is gone, but its region "
                    "%s", de->d_name, o.pid, why));
            }
            continue;
        }
        path = g_build_filename(mount, de->d_name, NULL);
        if (rmdir(path) < 0 && errno != ENOENT) {
            error_setg_errno(errp, errno, "cannot remove %s, left by a "
                             "QEMU that is gone", path);
            if (claim_fd >= 0) {
                close(claim_fd);
            }
            closedir(d);
            return false;
        }
        if (claim_fd >= 0) {
            close(claim_fd);
        }
        if (reclaimed) {
            g_ptr_array_add(reclaimed, g_strdup(de->d_name));
        }
    }
    closedir(d);
    return true;
}

bool resctrl_reclaim_dead_groups(const char *mount, GPtrArray *reclaimed,
                                 GPtrArray *undecided, Error **errp)
{
    ResctrlOwner self;

    return resctrl_owner_self(&self, errp) &&
           resctrl_reclaim_dead_groups_in(mount, "/proc", &self, reclaimed,
                                          undecided, errp);
}

/* What to do about a group that mkdir() could not create */
static void resctrl_mkdir_hint(int err, const char *mount, Error **errp)
{
    switch (err) {
    case EEXIST:
        error_append_hint(errp, "A group of that name exists already, "
                          "left by a backend of the same id whose group "
                          "could not be removed.  Remove it with rmdir if "
                          "nothing maps its region.\n");
        break;
    case ENAMETOOLONG:
        error_append_hint(errp, "Group names are at most %d bytes: give "
                          "the object a shorter id.\n", NAME_MAX);
        break;
    case EACCES:
    case EPERM:
        error_append_hint(errp, "Creating groups needs write access to %s, "
                          "which is root's: run QEMU as root, or let its "
                          "manager create the region and give QEMU its "
                          "device with path= (and fd passing).\n", mount);
        break;
    case ENOSPC:
        error_append_hint(errp, "Every class of service (CLOSID) is taken: "
                          "each group, a pseudo-locked one too, holds one.  "
                          "Remove a group that is not needed.\n");
        break;
    }
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
        int err = errno;
        g_autofree char *status = NULL;

        /* These come from the VFS: the kernel's status would be stale */
        if (err != EEXIST && err != ENAMETOOLONG && err != EACCES) {
            status = resctrl_last_cmd_status(mount);
        }
        if (status) {
            error_setg_errno(errp, err, "cannot create resctrl group %s "
                             "(the kernel says: %s)", dir, status);
        } else {
            error_setg_errno(errp, err, "cannot create resctrl group %s",
                             dir);
        }
        resctrl_mkdir_hint(err, mount, errp);
        return false;
    }

    path = g_build_filename(dir, "mode", NULL);
    if (!resctrl_write_command(mount, path, "pseudo-locksetup\n", errp)) {
        goto fail;
    }
    /* The kernel locks the region while it takes this write */
    g_free(path);
    path = g_build_filename(dir, "schemata", NULL);
    line = g_strdup_printf("L%u:%u=%" PRIx64 "\n", level, cache_id, cbm);
    if (!resctrl_write_command(mount, path, line, errp)) {
        goto fail;
    }
    return true;

fail:
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
