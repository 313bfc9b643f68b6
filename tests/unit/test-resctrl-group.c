/*
 * Unit tests of resctrl groups (util/resctrl-group.c), on fake trees
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The resctrl lock, and the reclaim of groups whose QEMU is gone, with a
 * fake procfs beside a fake mount.
 */

#include "qemu/osdep.h"

#include <sys/file.h>

#include "qapi/error.h"
#include "qemu/resctrl-group.h"
#include "resctrl-test-helpers.h"

/* A fake /proc entry: PID/stat with @state and @start_time, PID/ns/pid */
static void put_proc_state(const char *root, unsigned pid, char state,
                           uint64_t start_time, const char *ns)
{
    g_autofree char *stat = g_strdup_printf("proc/%u/stat", pid);
    g_autofree char *ns_rel = g_strdup_printf("proc/%u/ns/pid", pid);
    g_autofree char *line = g_strdup_printf(
        "%u (qemu (x)) %c 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %" PRIu64
        " 1 1\n", pid, state, start_time);

    put_file(root, stat, line);
    put_file(root, ns_rel, ns);
}

/* The same for a sleeping process */
static void put_proc(const char *root, unsigned pid, uint64_t start_time,
                     const char *ns)
{
    put_proc_state(root, pid, 'S', start_time, ns);
}

static uint64_t inode_of(const char *root, const char *rel)
{
    g_autofree char *path = g_build_filename(root, rel, NULL);
    struct stat st;

    g_assert_cmpint(stat(path, &st), ==, 0);
    return st.st_ino;
}

static void test_lock(void)
{
    char *root = tree_new("schemata", "L2:0=ff\n", NULL);
    g_autofree char *file = g_build_filename(root, "schemata", NULL);
    g_autofree char *missing = g_build_filename(root, "missing", NULL);
    Error *err = NULL;
    int fd = -1, other;

    g_assert_true(resctrl_lock(root, 0, &fd, &error_abort));
    g_assert_cmpint(fd, >=, 0);

    /* another open file description is excluded, as libvirt would be */
    other = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_assert_cmpint(other, >=, 0);
    g_assert_cmpint(flock(other, LOCK_EX | LOCK_NB), ==, -1);
    g_assert_cmpint(errno, ==, EWOULDBLOCK);
    g_assert_cmpint(flock(other, LOCK_SH | LOCK_NB), ==, -1);

    resctrl_unlock(fd);
    g_assert_cmpint(flock(other, LOCK_EX | LOCK_NB), ==, 0);
    close(other);
    resctrl_unlock(-1);

    g_assert_false(resctrl_lock(missing, 0, &fd, &err));
    assert_error(&err, "cannot open", missing);
    g_assert_false(resctrl_lock(file, 0, &fd, &err));
    assert_error(&err, "cannot open", "Not a directory");

    tree_free(root);
}

/*
 * A holder that never lets go: the wait ends after the timeout, and the
 * error names the holder as /proc/locks lists it.
 */
static void test_lock_timeout(void)
{
    char *root = tree_new("schemata", "L2:0=ff\n", NULL);
    g_autofree char *by_child = NULL;
    Error *err = NULL;
    int64_t start;
    int fd = -1, other, ready[2];
    char c;
    pid_t child;

    other = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_assert_cmpint(flock(other, LOCK_EX), ==, 0);
    start = g_get_monotonic_time();
    g_assert_false(resctrl_lock(root, 50, &fd, &err));
    g_assert_cmpint(g_get_monotonic_time() - start, >=, 50 * 1000);
    assert_error(&err, "this process holds the lock on", "still after 50 ms");
    g_assert_cmpint(fd, ==, -1);
    close(other);

    /* held by another process, which /proc/locks names */
    g_assert_cmpint(pipe(ready), ==, 0);
    child = fork();
    if (child == 0) {
        other = open(root, O_RDONLY | O_DIRECTORY);
        if (flock(other, LOCK_EX) == 0 && write(ready[1], "x", 1) == 1) {
            pause();
        }
        _exit(1);
    }
    g_assert_cmpint(read(ready[0], &c, 1), ==, 1);
    by_child = g_strdup_printf("process %d holds the lock on", child);
    g_assert_false(resctrl_lock(root, 20, &fd, &err));
    assert_error(&err, by_child, root);
    kill(child, SIGKILL);
    g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
    close(ready[0]);
    close(ready[1]);

    /* a holder that lets go within the timeout is waited for */
    other = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_assert_cmpint(flock(other, LOCK_EX), ==, 0);
    child = fork();
    if (child == 0) {
        g_usleep(30 * 1000);
        _exit(0);
    }
    close(other);   /* the child's copy of the descriptor holds it */
    g_assert_true(resctrl_lock(root, 5000, &fd, &error_abort));
    resctrl_unlock(fd);
    g_assert_cmpint(waitpid(child, NULL, 0), ==, child);

    tree_free(root);
}

