# SPDX-License-Identifier: GPL-2.0-or-later
#
# The unmount of resctrl racing the last reference to a removed
# pseudo-locked group, round after round: the rmdir of a locked group
# whose device nobody holds, and the last close() of the device of a
# group that was removed while it was open.  Each of them frees the
# group and its region; the unmount tears down what it finds and leaves
# the regions' debugfs directories for after its locks.  An earlier
# version of the host patches decided "last reference" and freed in two
# steps, and an unmount in between took a reference on the dying group:
# it was freed twice.  Run with slub_debug=FZPU, under which SLUB
# reports a double free or a write to freed memory: any such report, or
# any other warning in the kernel log, fails the scenario.
#   rig.level=2|3      the cache level to lock in
#   rig.lock_ways=N    how many ways the region takes
#   rig.rounds=N       how many times to race each of the two

level=$(cmdline_arg level)
lock_ways=$(cmdline_arg lock_ways)
rounds=$(cmdline_arg rounds)
res=L$level
R=/sys/fs/resctrl

cache_dir=$(cpu0_cache_dir "$level")
cache_ways=$(cat "$cache_dir/ways_of_associativity")
free_ways=$((cache_ways - lock_ways))
default_mask=$(hex_mask "$free_ways" 0)
lock_mask=$(hex_mask "$lock_ways" "$free_ways")

check "the kernel runs with SLUB debugging (slub_debug=FZPU)" \
    grep -qw "slub_debug=FZPU" /proc/cmdline

# lock_g: mount resctrl and lock region g; fails if any step does
lock_g() {
    mount -t resctrl resctrl $R &&
        echo "$res:0=$default_mask" >$R/schemata &&
        pseudo_lock g "$res:0=$lock_mask" &&
        [ "$(cat $R/g/mode)" = pseudo-locked ]
}

# race KIND: one round; the last reference goes while resctrl unmounts.
# Either may come first: rmdir finds no group if the unmount removed it,
# and the unmount fails with EBUSY while rmdir is inside the file system
# (then it is done again afterwards).  What must hold is that the round
# ends unmounted, with no device left.
race() {
    lock_g || return 1
    case $1 in
    rmdir)
        rmdir $R/g 2>/dev/null &
        umount $R 2>/dev/null &
        wait ;;
    close)
        # the device open as a sleeping process's standard input, once
        # devtmpfs has the new node (the last round's may linger a moment)
        for _ in $(seq 100); do
            (exec 2>/dev/null; exec sleep 1000 </dev/pseudo_lock/g) &
            holder=$!
            sleep 0.01
            kill -0 $holder 2>/dev/null && break
        done
        kill -0 $holder 2>/dev/null || return 1
        rmdir $R/g || return 1
        kill $holder &
        umount $R 2>/dev/null &
        wait ;;
    esac
    if grep -q " $R " /proc/mounts; then
        busy=$((busy + 1))
        umount $R || return 1
    fi
    [ ! -e /dev/pseudo_lock/g ]
}

for kind in rmdir close; do
    failed=0
    busy=0
    for _ in $(seq "$rounds"); do
        race $kind || failed=$((failed + 1))
    done
    diag "$kind: the unmount came while the file system was busy in $busy of $rounds rounds"
    check_eq "$rounds rounds of $kind racing umount: each locks, frees and unmounts" \
        0 "$failed"
done

reports=$(dmesg | grep -E 'BUG:|BUG [a-z]|WARNING:|Object already free|Poison overwritten|Redzone overwritten|double free|general protection|use-after-free' |
          head -n 5)
check_eq "the kernel log has no SLUB report and no warning" "" "$reports"

# Whatever the races left is gone, and locking works afterwards
check "no region's device is left" \
    sh -c "[ -z \"\$(ls /dev/pseudo_lock 2>/dev/null)\" ]"
check "resctrl mounts and locks a region again" lock_g
rmdir $R/g
umount $R
done_testing
