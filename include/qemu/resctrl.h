/*
 * Linux resctrl helpers: find the mount, read cache allocation info and
 * resource groups, search free cache ways, lock the filesystem
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The formats parsed here are those of Linux 6.12
 * (arch/x86/kernel/cpu/resctrl/, Documentation/arch/x86/resctrl.rst).
 */

#ifndef QEMU_RESCTRL_H
#define QEMU_RESCTRL_H

#define RESCTRL_DEFAULT_MOUNT "/sys/fs/resctrl"

/**
 * ResctrlCacheInfo: cache allocation parameters of one cache level
 * @level: cache level (2 or 3)
 * @cbm_len: number of bits (ways) in a capacity bitmask
 * @cbm_mask: all-ways bitmask (info/Ln/cbm_mask)
 * @num_closids: number of classes of service (info/Ln/num_closids);
 *     with CDP this is the count of the CODE (and DATA) schema
 * @min_cbm_bits: minimum number of bits in a valid bitmask
 * @shareable_bits: ways shared with other hardware agents
 *     (info/Ln/shareable_bits); a pseudo-locked region may not use them
 * @cdp: code/data prioritization is on (info/LnCODE and info/LnDATA)
 */
typedef struct ResctrlCacheInfo {
    unsigned level;
    unsigned cbm_len;
    uint64_t cbm_mask;
    unsigned num_closids;
    unsigned min_cbm_bits;
    uint64_t shareable_bits;
    bool cdp;
} ResctrlCacheInfo;

/**
 * ResctrlDomainValue: one "id=value" item of a schemata or size line
 * @id: domain (cache) id
 * @value: capacity bitmask (schemata) or size in bytes (size)
 */
typedef struct ResctrlDomainValue {
    unsigned id;
    uint64_t value;
} ResctrlDomainValue;

/**
 * ResctrlMode: the content of a resource group's "mode" file
 */
typedef enum ResctrlMode {
    RESCTRL_MODE_SHAREABLE,
    RESCTRL_MODE_EXCLUSIVE,
    RESCTRL_MODE_PSEUDO_LOCKSETUP,
    RESCTRL_MODE_PSEUDO_LOCKED,
    RESCTRL_MODE__MAX,
} ResctrlMode;

/**
 * ResctrlGroup: what resctrl_group_read() found in a resource group
 * @name: group name, "" for the default (root) group
 * @mode: the group's mode
 * @schemata: raw content of "schemata"; parse with resctrl_parse_schemata()
 * @size: raw content of "size"; parse with resctrl_parse_size()
 * @cpus: CPUs of "cpus_list" as a GArray of unsigned, ascending; for a
 *     pseudo-locked group these are the CPUs of the locked cache domain.
 *     NULL when the file may not be read: the kernel sets its mode to 0
 *     in the pseudo-locksetup and pseudo-locked modes, so only a process
 *     with CAP_DAC_OVERRIDE can read it then.
 *
 * Release the members with resctrl_group_clear(), or declare the
 * variable g_auto(ResctrlGroup).
 */
typedef struct ResctrlGroup {
    char *name;
    ResctrlMode mode;
    char *schemata;
    char *size;
    GArray *cpus;
} ResctrlGroup;

/**
 * resctrl_find_mount_in: find the resctrl mount point in a mountinfo file
 * @mountinfo_path: file in the format of /proc/self/mountinfo
 * @mount: on success, the first mount point whose filesystem type is
 *     "resctrl"; free with g_free()
 * @errp: pointer to a NULL-initialized error object
 *
 * Returns: true on success; false if the file cannot be read or lists no
 * resctrl mount, with @errp set.
 */
bool resctrl_find_mount_in(const char *mountinfo_path, char **mount,
                           Error **errp);

/**
 * resctrl_find_mount: find the resctrl mount point of this process
 * @mount: on success, the mount point; free with g_free()
 * @errp: pointer to a NULL-initialized error object
 *
 * Like resctrl_find_mount_in() on /proc/self/mountinfo.
 *
 * Returns: true on success, false with @errp set.
 */
