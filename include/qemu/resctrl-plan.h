/*
 * resctrl region planning: the ways a new pseudo-locked region may take
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The search for free ways and the choice of a region's bitmask.  It
 * reads resctrl through qemu/resctrl-info.h and changes nothing; the
 * group is then created with qemu/resctrl-group.h, under the same
 * resctrl_lock().
 */

#ifndef QEMU_RESCTRL_PLAN_H
#define QEMU_RESCTRL_PLAN_H

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

#endif /* QEMU_RESCTRL_PLAN_H */
