# SPDX-License-Identifier: GPL-2.0-or-later
#
# The patched libvirt on the emulated Goldmont host, as a management
# stack runs it: virtqemud started by hand (no systemd), virsh over its
# socket.  What it reports of the host's cache allocation, and a domain
# it runs with the fork's QEMU under libvirt's own conditions: QEMU as an
# unprivileged user, in its seccomp sandbox, in its own mount namespace
# with a private /dev; a daemon killed with SIGKILL and started again
# finds the domain still running.  libvirt lives at its staging prefix,
# named by rig.libvirt_prefix=.

P=$(cmdline_arg libvirt_prefix)
R=/sys/fs/resctrl
export PATH="$P/bin:$P/sbin:$PATH"
# nobody: libvirt runs QEMU as this user and group
QEMU_UID=65534
virsh="virsh -c qemu:///system"

# wait_for TRIES COMMAND...: retry COMMAND once a second
wait_for() {
    tries=$1
    shift
    while [ "$tries" -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        tries=$((tries - 1))
        sleep 1
    done
    return 1
}

# start_daemon: virtqemud in the background, its warnings and errors in
# /tmp/virtqemud.log; fails when it exits or does not answer in 240 s
# (its first start probes QEMU, which takes a minute under nested TCG)
start_daemon() {
    started=$(date +%s)
    LIBVIRT_LOG_OUTPUTS="3:file:/tmp/virtqemud.log 1:file:/tmp/virtqemud-debug.log" \
        LIBVIRT_LOG_FILTERS="1:qemu 1:util.command 1:rpc 1:daemon 1:util.virfile 3:*" \
        virtqemud --pid-file /run/virtqemud.pid >>/tmp/virtqemud.out 2>&1 &
    daemon_pid=$!
    tries=240
    while [ $tries -gt 0 ]; do
        if $virsh version >/dev/null 2>&1; then
            diag "virtqemud answered after $(($(date +%s) - started)) s"
            return 0
        fi
        kill -0 $daemon_pid 2>/dev/null || break
        tries=$((tries - 1))
        sleep 1
    done
    diag "virtqemud: $(tail -n 20 /tmp/virtqemud.out /tmp/virtqemud.log 2>&1)"
    diag "virsh: $($virsh version 2>&1)"
    diag "$(ps -o pid,user,args | grep -v ' \[')"
    diag "$(ls -la "$P/var/run/libvirt" 2>&1)"
    diag "$(grep -v 'virFileClose\|virObject' /tmp/virtqemud-debug.log | tail -n 60)"
    return 1
}

# The QEMU process of a running domain, from libvirt's own pid file
domain_pid() {
    cat "$P/var/run/libvirt/qemu/$1.pid" 2>/dev/null
}

if ! [ -x "$P/sbin/virtqemud" ]; then
    echo "Bail out! no libvirt at '$P' in the initramfs"
    return 0
fi
mount -t resctrl resctrl $R || { echo "Bail out! resctrl does not mount"; return 0; }
mkdir -p /run /var/tmp
mount -t tmpfs tmpfs /run

# libvirt looks up root and the QEMU driver's built-in user and group
# (Debian's libvirt-qemu) by name, even when qemu.conf overrides them.
cat >>/etc/passwd <<EOF
root:x:0:0:root:/root:/bin/sh
libvirt-qemu:x:64055:64055:libvirt QEMU:/nonexistent:/bin/false
nobody:x:$QEMU_UID:$QEMU_UID:nobody:/nonexistent:/bin/false
EOF
cat >>/etc/group <<EOF
root:x:0:
libvirt-qemu:x:64055:
nogroup:x:$QEMU_UID:
EOF

# The QEMU driver's configuration: QEMU runs as nobody; its standard
# output goes to a file rather than through virtlogd, which this rig
# does not run.  Everything else is libvirt's default: DAC labelling,
# the seccomp sandbox, a mount namespace with a private /dev.
mkdir -p "$P/etc/libvirt"
cat >"$P/etc/libvirt/qemu.conf" <<EOF
user = "+$QEMU_UID"
group = "+$QEMU_UID"
stdio_handler = "file"
EOF

if ! start_daemon; then
    not_ok "virtqemud starts and virsh reaches it"
    done_testing
    return 0
fi
ok "virtqemud starts and virsh reaches it"
diag "$($virsh version 2>&1)"

# --- capabilities: the host's caches, from sysfs and resctrl ---------------

$virsh capabilities >/tmp/caps.xml 2>&1
check "virsh capabilities lists L2 cache bank 0 with CPUs 0-1" \
    grep -q "<bank id='0' level='2' type='both' size='2' unit='MiB' cpus='0-1'>" /tmp/caps.xml
check "and bank 1 with CPUs 2-3" \
    grep -q "<bank id='1' level='2' type='both' size='2' unit='MiB' cpus='2-3'>" /tmp/caps.xml
check "and the allocation control resctrl offers (a way of 128 KiB)" \
    grep -q "<control granularity='128' unit='KiB' type='both' maxAllocs='8'/>" /tmp/caps.xml
grep -q "<control" /tmp/caps.xml || diag "$(sed -n '/<cache>/,/<\/cache>/p' /tmp/caps.xml)"

# What each bank offers for pseudo-locking, from resctrl's bit_usage: a
# way of 128 KiB, and nothing free while the default group holds every way
sed -n "/<bank id='0' level='2'/,/<\/bank>/p" /tmp/caps.xml >/tmp/bank0.xml
check "bank 0 can pseudo-lock ways of 128 KiB, none free yet" \
    grep -q "<pseudolock granularity='128' maxSize='0' unit='KiB'/>" /tmp/bank0.xml
# The default group shrunk to ways 0-7 on both caches, and ways 8-15 of
# cache 0 pseudo-locked: bank 0 shows the 1 MiB region, bank 1 its eight
# free ways
echo 'L2:0=00ff;1=00ff' >$R/schemata
pseudo_lock p0 'L2:0=ff00'
$virsh capabilities >/tmp/caps.xml 2>&1
sed -n "/<bank id='0' level='2'/,/<\/bank>/p" /tmp/caps.xml >/tmp/bank0.xml
check "with p0 locked, bank 0 has no free ways" \
    grep -q "<pseudolock granularity='128' maxSize='0' unit='KiB'>" /tmp/bank0.xml
check "and reports the 1 MiB region" \
    grep -q "<region size='1024' unit='KiB'/>" /tmp/bank0.xml
check "and bank 1 a free run of 1 MiB" \
    grep -q "<pseudolock granularity='128' maxSize='1024' unit='KiB'/>" /tmp/caps.xml
grep -q "<region" /tmp/caps.xml || diag "$(sed -n '/<cache>/,/<\/cache>/p' /tmp/caps.xml)"
rmdir $R/p0
echo 'L2:0=ffff;1=ffff' >$R/schemata

$virsh domcapabilities --virttype qemu >/tmp/domcaps.xml 2>&1
check "virsh domcapabilities probes the fork's QEMU" \
    grep -q "<path>/usr/bin/qemu-system-x86_64</path>" /tmp/domcaps.xml
grep -q "<path>" /tmp/domcaps.xml || diag "$(head -n 20 /tmp/domcaps.xml)"

# --- a domain, under libvirt's conditions ----------------------------------

cat >/tmp/rt0.xml <<EOF
<domain type='qemu'>
  <name>rt0</name>
  <memory unit='MiB'>64</memory>
  <vcpu placement='static' cpuset='0-1'>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
  </os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
$virsh define /tmp/rt0.xml >/tmp/define.out 2>&1
check_eq "virsh define takes the domain" 0 $?
$virsh start rt0 >/tmp/start.out 2>&1
rc=$?
check_eq "virsh start runs it" 0 $rc
[ $rc = 0 ] || diag "$(cat /tmp/start.out; tail -n 20 "$P/var/log/libvirt/qemu/rt0.log" 2>/dev/null)"

pid=$(domain_pid rt0)
if [ -z "$pid" ] || ! [ -d "/proc/$pid" ]; then
    not_ok "libvirt knows its running QEMU's pid"
    done_testing
    return 0
fi
ok "libvirt knows its running QEMU's pid"
check_eq "QEMU runs as nobody, not root" "$QEMU_UID" \
    "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)"
check_eq "QEMU runs under a seccomp filter" 2 \
    "$(sed -n 's/^Seccomp:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null)"
check "libvirt passed -sandbox with resourcecontrol=deny" \
    sh -c "tr '\\0' ' ' </proc/$pid/cmdline | grep -q 'resourcecontrol=deny'"
check "QEMU has its own mount namespace" \
    [ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]
check "with a private /dev: /dev/null, but not the host's /dev/ttyS1" \
    sh -c "[ -c /proc/$pid/root/dev/null ] && ! [ -e /proc/$pid/root/dev/ttyS1 ]"
check "QEMU's affinity is the vCPU cpuset 0-1" \
    [ "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$pid/status")" = 0-1 ]

$virsh qemu-monitor-command rt0 '{"execute": "query-pseudolock"}' >/tmp/ql.out 2>&1
check "QEMU answers query-pseudolock through libvirt (no regions)" \
    grep -q '"return":\[\]' /tmp/ql.out
diag "$(cat /tmp/ql.out)"

# --- the daemon killed and started again ----------------------------------

kill -9 $daemon_pid
sleep 1
check "QEMU outlives its daemon's SIGKILL" [ -d "/proc/$pid" ]
rm -f /run/virtqemud.pid
start_daemon
check_eq "virtqemud starts again" 0 $?
check "and reconnects: rt0 is running" \
    sh -c "$virsh domstate rt0 2>&1 | grep -q running"
check_eq "with the same QEMU" "$pid" "$(domain_pid rt0)"

$virsh destroy rt0 >/dev/null 2>&1
check_eq "virsh destroy stops it" 0 $?
check "and its QEMU is gone" wait_for 10 sh -c "! [ -d /proc/$pid ]"
$virsh undefine rt0 >/dev/null 2>&1
check_eq "virsh undefine removes it" 0 $?
check_eq "no resctrl group is left" "" \
    "$(find $R -mindepth 1 -maxdepth 1 -type d ! -name info ! -name mon_groups ! -name mon_data)"

kill $daemon_pid 2>/dev/null
umount $R
done_testing