bool resctrl_find_mount(char **mount, Error **errp);

/**
 * resctrl_read_cache_info: read the cache allocation info of a cache level
 * @mount: resctrl mount point
 * @level: cache level (2 or 3)
 * @info: filled on success
 * @errp: pointer to a NULL-initialized error object
 *
 * Reads info/Ln/ or, with CDP, info/LnCODE/ (and checks that info/LnDATA/
 * exists).
 *
 * Returns: true on success; false with @errp set if the level has no
 * cache allocation (the message lists the info directories present) or
 * a file is missing or malformed (the message names file and content).
 */
bool resctrl_read_cache_info(const char *mount, unsigned level,
                             ResctrlCacheInfo *info, Error **errp);

/**
 * resctrl_parse_cpu_list: parse a CPU list such as "0-3,6"
 * @text: the list, as in a "cpus_list" file; surrounding white space is
 *     ignored and an empty list is valid
 * @cpus: on success, a new GArray of unsigned, in the order of @text;
 *     free with g_array_unref()
 * @errp: pointer to a NULL-initialized error object
 *
 * Returns: true on success, false with @errp set if @text is malformed.
 */
bool resctrl_parse_cpu_list(const char *text, GArray **cpus, Error **errp);

/**
 * resctrl_parse_schemata: parse one resource of a "schemata" file
 * @text: content of the file
 * @resource: resource name, e.g. "L2", "L3CODE", "MB"
 * @domains: on success, a new GArray of #ResctrlDomainValue holding the
 *     bitmask of each domain listed for @resource, in file order; empty
 *     when @text has no line for @resource or the line is
 *     "uninitialized" (a group in pseudo-locksetup mode); free with
 *     g_array_unref()
 * @errp: pointer to a NULL-initialized error object
 *
 * Lines may be indented (the kernel right-aligns resource names) and
 * values zero-padded.  Every line must have the form "NAME:..."; the
 * line of @resource must be a ';'-separated list of "id=hexmask" with
 * no repeated id, and may occur only once.  Lines of other resources
 * are not parsed further.
 *
 * Returns: true on success, false with @errp set if @text is malformed.
 */
bool resctrl_parse_schemata(const char *text, const char *resource,
                            GArray **domains, Error **errp);

/**
 * resctrl_parse_size: parse one resource of a "size" file
 * @text: content of the file
 * @resource: resource name, e.g. "L2"
 * @domains: on success, a new GArray of #ResctrlDomainValue holding the
 *     size in bytes of each domain listed for @resource (an MB line holds
 *     bandwidth values instead); free with g_array_unref()
 * @errp: pointer to a NULL-initialized error object
 *
 * Same rules as resctrl_parse_schemata(), with decimal values.
 *
 * Returns: true on success, false with @errp set if @text is malformed.
 */
bool resctrl_parse_size(const char *text, const char *resource,
                        GArray **domains, Error **errp);

/**
 * resctrl_parse_bit_usage: parse the line of an info/Ln/bit_usage file
 * @text: content of the file, e.g. "0=SSSSSSSSPPPPPPPP;1=SSSSSSSSSSSSSSSS"
 * @cache_id: domain to report
 * @used: on success, the bits whose usage character is not '0'
 * @locked: on success, the bits marked 'P' (pseudo-locked); may be NULL
 * @errp: pointer to a NULL-initialized error object
 *
 * The leftmost character is the highest bit.  The kernel does not count
 * groups in pseudo-locksetup mode.
 *
 * Returns: true on success; false with @errp set if @text is malformed
 * or does not list @cache_id.
 */
bool resctrl_parse_bit_usage(const char *text, unsigned cache_id,
                             uint64_t *used, uint64_t *locked, Error **errp);

