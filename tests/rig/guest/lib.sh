# SPDX-License-Identifier: GPL-2.0-or-later
#
# Helpers for rig scenarios (sourced by /init): TAP output and access to
# the kernel command line.

rig_test_count=0
rig_failed_count=0

ok() {
    rig_test_count=$((rig_test_count + 1))
    echo "ok $rig_test_count - $*"
}

not_ok() {
    rig_test_count=$((rig_test_count + 1))
    rig_failed_count=$((rig_failed_count + 1))
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

# refuses DESCRIPTION ERR-FILE COMMAND...: one test, passing when COMMAND
# (a QEMU that should refuse its configuration) exits with status 1
# within 60 s; its stderr goes to ERR-FILE and is shown as a comment
refuses() {
    desc=$1 err=$2
    shift 2
    timeout -s KILL 60 "$@" 2>"$err"
    check_eq "$desc" 1 $?
    diag "$(grep -v "TCG doesn't support" "$err")"
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

# start_qemu ARGS...: the scenario's QEMU, $QEMU with $machine (which
# holds its -qmp on $QMP) and ARGS, in the background as $qemu_pid, run
# through $qemu_prefix if set (e.g. "taskset -c 0-1"), its stderr in
# /tmp/qemu.err; succeeds once QEMU answers QMP
start_qemu() {
    rm -f $QMP
    ${qemu_prefix:-} $QEMU $machine "$@" 2>/tmp/qemu.err &
    qemu_pid=$!
    wait_qmp
}

# stop_qemu: quit $qemu_pid over QMP; its exit status
stop_qemu() {
    qmp '{"execute": "quit"}' >/dev/null
    wait $qemu_pid
}

# dimm_refused NEXT-TO PATTERN: in the running QEMU ($qemu_pid), region p0
# added as backend pl1 and plugged as a DIMM next to NEXT-TO (what the
# machine has) is refused, the reply holding the text PATTERN; QEMU
# still answers, and nothing stays: no DIMM, the backend deleted, no
# descriptor of the region
dimm_refused() {
    reply=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"memory-backend-pseudolock\", \"id\": \"pl1\", \"path\": \"/dev/pseudo_lock/p0\"}}")
    check_eq "object-add of the region works next to $1" \
        '{"return": {}}' "$reply"
    reply=$(qmp '{"execute": "device_add", "arguments": {"driver": "pc-dimm", "id": "dimm1", "memdev": "pl1"}}')
    diag "$reply"
    case $reply in
    *'"error"'*"$2"*) ok "but plugging it as a DIMM is refused, saying why" ;;
    *) not_ok "but plugging it as a DIMM is refused, saying why" ;;
    esac
    reply=$(qmp '{"execute": "query-status"}')
    check "QEMU still answers" contains_return "$reply"
    reply=$(qmp '{"execute": "query-memory-devices"}')
    check_eq "no DIMM is plugged" '{"return": []}' "$reply"
    reply=$(qmp '{"execute": "object-del", "arguments": {"id": "pl1"}}')
    check_eq "and the backend can be deleted" '{"return": {}}' "$reply"
    check "QEMU holds no descriptor of the region" \
        sh -c "! ls -l /proc/$qemu_pid/fd | grep -q pseudo_lock"
}

# contains TEXT PATTERN: whether TEXT has a line that matches PATTERN
# (TEXT may hold any quotes, as QEMU's error messages do)
contains() {
    printf '%s\n' "$1" | grep -q -e "$2"
}

# contains_return REPLY: whether a QMP reply is a success
contains_return() {
    case $1 in *'"return"'*) return 0 ;; esac
    return 1
}

# ordinary_memory_reads LEVEL CBM WAYS NOISE: the cache model's baseline.
# Mount resctrl with the default group on ways 0-7 of both caches of
# LEVEL (2 or 3), start the noisy neighbour on CPU 1 streaming NOISE
# bytes ($noise is its pid), and have CPU 0 read $size bytes of ordinary
# memory $rounds times after $pause ms, first in the neighbour's class
# ("plain"), then in group catonly, which holds CBM (WAYS, as text)
# exclusively ("catonly")
ordinary_memory_reads() {
    level=$1 cbm=$2 ways=$3
    mount -t resctrl resctrl /sys/fs/resctrl
    echo "L$level:0=00ff;1=00ff" >/sys/fs/resctrl/schemata
    check_eq "the default group keeps ways 0-7 of both L$level caches" \
        "L$level:0=00ff;1=00ff" \
        "$(sed -n "s/^ *//; /^L$level:/p" /sys/fs/resctrl/schemata)"

    taskset -c 1 /rig/bin/cache-probe noise "$4" &
    noise=$!

    step "ordinary memory, in the neighbour's class"
    check "the reader reads ordinary memory" \
        taskset -c 0 /rig/bin/cache-probe read plain $size - $rounds $pause

    step "ordinary memory in a class with $ways to itself"
    mkdir /sys/fs/resctrl/catonly &&
        echo "L$level:0=$cbm;1=$cbm" >/sys/fs/resctrl/catonly/schemata &&
        echo exclusive >/sys/fs/resctrl/catonly/mode
    check_eq "group catonly holds $ways, exclusively" \
        exclusive "$(cat /sys/fs/resctrl/catonly/mode)"
    check "the reader reads ordinary memory in that class" \
        sh -c "echo \$\$ >/sys/fs/resctrl/catonly/tasks &&
               exec taskset -c 0 /rig/bin/cache-probe read catonly $size - $rounds $pause"
    rmdir /sys/fs/resctrl/catonly
}

# reader_start CPU DEVICE SIZE: a cache-probe reader on CPU that maps
# DEVICE (SIZE bytes) once and obeys ask(): every mmap of the device
# zeroes the region from the calling CPU, which would write evicted lines
# back into that CPU's class's ways, so one reader keeps one mapping
reader_start() {
    mkfifo /tmp/reader.in
    taskset -c "$1" /rig/bin/cache-probe reader "$2" "$3" \
        </tmp/reader.in >/tmp/reader.out &
    reader=$!
    exec 3>/tmp/reader.in
    asked=0
}

# ask COMMAND: have the reader run COMMAND, and wait until it has
ask() {
    asked=$((asked + 1))
    echo "$*" >&3
    while [ "$(grep -c '^done' /tmp/reader.out)" -lt $asked ]; do
        kill -0 $reader 2>/dev/null || return 1
        sleep 0.1
    done
}

# reader_stop: end the reader; fails if it did not quit cleanly
reader_stop() {
    exec 3>&-
    wait $reader
}

# lock_region_p0: mount resctrl and pseudo-lock ways 8-15 of L2 cache 0
# (the Goldmont host's 16-way L2) as group p0, the default group keeping
# ways 0-7; sets $size and $cpus (the cache's CPUs)
lock_region_p0() {
    mount -t resctrl resctrl /sys/fs/resctrl &&
        echo 'L2:0=00ff' >/sys/fs/resctrl/schemata &&
        pseudo_lock p0 'L2:0=ff00' || return 1
    size=$(sed -n 's/.*L2:0=//p' /sys/fs/resctrl/p0/size)
    cpus=$(cat /sys/fs/resctrl/p0/cpus_list)
    diag "region p0: $size bytes on L2 cache 0, CPUs $cpus"
}

# guest_says FILE TEXT: the rest of the first "guest: hot-plug: TEXT" line
# that a nested real-time guest (rt-guest/init) reported into FILE,
# without the serial line's CR
guest_says() {
    tr -d '\r' <"$1" | sed -n "s|^guest: hot-plug: $2||p" | head -n 1
}
