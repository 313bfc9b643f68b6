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

# cmdline_arg NAME: the value of rig.NAME= on the kernel command line
# (or in RIG_CMDLINE, where a scenario runs on a real host).
cmdline_arg() {
    printf '%s\n' "${RIG_CMDLINE-$(cat /proc/cmdline)}" |
        sed -n "s/.*rig\\.$1=\\([^ ]*\\).*/\\1/p"
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

# hex_mask WAYS SHIFT: a run of WAYS ones starting at bit SHIFT, in hex
hex_mask() {
    printf '%x' $(( ((1 << $1) - 1) << $2 ))
}

# cpu0_cache_dir LEVEL: CPU 0's cache of LEVEL (2, 3) in sysfs
cpu0_cache_dir() {
    for d in /sys/devices/system/cpu/cpu0/cache/index*; do
        [ "$(cat "$d/level")" = "$1" ] && echo "$d"
    done | tail -n 1
}

# The monitor of the QEMU a scenario runs inside the emulated host
QMP=${RIG_TMP:-/tmp}/qmp.sock

# qmp COMMAND-JSON...: the replies, a line each, without QMP's CRs
qmp() {
    ${RIG_BIN:-/rig/bin}/qmp-call $QMP "$@" | tr -d '\r'
}

# hmp_command COMMAND-LINE: the output of a human monitor command, run
# over QMP, a line each
hmp_command() {
    qmp "{\"execute\": \"human-monitor-command\", \"arguments\": {\"command-line\": \"$1\"}}" |
        sed -e 's/^{"return": "//' -e 's/"}$//' -e 's/\\r\\n/\n/g'
}

# wait_qmp [TENTHS]: wait until QEMU $qemu_pid answers QMP, which is
# after the machine's first reset (the monitor's socket exists long
# before); fails when QEMU exits first or after TENTHS (default 50)
# tenths of a second
wait_qmp() {
    local i
    for i in $(seq "${1:-50}"); do
        # (qmp's status is tr's: look for the answer itself)
        [ -S $QMP ] && qmp '{"execute": "query-status"}' 2>/dev/null |
            grep -q '"return"' && return 0
        kill -0 $qemu_pid 2>/dev/null || break
        sleep 0.1
    done
    return 1
}