/**
 * resctrl_domain_lookup: find a domain in a parsed schemata or size line
 * @domains: GArray of #ResctrlDomainValue
 * @id: domain id
 * @value: on success, the domain's value; may be NULL
 *
 * Returns: true if @domains holds @id.
 */
bool resctrl_domain_lookup(GArray *domains, unsigned id, uint64_t *value);

/**
 * resctrl_used_bits: the ways that resource groups hold on one cache
 * @mount: resctrl mount point
 * @level: cache level (2 or 3)
 * @cache_id: cache (domain) id
 * @used: on success, the union of the bitmasks on @cache_id of every
 *     group: the default group, groups in every mode (a pseudo-locked
 *     group lists only its locked domain, a pseudo-locksetup group holds
 *     nothing yet) and, with CDP, both the CODE and the DATA masks
 * @errp: pointer to a NULL-initialized error object
 *
 * The hardware-shareable ways (#ResctrlCacheInfo.shareable_bits) are
 * not included; add them before searching for a pseudo-locked region.
 * Hold resctrl_lock() for a stable answer.
 *
 * Returns: true on success; false with @errp set if a group cannot be
 * read or parsed, the default group has no line for the level, or
 * @cache_id is not one of its domains.
 */
bool resctrl_used_bits(const char *mount, unsigned level, unsigned cache_id,
                       uint64_t *used, Error **errp);

/**
 * resctrl_find_free_bits: find a contiguous run of free ways
 * @used: ways in use
 * @cbm_len: number of ways (1 to 64)
 * @nbits: number of ways wanted
 * @cbm: on success, a bitmask of @nbits contiguous bits below bit
 *     @cbm_len that are all clear in @used, the highest such run
 *
 * Returns: true if such a run exists; false otherwise, or if @nbits is 0
 * or larger than @cbm_len.
 */
bool resctrl_find_free_bits(uint64_t used, unsigned cbm_len, unsigned nbits,
                            uint64_t *cbm);

/**
 * resctrl_longest_free_run: length of the longest run of free ways
 * @used: ways in use
 * @cbm_len: number of ways (1 to 64)
 *
 * Returns: the largest n for which resctrl_find_free_bits() succeeds,
 * 0 if none is free.
 */
unsigned resctrl_longest_free_run(uint64_t used, unsigned cbm_len);

/**
 * resctrl_mode_name: the "mode" file spelling of a mode
 * @mode: a mode below RESCTRL_MODE__MAX
 *
 * Returns: a static string such as "pseudo-locked".
 */
const char *resctrl_mode_name(ResctrlMode mode);

/**
 * resctrl_group_mode: read a resource group's mode
 * @mount: resctrl mount point
 * @group: group name, or NULL or "" for the default group
 * @mode: set on success
 * @errp: pointer to a NULL-initialized error object
 *
 * Returns: true on success; false with @errp set if @group is not a
 * valid name, or its "mode" file cannot be read or is malformed.
 */
bool resctrl_group_mode(const char *mount, const char *group,
                        ResctrlMode *mode, Error **errp);

/**
 * resctrl_group_read: read a resource group
 * @mount: resctrl mount point
 * @group: group name, or NULL or "" for the default group
 * @g: filled on success; release with resctrl_group_clear()
 * @errp: pointer to a NULL-initialized error object
 *
 * Reads "mode", "schemata", "size" and "cpus_list" of the group.
 *
 * Returns: true on success; false with @errp set if @group is not a
 * valid name, or a file cannot be read or is malformed.
 */
bool resctrl_group_read(const char *mount, const char *group,
                        ResctrlGroup *g, Error **errp);

/**
 * resctrl_group_clear: free the members of a #ResctrlGroup
 * @g: the group; its members are reset
 */
void resctrl_group_clear(ResctrlGroup *g);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ResctrlGroup, resctrl_group_clear)

