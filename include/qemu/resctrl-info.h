/*
 * resctrl discovery: where resctrl is mounted, what the caches allow,
 * what each group holds, and which group a region's device belongs to
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Everything here reads the resctrl filesystem (and /proc/devices and
 * /sys/dev/char for a region's device) and changes nothing.  Choosing
 * the ways of a new region is in qemu/resctrl-plan.h; creating and
 * removing groups, the lock and the owners of groups in
 * qemu/resctrl-group.h.  The text of each file is parsed by the pure
 * functions of qemu/resctrl-parse.h.
 */

#ifndef QEMU_RESCTRL_INFO_H
#define QEMU_RESCTRL_INFO_H

#include "qemu/resctrl-parse.h"

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
 * ResctrlGroup: what resctrl_group_read() found in a resource group
 * @name: group name, "" for the default (root) group
 * @mode: the group's mode
 * @schemata: raw content of "schemata"; parse with resctrl_parse_schemata()
 * @size: raw content of "size"; parse with resctrl_parse_size()
 * @cpus: CPUs of "cpus_list" as a GArray of unsigned, ascending; for a
 *     pseudo-locked group these are the CPUs of the locked cache domain.
 *     NULL when the file may not be read: the kernel sets its mode to 0
 *     while the group is in pseudo-locksetup mode, so that only a process
 *     with CAP_DAC_OVERRIDE can read it then, and makes it readable
 *     (0444) again once the region is locked.
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
 * resctrl_read_file: read a whole resctrl, sysfs or procfs file
 * @path: the file
 * @contents: on success, its content; free with g_free()
 * @errp: pointer to a NULL-initialized error object
 *
 * Reads to end of file: kernfs reports a size of 4096 and procfs one of
 * 0 whatever the content, so the size that stat() gives means nothing.
 *
 * Returns: true on success, false with @errp set ("cannot read PATH").
 */
bool resctrl_read_file(const char *path, char **contents, Error **errp);

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
 * resctrl_dev_char_path: a character device's entry in sysfs
 * @sys_dev_char: a directory like /sys/dev/char
 * @rdev: the device number
 *
 * Returns: "@sys_dev_char/<major>:<minor>", a link to the device's own
 * directory; free with g_free().
 */
char *resctrl_dev_char_path(const char *sys_dev_char, dev_t rdev);

/**
 * resctrl_hint_confined: hint that a security policy denied QEMU a file
 * @errp: the error to append the hint to
 * @access: what QEMU needs of the file ("read", "read and lock")
 * @fmt: printf format of a sentence saying what QEMU does with the file
 *
 * For an error on a file that QEMU may not open or lock when AppArmor or
 * SELinux confines it: the file is fine, the policy must allow it.
 */
void G_GNUC_PRINTF(3, 4) resctrl_hint_confined(Error **errp,
                                               const char *access,
                                               const char *fmt, ...);

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

#endif /* QEMU_RESCTRL_INFO_H */