/* The device number of what @fd is open on */
static dev_t rdev_of(int fd)
{
    struct stat st;

    g_assert_cmpint(fstat(fd, &st), ==, 0);
    return st.st_rdev;
}

/*
 * Claims of a region are keyed by its device number: any descriptor of
 * the same device, a dup of one, or the same descriptor again meets the
 * first claim.  /dev/null stands in for the region's device.
 */
static void test_region_claim(void)
{
    char *root = tree_new("dev/1:3", NULL, NULL);
    g_autofree char *sys_dev_char = g_build_filename(root, "dev", NULL);
    g_autofree char *empty = g_build_filename(root, "empty", NULL);
    int dev = open("/dev/null", O_RDWR | O_CLOEXEC);
    int other = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int dup_fd = dup(dev);
    Error *err = NULL;
    int claim = -1, claim2 = -1;

    g_assert_true(resctrl_region_claim_in(rdev_of(dev), sys_dev_char,
                                          "/proc/locks", &claim,
                                          &error_abort));
    g_assert_cmpint(claim, >=, 0);
    g_assert_false(resctrl_region_claim_in(rdev_of(dev), sys_dev_char,
                                           "/proc/locks", &claim2, &err));
    /* contention, and only then, is "in use" */
    assert_hint(err, "the memory of one QEMU at most");
    assert_error(&err, "is in use: this process holds the lock on",
                 "/dev/1:3");
    g_assert_false(resctrl_region_claim_in(rdev_of(dup_fd), sys_dev_char,
                                           "/proc/locks", &claim2, &err));
    assert_error(&err, "holds the lock on", "/dev/1:3");
    g_assert_false(resctrl_region_claim_in(rdev_of(other), sys_dev_char,
                                           "/proc/locks", &claim2, &err));
    assert_error(&err, "holds the lock on", "/dev/1:3");
    g_assert_cmpint(claim2, ==, -1);

    /* closing the claim gives the region up */
    close(claim);
    g_assert_true(resctrl_region_claim_in(rdev_of(other), sys_dev_char,
                                          "/proc/locks", &claim2,
                                          &error_abort));
    close(claim2);

    g_assert_cmpint(mkdir(empty, 0755), ==, 0);
    g_assert_false(resctrl_region_claim_in(rdev_of(dev), empty,
                                           "/proc/locks", &claim, &err));
    /* what AppArmor's denial looks like: the region is not in use */
    assert_hint(err, "If a security policy confines QEMU");
    assert_error(&err, "cannot be claimed: cannot open", "empty/1:3");

    close(dev);
    close(other);
    close(dup_fd);
    tree_free(root);
}

/* Why a group cannot be created, and what to do about it */
static void test_pseudo_lock_create_errors(void)
{
    char *root = tree_new("schemata", "L2:0=ff\n", "taken", NULL, NULL);
    g_autofree char *missing = g_build_filename(root, "missing", NULL);
    g_autofree char *long_name = g_strnfill(NAME_MAX + 1, 'x');
    Error *err = NULL;

    g_assert_false(resctrl_pseudo_lock_create(root, "taken", 2, 0, 0xf0,
                                              &err));
    g_assert_nonnull(err);
    assert_hint(err, "exists already");
    assert_error(&err, "cannot create resctrl group", "File exists");

    g_assert_false(resctrl_pseudo_lock_create(root, long_name, 2, 0, 0xf0,
                                              &err));
    g_assert_nonnull(err);
    assert_hint(err, "shorter id");
    assert_error(&err, "cannot create resctrl group", "too long");

    g_assert_false(resctrl_pseudo_lock_create(missing, "p0", 2, 0, 0xf0,
                                              &err));
    assert_error(&err, "cannot create resctrl group", "No such file");

    g_assert_false(resctrl_pseudo_lock_create(root, "info", 2, 0, 0xf0,
                                              &err));
    assert_error(&err, "invalid resctrl group name 'info'", NULL);

    tree_free(root);
}

/* The pid of a child that has exited and been reaped: no process has it */
static pid_t reaped_pid(void)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        _exit(0);
    }
    g_assert_cmpint(pid, >, 0);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    return pid;
}