/**
 * resctrl_group_of_fd: the group whose pseudo-locked region a descriptor is
 * @fd: an open file, such as /dev/pseudo_lock/p0 or a descriptor that a
 *     management application passed in
 * @group: on success, the resctrl group name; free with g_free()
 * @errp: pointer to a NULL-initialized error object
 *
 * Checks that @fd is a character device of the kernel's pseudo_lock
 * driver (its major number in /proc/devices) and names its group from
 * /sys/dev/char, so it works whatever path the device was opened by and
 * without access to resctrl itself.
 *
 * Returns: true on success; false with @errp set if @fd is not a
 * pseudo-locked region's device, or the host has no such driver.
 */
bool resctrl_group_of_fd(int fd, char **group, Error **errp);

/**
 * resctrl_group_of_fd_in: resctrl_group_of_fd() with other files
 * @fd: as for resctrl_group_of_fd()
 * @proc_devices: a file in the format of /proc/devices
 * @sys_dev_char: a directory like /sys/dev/char
 * @group: as for resctrl_group_of_fd()
 * @errp: as for resctrl_group_of_fd()
 *
 * For tests.
 */
bool resctrl_group_of_fd_in(int fd, const char *proc_devices,
                            const char *sys_dev_char, char **group,
                            Error **errp);

/**
 * resctrl_lock: take the resctrl filesystem lock
 * @mount: resctrl mount point
 * @fd: on success, the descriptor holding the lock
 * @errp: pointer to a NULL-initialized error object
 *
 * Takes flock(LOCK_EX) on the mount directory, the advisory lock that
 * Documentation/arch/x86/resctrl.rst asks writers to take and that
 * libvirt takes, so that groups are not created or changed under us.
 * Blocks until the lock is free.
 *
 * Returns: true on success, false with @errp set.
 */
bool resctrl_lock(const char *mount, int *fd, Error **errp);

/**
 * resctrl_unlock: release the lock taken by resctrl_lock()
 * @fd: the descriptor from resctrl_lock(); nothing is done if negative
 */
void resctrl_unlock(int fd);

/*
 * Groups that QEMU creates are named RESCTRL_OWNED_PREFIX followed by
 * "<pid namespace inode>-<pid>-<start time>-<object id>", so that a
 * group whose QEMU is gone can be told from one whose QEMU is alive.
 */
#define RESCTRL_OWNED_PREFIX "qemu-pl-"

/**
 * ResctrlOwner: the process that created a group
 * @pidns: inode number of its PID namespace (/proc/PID/ns/pid)
 * @pid: process id in that namespace
 * @start_time: start time in clock ticks after boot (field 22 of
 *     /proc/PID/stat), which tells a reused pid from its first owner
 */
typedef struct ResctrlOwner {
    uint64_t pidns;
    uint64_t pid;
    uint64_t start_time;
} ResctrlOwner;

/**
 * resctrl_owner_self: the #ResctrlOwner of this process
 * @owner: filled on success
 * @errp: pointer to a NULL-initialized error object
 *
 * Returns: true on success, false with @errp set if /proc cannot be read.
 */
bool resctrl_owner_self(ResctrlOwner *owner, Error **errp);

/**
 * resctrl_parse_stat_start_time: the start time from a /proc/PID/stat line
 * @text: the content of the file
 * @start_time: on success, field 22
 *
 * The command name (field 2) may contain spaces and parentheses.
 *
 * Returns: true on success, false if @text is malformed.
 */
bool resctrl_parse_stat_start_time(const char *text, uint64_t *start_time);

/**
 * resctrl_owned_group_name: the name of a group that @owner creates
 * @owner: the creating process
 * @id: the object id; must not be empty
 *
 * Returns: the name; free with g_free().
 */
char *resctrl_owned_group_name(const ResctrlOwner *owner, const char *id);

/**
 * resctrl_parse_owned_group_name: who created a group, from its name
 * @name: a group name
 * @owner: on success, the owner that resctrl_owned_group_name() encoded
 *
 * Returns: true if @name has the form of resctrl_owned_group_name().
 */
