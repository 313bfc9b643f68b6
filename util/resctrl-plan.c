/*
 * resctrl region planning: which ways of a cache a new pseudo-locked
 * region may take
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The placement policy, and nothing else: from what util/resctrl-info.c
 * reads (the level's geometry, the ways every group holds, the default
 * group's size per way, bit_usage) it picks the highest free run of
 * ways big enough, or says precisely why there is none.  It neither
 * locks nor creates anything; util/resctrl-group.c does, with the ways
 * chosen here, under the lock that must be held across both.
 */

#include "qemu/osdep.h"

#include "qapi/error.h"
#include "qemu/host-utils.h"
#include "qemu/resctrl-info.h"
#include "qemu/resctrl-plan.h"

static uint64_t resctrl_low_mask(unsigned nbits)
{
    return nbits >= 64 ? UINT64_MAX : (UINT64_C(1) << nbits) - 1;
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
    uint64_t used, way_size, free_bits, ways;
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
    /* size may be anything up to 16 EiB: round up without overflowing */
    ways = size / way_size + !!(size % way_size);
    if (ways > info.cbm_len) {
        error_setg(errp, "L%u cache %u is too small for %" PRIu64 " bytes: "
                   "it has %u ways of %" PRIu64 " bytes", level, cache_id,
                   size, info.cbm_len, way_size);
        return false;
    }
    nbits = MAX(ways, info.min_cbm_bits);
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