static void test_reclaim_dead_groups(void)
{
    char *root = tree_new("mnt/p0", NULL, "mnt/info", NULL, NULL);
    g_autofree char *mnt = g_build_filename(root, "mnt", NULL);
    g_autofree char *proc = g_build_filename(root, "proc", NULL);
    g_autoptr(GPtrArray) reclaimed = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) undecided = g_ptr_array_new_with_free_func(g_free);
    unsigned me = getpid(), parent = getppid();
    ResctrlOwner self, other_ns;
    const char *live, *reused, *gone, *foreign, *hidden, *unreadable;
    const char *zombie;
    pid_t zombie_pid;
    int status;
    g_autofree char *stat_dir = g_strdup_printf("proc/%u/stat", parent);
    g_autofree char *my_ns = g_strdup_printf("proc/%u/ns/pid", me);
    Error *err = NULL;

    /*
     * Whether a pid exists is asked of the kernel; what runs under it
     * comes from the fake /proc: this process (start time 5555), and a
     * process of another PID namespace.
     */
    put_proc(root, me, 5555, "ns-a");
    put_proc(root, 300, 1, "ns-b");
    self = (ResctrlOwner) { inode_of(root, my_ns), me, 5555 };
    other_ns = (ResctrlOwner) { inode_of(root, "proc/300/ns/pid"), 300, 1 };
    g_assert_cmpuint(self.pidns, !=, other_ns.pidns);

    live = resctrl_owned_group_name(&self, "live");
    reused = resctrl_owned_group_name(
        &(ResctrlOwner) { self.pidns, me, 4444 }, "reused-pid");
    gone = resctrl_owned_group_name(
        &(ResctrlOwner) { self.pidns, reaped_pid(), 1 }, "gone");
    /* pid 400 means nothing in our namespace: never reclaimed */
    foreign = resctrl_owned_group_name(
        &(ResctrlOwner) { other_ns.pidns, 400, 1 }, "foreign");
    /*
     * Live processes that /proc does not show (hidepid=invisible), or
     * whose stat cannot be read: they may be running VMs, so stay.
     */
    hidden = resctrl_owned_group_name(
        &(ResctrlOwner) { self.pidns, 1, 1 }, "hidden");
    put_dir(root, stat_dir);
    unreadable = resctrl_owned_group_name(
        &(ResctrlOwner) { self.pidns, parent, 1 }, "unreadable");
    /*
     * A QEMU that exited and whose parent has not reaped it yet: the pid
     * still exists, but the process holds nothing any more
     */
    zombie_pid = fork();
    if (zombie_pid == 0) {
        _exit(0);
    }
    g_assert_cmpint(zombie_pid, >, 0);
    put_proc_state(root, zombie_pid, 'Z', 77, "ns-a");
    zombie = resctrl_owned_group_name(
        &(ResctrlOwner) { self.pidns, zombie_pid, 77 }, "zombie");
    put_dir(mnt, zombie);
    put_dir(mnt, live);
    put_dir(mnt, reused);
    put_dir(mnt, gone);
    put_dir(mnt, foreign);
    put_dir(mnt, hidden);
    put_dir(mnt, unreadable);

    g_assert_true(resctrl_reclaim_dead_groups_in(mnt, proc, &self,
                                                 reclaimed, undecided,
                                                 &err));
    g_assert_null(err);
    g_assert_cmpuint(reclaimed->len, ==, 3);
    g_assert_true(g_ptr_array_find_with_equal_func(reclaimed, reused,
                                                   g_str_equal, NULL));
    g_assert_true(g_ptr_array_find_with_equal_func(reclaimed, gone,
                                                   g_str_equal, NULL));
    g_assert_true(g_ptr_array_find_with_equal_func(reclaimed, zombie,
                                                   g_str_equal, NULL));
    g_assert_cmpint(waitpid(zombie_pid, &status, 0), ==, zombie_pid);
    for (const char *const *n = (const char *const[]) {
             live, foreign, hidden, unreadable, "p0", "info", NULL };
         *n; n++) {
        g_autofree char *path = g_build_filename(mnt, *n, NULL);

        g_assert_true(g_file_test(path, G_FILE_TEST_IS_DIR));
    }

    /* what stays undecided is said, with the reason */
    g_assert_cmpuint(undecided->len, ==, 2);
    for (guint i = 0; i < undecided->len; i++) {
        const char *msg = g_ptr_array_index(undecided, i);

        g_test_message("undecided: %s", msg);
        g_assert_nonnull(strstr(msg, "cannot tell whether its QEMU"));
        g_assert_true(g_str_has_prefix(msg, hidden) ||
                      g_str_has_prefix(msg, unreadable));
        g_assert_nonnull(strstr(msg, "cannot read"));
    }

    /* without a list for them, they stay all the same */
    g_ptr_array_set_size(reclaimed, 0);
    g_assert_true(resctrl_reclaim_dead_groups_in(mnt, proc, &self,
                                                 reclaimed, NULL, &err));
    g_assert_cmpuint(reclaimed->len, ==, 0);

    g_free((char *)live);
    g_free((char *)reused);
    g_free((char *)gone);
    g_free((char *)foreign);
    g_free((char *)hidden);
    g_free((char *)unreadable);
    g_free((char *)zombie);
    tree_free(root);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/resctrl/lock", test_lock);
    g_test_add_func("/resctrl/lock-timeout", test_lock_timeout);
    g_test_add_func("/resctrl/region-claim", test_region_claim);
    g_test_add_func("/resctrl/pseudo-lock-create-errors",
                    test_pseudo_lock_create_errors);
    g_test_add_func("/resctrl/owner/reclaim", test_reclaim_dead_groups);

    return g_test_run();
}
