# SPDX-License-Identifier: GPL-2.0-or-later
#
# Helpers for rig scenarios (sourced by /init): TAP output and access to
# the kernel command line.

rig_test_count=0

ok() {
    rig_test_count=$((rig_test_count + 1))
    echo "ok $rig_test_count - $*"
}

not_ok() {
    rig_test_count=$((rig_test_count + 1))
    echo "not ok $rig_test_count - $*"
}

skip() {
    rig_test_count=$((rig_test_count + 1))
    echo "ok $rig_test_count - # SKIP $*"
}

# diag TEXT: a TAP comment; every line of a multi-line TEXT is one
diag() {
    printf '%s\n' "$*" | sed 's/^/# /'
}

# step TITLE: a heading for what follows, which scripts/demo shows as a
# step of the walk-through with its time
step() {
    echo "# == $*"
}

# check DESCRIPTION COMMAND...: one test, passing when COMMAND succeeds.
check() {
    desc=$1
    shift
    if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# check_fails DESCRIPTION COMMAND...: one test, passing when COMMAND fails.
check_fails() {
    desc=$1
    shift
    if "$@"; then not_ok "$desc"; else ok "$desc"; fi
}

# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq() {
    if [ "$2" = "$3" ]; then
        ok "$1"
    else
        not_ok "$1"
        diag "expected '$2', got '$3'"
    fi
}

done_testing() {
    echo "1..$rig_test_count"
}

# cmdline_arg NAME: the value of rig.NAME= on the kernel command line.
cmdline_arg() {
    sed -n "s/.*rig\\.$1=\\([^ ]*\\).*/\\1/p" /proc/cmdline
}

# cpuinfo_field NAME: the field of the first CPU in /proc/cpuinfo.
cpuinfo_field() {
    sed -n "s/^$1[[:space:]]*: //p" /proc/cpuinfo | head -n 1
}

# pseudo_lock GROUP SCHEMATA-LINE: create resctrl group GROUP and lock
# the region SCHEMATA-LINE names ("L2:0=ff00"); fails as the kernel does
pseudo_lock() {
    mkdir /sys/fs/resctrl/$1 &&
        echo pseudo-locksetup >/sys/fs/resctrl/$1/mode &&
        echo "$2" 2>/dev/null >/sys/fs/resctrl/$1/schemata
}