bool resctrl_parse_owned_group_name(const char *name, ResctrlOwner *owner);

/**
 * resctrl_reclaim_dead_groups: remove groups whose creating QEMU is gone
 * @mount: resctrl mount point
 * @reclaimed: if not NULL, the removed groups' names are added to it
 * @errp: pointer to a NULL-initialized error object
 *
 * Removes every group named by resctrl_owned_group_name() whose owner is
 * in this process's PID namespace and no longer runs: no process has its
 * pid, or the one that has it started at another time.  Groups of other
 * PID namespaces and every other group are left alone.  Hold
 * resctrl_lock().
 *
 * Returns: true on success, false with @errp set if the mount cannot be
 * listed or a dead owner's group cannot be removed.
 */
bool resctrl_reclaim_dead_groups(const char *mount, GPtrArray *reclaimed,
                                 Error **errp);

/**
 * resctrl_reclaim_dead_groups_in: resctrl_reclaim_dead_groups() with
 *     another procfs and owner, for tests
 * @mount: resctrl mount point
 * @proc: a directory laid out like /proc (PID/stat and PID/ns/pid)
 * @self: the owner whose PID namespace counts
 * @reclaimed: as for resctrl_reclaim_dead_groups()
 * @errp: as for resctrl_reclaim_dead_groups()
 *
 * Returns: as resctrl_reclaim_dead_groups().
 */
bool resctrl_reclaim_dead_groups_in(const char *mount, const char *proc,
                                    const ResctrlOwner *self,
                                    GPtrArray *reclaimed, Error **errp);

/**
 * resctrl_plan_region: choose the ways of a new pseudo-locked region
 * @mount: resctrl mount point
 * @level: cache level (2 or 3)
 * @cache_id: cache (domain) id
 * @size: bytes wanted
 * @cbm: on success, the bitmask to lock: the highest run of contiguous
 *     ways, enough for @size and at least min_cbm_bits, that no group
 *     holds (see resctrl_used_bits()) and that is not shareable
 * @region_size: on success, the bytes that @cbm locks (@size rounded up
 *     to whole ways)
 * @errp: pointer to a NULL-initialized error object
 *
 * Hold resctrl_lock() from here until the group has its schemata.
 *
 * Returns: true on success; false with @errp set if the level has no
 * cache allocation or has code/data prioritization on, @cache_id is
 * unknown, or there are not enough free ways (the message says how many
 * are free and where to look).
 */
bool resctrl_plan_region(const char *mount, unsigned level,
                         unsigned cache_id, uint64_t size, uint64_t *cbm,
                         uint64_t *region_size, Error **errp);

/**
 * resctrl_pseudo_lock_create: create a group and pseudo-lock a region
 * @mount: resctrl mount point
 * @group: name of the new group
 * @level: cache level (2 or 3)
 * @cache_id: cache (domain) id
 * @cbm: ways to lock, as from resctrl_plan_region()
 * @errp: pointer to a NULL-initialized error object
 *
 * Creates the group, sets its mode to pseudo-locksetup and writes the
 * schemata, whereupon the kernel loads the region into the cache and
 * creates the device pseudo_lock/@group.  On failure the group is
 * removed again and the message includes info/last_cmd_status.  Hold
 * resctrl_lock().
 *
 * Returns: true on success, false with @errp set.
 */
bool resctrl_pseudo_lock_create(const char *mount, const char *group,
                                unsigned level, unsigned cache_id,
                                uint64_t cbm, Error **errp);

/**
 * resctrl_group_remove: remove a resource group
 * @mount: resctrl mount point
 * @group: group name
 * @errp: pointer to a NULL-initialized error object
 *
 * A group that is already gone counts as removed.
 *
 * Returns: true on success, false with @errp set.
 */
bool resctrl_group_remove(const char *mount, const char *group,
                          Error **errp);

#endif /* QEMU_RESCTRL_H */
