/*
 * resctrl parsing: the text of Linux resctrl files, and of the procfs
 * files that name their readers, turned into values
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Every function here is pure: it takes the text of a file and never
 * opens, reads or writes anything, so that the unit tests and fuzzers
 * can call it on any input.  Reading the files is the business of
 * qemu/resctrl-info.h; changing groups that of qemu/resctrl-group.h.
 *
 * The formats are those of Linux 6.12 (arch/x86/kernel/cpu/resctrl/,
 * Documentation/arch/x86/resctrl.rst, Documentation/filesystems/proc.rst).
 */

#ifndef QEMU_RESCTRL_PARSE_H
#define QEMU_RESCTRL_PARSE_H

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
 * resctrl_parse_u64: parse a number as the kernel prints it
 * @s: the text
 * @base: 10 or 16; base 16 allows a leading "0x"
 * @val: set on success
 *
 * Strict: digits of @base only, no sign, no white space, no overflow.
 *
 * Returns: true on success, false if @s is not such a number.
 */
bool resctrl_parse_u64(const char *s, int base, uint64_t *val);

/**
 * resctrl_valid_group_name: whether a name can be a resource group's
 * @name: a directory name below the resctrl mount
 *
 * Returns: false for "", ".", "..", names holding '/' and the
 * directories that are not groups ("info", "mon_groups", "mon_data").
 */
bool resctrl_valid_group_name(const char *name);

/**
 * resctrl_parse_mountinfo: find the resctrl mount point in mountinfo text
 * @text: content of a file in the format of /proc/self/mountinfo
 * @mount: on success, the first mount point whose filesystem type is
 *     "resctrl", with its octal escapes undone; free with g_free()
 *
 * Returns: true if @text lists a resctrl mount.
 */
bool resctrl_parse_mountinfo(const char *text, char **mount);

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
 * resctrl_schemata_level_cbm: the ways a group holds on one cache
 * @schemata: content of the group's "schemata" file
 * @level: cache level (2 or 3)
 * @cache_id: cache (domain) id
 * @cbm: set to the union of the bitmasks on @cache_id of the level's
 *     lines: "Ln", and with code/data prioritization "LnCODE" and
 *     "LnDATA"
 * @has_level: set to whether any of these lines lists a domain
 * @has_domain: set to whether one of them lists @cache_id
 * @level_domains: if not NULL and *@level_domains is NULL, set to the
 *     domains of the first of these lines that lists any; release with
 *     g_array_unref()
 * @errp: pointer to a NULL-initialized error object
 *
 * A pseudo-locked group prints its single domain under the resource
 * name ("L2") even with code/data prioritization; other groups print
 * one line per schema.
 *
 * Returns: true on success, false with @errp set if @schemata is
 * malformed.
 */
bool resctrl_schemata_level_cbm(const char *schemata, unsigned level,
                                unsigned cache_id, uint64_t *cbm,
                                bool *has_level, bool *has_domain,
                                GArray **level_domains, Error **errp);

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
 * resctrl_mode_name: the "mode" file spelling of a mode
 * @mode: a mode below RESCTRL_MODE__MAX
 *
 * Returns: a static string such as "pseudo-locked".
 */
const char *resctrl_mode_name(ResctrlMode mode);

/**
 * resctrl_parse_mode: parse the content of a "mode" file
 * @text: the content, surrounding white space ignored
 * @mode: set on success
 *
 * Returns: true if @text names one of the modes of #ResctrlMode.
 */
bool resctrl_parse_mode(const char *text, ResctrlMode *mode);

/**
 * resctrl_parse_devices_major: a character driver's major number
 * @text: content of a file in the format of /proc/devices
 * @driver: the driver's name, e.g. "pseudo_lock"
 * @major: set on success
 *
 * Only the "Character devices:" part counts: a block driver of the same
 * name is not taken.
 *
 * Returns: true if @text lists @driver as a character device driver.
 */
bool resctrl_parse_devices_major(const char *text, const char *driver,
                                 unsigned *major);

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
 * resctrl_parse_stat_state: the state from a /proc/PID/stat line
 * @text: the content of the file
 * @state: on success, field 3: R, S, D, Z (a zombie, exited and not yet
 *     reaped), X, ...
 *
 * Returns: true on success, false if @text is malformed.
 */
bool resctrl_parse_stat_state(const char *text, char *state);

/**
 * resctrl_parse_lock_holder: who holds an exclusive flock(), from /proc/locks
 * @text: the content of /proc/locks
 * @dev_major: major number of the device of the locked file's file system
 * @dev_minor: its minor number
 * @ino: the locked file's inode number
 * @pid: on success, the holder's pid in the reader's pid namespace, or 0
 *     if the holder is in a pid namespace that the reader cannot see
 *
 * Only flock(LOCK_EX) locks count, not waiters and not fcntl() locks.
 *
 * Returns: true if @text lists a holder for the file.
 */
bool resctrl_parse_lock_holder(const char *text, unsigned dev_major,
                               unsigned dev_minor, uint64_t ino,
                               int64_t *pid);

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
 * resctrl_release_kvm_maps_regions: whether KVM can map a kernel's regions
 * @release: the host kernel's release, as uname(2) gives it
 *
 * KVM before Linux 6.13 takes a reference on the page of every PFN it
 * maps into a guest from a PFN mapping, and fails the guest's access
 * (KVM_RUN returns EFAULT) on a page that has no reference count of its
 * own.  Linux allocates a pseudo-locked region as one compound page,
 * whose tail pages have none, unless it carries qemu-pseudolock's host
 * patches, whose release says so with "-pseudolock<N>" (their
 * localversion file, as PREEMPT_RT's "-rt<N>").
 *
 * Returns: true if @release is 6.13 or later or carries the mark; false
 * otherwise, also if @release does not start with a version.
 */
bool resctrl_release_kvm_maps_regions(const char *release);

#endif /* QEMU_RESCTRL_PARSE_H */
