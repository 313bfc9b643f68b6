# SPDX-License-Identifier: GPL-2.0-or-later
#
# The patched libvirt on the emulated Goldmont host, as a management
# stack runs it: libvirtd started by hand (no systemd), virsh over its
# socket.  What it reports of the host's cache allocation, and a domain
# it runs with the fork's QEMU under libvirt's own conditions: QEMU as an
# unprivileged user, in its seccomp sandbox, in its own mount namespace
# with a private /dev; a daemon killed with SIGKILL and started again
# finds the domain still running.  libvirt is unpacked from the packages
# of make libvirt-deb, at Debian's paths; Debian builds the monolithic
# libvirtd, not the modular daemons.

R=/sys/fs/resctrl
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

# start_daemon: libvirtd in the background, its warnings and errors in
# /tmp/libvirtd.log; fails when it exits or does not answer in 240 s
# (its first start probes QEMU, which takes a minute under nested TCG)
start_daemon() {
    started=$(date +%s)
    LIBVIRT_LOG_OUTPUTS="3:file:/tmp/libvirtd.log 1:file:/tmp/libvirtd-debug.log" \
        LIBVIRT_LOG_FILTERS="1:qemu 1:util.command 1:rpc 1:daemon 1:util.virfile 3:*" \
        libvirtd --pid-file /run/libvirtd.pid >>/tmp/libvirtd.out 2>&1 &
    daemon_pid=$!
    tries=240
    while [ $tries -gt 0 ]; do
        if $virsh version >/dev/null 2>&1; then
            diag "libvirtd answered after $(($(date +%s) - started)) s"
            return 0
        fi
        kill -0 $daemon_pid 2>/dev/null || break
        tries=$((tries - 1))
        sleep 1
    done
    diag "libvirtd: $(tail -n 20 /tmp/libvirtd.out /tmp/libvirtd.log 2>&1)"
    diag "virsh: $($virsh version 2>&1)"
    diag "$(ps -o pid,user,args | grep -v ' \[')"
    diag "$(ls -la /run/libvirt 2>&1)"
    diag "$(grep -v 'virFileClose\|virObject' /tmp/libvirtd-debug.log | tail -n 60)"
    return 1
}

# The QEMU process of a running domain, from libvirt's own pid file
domain_pid() {
    cat "/run/libvirt/qemu/$1.pid" 2>/dev/null
}

# resctrl_groups: the resctrl groups there are, besides the default one
resctrl_groups() {
    find $R -mindepth 1 -maxdepth 1 -type d ! -name info ! -name mon_groups ! -name mon_data |
        sed 's|.*/||' | sort | tr '\n' ' '
}

# region_group: the group of the region in the domain XML on stdin, from
# its <path>; libvirt adds that to the live XML of a <cache> source
region_group() {
    sed -n 's|.*<path>/dev/pseudo_lock/\(.*\)</path>.*|\1|p'
}

# define_start NAME XML WHAT: virsh define XML (a domain that is WHAT)
# and virsh start NAME, one check each; pid is then its QEMU's
define_start() {
    $virsh define "$2" >/tmp/define.out 2>&1
    check_eq "virsh define takes $3" 0 $?
    $virsh start "$1" >/tmp/start.out 2>&1
    rc=$?
    check_eq "virsh start runs it" 0 $rc
    [ $rc = 0 ] || diag "$(cat /tmp/define.out /tmp/start.out
                            tail -n 20 "/var/log/libvirt/qemu/$1.log" 2>/dev/null)"
    pid=$(domain_pid "$1")
}

if ! [ -x /usr/sbin/libvirtd ]; then
    echo "Bail out! no libvirtd in the initramfs"
    return 0
fi
mount -t resctrl resctrl $R || { echo "Bail out! resctrl does not mount"; return 0; }
mkdir -p /run /var/tmp
mount -t tmpfs tmpfs /run
# libvirt's clients look for the daemon's socket below /var/run, its
# daemons put it below /run: one place on Debian, as here
[ -e /var/run ] || ln -s /run /var/run

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
cat >/etc/libvirt/qemu.conf <<EOF
user = "+$QEMU_UID"
group = "+$QEMU_UID"
stdio_handler = "file"
EOF

if ! start_daemon; then
    not_ok "libvirtd starts and virsh reaches it"
    done_testing
    return 0
fi
ok "libvirtd starts and virsh reaches it"
diag "$($virsh version 2>&1)"

# --- capabilities: the host's caches, from sysfs and resctrl ---------------
step "libvirt's capabilities: what each cache bank can pseudo-lock"

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
# The default group shrunk to ways 0-7 on both caches, and ways 12-15
# of cache 0 pseudo-locked: bank 0 shows the 512 KiB region, and offers
# none in its four free ways (Linux locks one region per cache
# hierarchy); bank 1 offers its eight free ways
echo 'L2:0=00ff;1=00ff' >$R/schemata
pseudo_lock p0 'L2:0=f000'
$virsh capabilities >/tmp/caps.xml 2>&1
sed -n "/<bank id='0' level='2'/,/<\/bank>/p" /tmp/caps.xml >/tmp/bank0.xml
check "with p0 locked, bank 0 offers no second region in its free ways" \
    grep -q "<pseudolock granularity='128' maxSize='0' unit='KiB'>" /tmp/bank0.xml
check "and reports the 512 KiB region, held by group p0" \
    grep -q "<region size='512' unit='KiB' group='p0'/>" /tmp/bank0.xml
check "and bank 1 a free run of 1 MiB" \
    grep -q "<pseudolock granularity='128' maxSize='1024' unit='KiB'/>" /tmp/caps.xml
mkdir $R/second
echo pseudo-locksetup >$R/second/mode
check_fails "  where the kernel indeed refuses a second region on bank 0" \
    sh -c "echo 'L2:0=0f00' >$R/second/schemata"
diag "kernel: $(cat $R/info/last_cmd_status)"
rmdir $R/second
grep -q "<region" /tmp/caps.xml || diag "$(sed -n '/<cache>/,/<\/cache>/p' /tmp/caps.xml)"
rmdir $R/p0
echo 'L2:0=ffff;1=ffff' >$R/schemata

$virsh domcapabilities --virttype qemu >/tmp/domcaps.xml 2>&1
check "virsh domcapabilities probes the fork's QEMU" \
    grep -q "<path>/usr/bin/qemu-system-x86_64</path>" /tmp/domcaps.xml
grep -q "<path>" /tmp/domcaps.xml || diag "$(head -n 20 /tmp/domcaps.xml)"
sed -n "/<memory supported='yes'>/,/<\/memory>/p" /tmp/domcaps.xml >/tmp/domcaps-memory.xml
check "and lists its memory device models, pseudolock among them" \
    grep -q "<value>pseudolock</value>" /tmp/domcaps-memory.xml
diag "memory models: $(sed -n 's|.*<value>\(.*\)</value>.*|\1|p' /tmp/domcaps-memory.xml | tr '\n' ' ')"

# --- a domain, under libvirt's conditions ----------------------------------
step "A domain under libvirt's conditions: unprivileged QEMU, seccomp, private /dev"

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
define_start rt0 /tmp/rt0.xml "the domain"
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
step "The daemon killed with SIGKILL and started again"

kill -9 $daemon_pid
sleep 1
check "QEMU outlives its daemon's SIGKILL" [ -d "/proc/$pid" ]
rm -f /run/libvirtd.pid
start_daemon
check_eq "libvirtd starts again" 0 $?
check "and reconnects: rt0 is running" \
    sh -c "$virsh domstate rt0 2>&1 | grep -q running"
check_eq "with the same QEMU" "$pid" "$(domain_pid rt0)"

$virsh destroy rt0 >/dev/null 2>&1
check_eq "virsh destroy stops it" 0 $?
check "and its QEMU is gone" wait_for 10 sh -c "! [ -d /proc/$pid ]"
$virsh undefine rt0 >/dev/null 2>&1
check_eq "virsh undefine removes it" 0 $?
check_eq "no resctrl group is left" "" \
    "$(resctrl_groups)"

# --- a NUMA node that is a pseudo-locked region ---------------------------
step "A guest NUMA node that is an existing region (<source><path>)"

# rtpl: 768 KiB, six ways of L2 cache 0 (CPUs 0-1): whole ways, which
# libvirt must not round to the 1 MiB of other NUMA nodes
echo 'L2:0=00ff;1=00ff' >$R/schemata
pseudo_lock rtpl 'L2:0=fc00'
check_eq "the host pseudo-locked rtpl: 768 KiB on L2 cache 0" \
    "pseudo-locked 786432" "$(cat $R/rtpl/mode) $(sed -n 's/^ *L2:0=\([0-9]*\).*/\1/p' $R/rtpl/size)"

# region_mode: the mode of group rtpl, "pseudo-locked" while it holds
region_mode() {
    cat $R/rtpl/mode 2>/dev/null
}

# pl_domain NAME PATH SIZE_KIB: a domain whose node 1 is the region at
# PATH, with HMAT figures that make it the fast node, and the emulator
# and vCPU on the cache's CPUs (the kernel maps a region only for a
# thread that runs there)
pl_domain() {
    cat <<EOF
<domain type='qemu'>
  <name>$1</name>
  <memory unit='KiB'>$((65536 + $3))</memory>
  <vcpu placement='static' cpuset='0-1'>1</vcpu>
  <cputune>
    <emulatorpin cpuset='0-1'/>
  </cputune>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
  </os>
  <cpu>
    <numa>
      <cell id='0' cpus='0' memory='65536' unit='KiB'/>
      <cell id='1' memory='$3' unit='KiB'/>
      <interconnects>
        <latency initiator='0' target='0' type='access' value='100'/>
        <latency initiator='0' target='1' type='access' value='10'/>
      </interconnects>
    </numa>
  </cpu>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
    <memory model='pseudolock'>
      <source>
        <path>$2</path>
      </source>
      <target>
        <size unit='KiB'>$3</size>
        <node>1</node>
      </target>
    </memory>
  </devices>
</domain>
EOF
}

pl_domain rtpl /dev/pseudo_lock/rtpl 768 |
    sed "s|<size unit='KiB'>768<|<size unit='KiB'>1024<|" >/tmp/rtpl-bad.xml
$virsh define /tmp/rtpl-bad.xml >/tmp/define.out 2>&1
check_fails "virsh define refuses a region of another size than its node" \
    sh -c "$virsh dominfo rtpl >/dev/null 2>&1"
check "saying which sizes differ" \
    grep -q "differs from the memory of guest NUMA node 1" /tmp/define.out
diag "$(cat /tmp/define.out)"

# start_fails NAME XML PATTERN WHAT: a domain that virsh defines but
# does not start, with an error matching PATTERN; undefined again
start_fails() {
    $virsh define "$2" >/dev/null 2>&1
    $virsh start "$1" >/tmp/start.out 2>&1
    check "$4: $(grep -o 'error: [^:]*: .*' /tmp/start.out | tail -n 1)" \
        grep -q "$3" /tmp/start.out
    $virsh undefine "$1" >/dev/null 2>&1
}

# A node larger than the region, the emulator or the node's vCPU pinned
# beyond the cache's CPUs: libvirt checks before QEMU runs
pl_domain rtbig /dev/pseudo_lock/rtpl 1024 >/tmp/rtbig.xml
start_fails rtbig /tmp/rtbig.xml \
    "region 'rtpl' is 768 KiB, and memory device 'pseudolock0' 1024 KiB" \
    "a node larger than the region does not start"
pl_domain rtpin /dev/pseudo_lock/rtpl 768 |
    sed "s|<emulatorpin cpuset='0-1'/>|<emulatorpin cpuset='2'/>|" >/tmp/rtpin.xml
start_fails rtpin /tmp/rtpin.xml "which Linux allows only on the cache's CPUs 0-1" \
    "nor one whose emulator runs on CPU 2"
pl_domain rtvcpu /dev/pseudo_lock/rtpl 768 |
    sed -e "s|cpuset='0-1'>1</vcpu>|cpuset='0-1'>2</vcpu>|" \
        -e "s|<cell id='1' memory|<cell id='1' cpus='1' memory|" \
        -e "s|<emulatorpin cpuset='0-1'/>|<vcpupin vcpu='1' cpuset='3'/><emulatorpin cpuset='0-1'/>|" \
        >/tmp/rtvcpu.xml
start_fails rtvcpu /tmp/rtvcpu.xml \
    "vCPU 1 of guest NUMA node 1 is pinned outside CPUs 0-1 of L2 cache 0" \
    "nor one whose node-1 vCPU is pinned to CPU 3"

pl_domain rtpl /dev/pseudo_lock/rtpl 768 >/tmp/rtpl.xml
define_start rtpl /tmp/rtpl.xml "a domain whose node 1 is the region"
$virsh dumpxml --inactive rtpl >/tmp/rtpl-dump.xml 2>&1
check "its XML keeps the region's device" \
    grep -q "<path>/dev/pseudo_lock/rtpl</path>" /tmp/rtpl-dump.xml
check "and node 1's 768 KiB, not rounded to 1 MiB" \
    grep -q "<cell id='1' memory='768' unit='KiB'/>" /tmp/rtpl-dump.xml
tr '\0' ' ' </proc/$pid/cmdline >/tmp/rtpl.cmdline 2>/dev/null
check "libvirt passed the region to QEMU as a descriptor (-add-fd)" \
    grep -q -- "-add-fd set=[0-9]*,fd=[0-9]*,opaque=pseudolock0" /tmp/rtpl.cmdline
check "and node 1's backend maps it as /dev/fdset/N" \
    grep -q '"qom-type":"memory-backend-pseudolock","id":"ram-node1","path":"/dev/fdset/[0-9]*","size":786432' \
    /tmp/rtpl.cmdline
grep -q pseudolock /tmp/rtpl.cmdline || diag "$(cat /tmp/rtpl.cmdline)"
check "-m is the nodes' sum exactly, 66304 KiB" grep -q -- "-m size=66304k" /tmp/rtpl.cmdline
check_eq "QEMU runs as nobody" "$QEMU_UID" \
    "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)"
check "in a private /dev without /dev/pseudo_lock" \
    sh -c "[ -c /proc/$pid/root/dev/null ] && ! [ -e /proc/$pid/root/dev/pseudo_lock ]"
$virsh qemu-monitor-command rtpl '{"execute": "query-pseudolock"}' >/tmp/ql.out 2>&1
diag "query-pseudolock: $(cat /tmp/ql.out)"
check "QEMU maps all of region rtpl as node 1's memory" \
    sh -c 'grep -q "\"group\":\"rtpl\"" /tmp/ql.out &&
           grep -q "\"mapped-size\":786432" /tmp/ql.out &&
           grep -q "\"id\":\"ram-node1\"" /tmp/ql.out'
check "and finds it locked" grep -q '"locked":true' /tmp/ql.out
$virsh qemu-monitor-command --hmp rtpl 'info numa' >/tmp/numa.out 2>&1
diag "info numa: $(tr '\n' ';' </tmp/numa.out)"
check "the guest has 2 NUMA nodes" grep -q "^2 nodes" /tmp/numa.out

# A second domain on the same region: QEMU refuses it, and neither the
# region nor the running domain is touched
sed -e 's|<name>rtpl<|<name>rtpl2<|' /tmp/rtpl.xml >/tmp/rtpl2.xml
$virsh define /tmp/rtpl2.xml >/dev/null 2>&1
$virsh start rtpl2 >/tmp/start2.out 2>&1
check_fails "a second domain cannot start on the same region" \
    sh -c "$virsh domstate rtpl2 2>&1 | grep -q running"
diag "$(grep -o 'error:.*' /tmp/start2.out | head -n 3)"
check "rtpl still runs" sh -c "$virsh domstate rtpl | grep -q running"
check_eq "and the region is still locked" pseudo-locked "$(region_mode)"
$virsh undefine rtpl2 >/dev/null 2>&1

$virsh destroy rtpl >/dev/null 2>&1
check "virsh destroy stops it" wait_for 10 sh -c "! [ -d /proc/$pid ]"
check_eq "the region is the host's, and stays locked" pseudo-locked "$(region_mode)"
$virsh undefine rtpl >/dev/null 2>&1

# A path that is not a region's device
pl_domain rtnull /dev/null 768 >/tmp/rtnull.xml
start_fails rtnull /tmp/rtnull.xml "'/dev/null' is not the device of a pseudo-locked region" \
    "a domain whose region is /dev/null does not start"

check "the host removes its region once no domain uses it" rmdir $R/rtpl

# --- a region libvirt creates ----------------------------------------------
step "A region libvirt creates (<source><cache>), and what it refuses"

# pl_cache_domain NAME SIZE_KIB [EMULATOR_CPUS]: pl_domain's layout, with
# the region created by libvirt on L2 cache 0
pl_cache_domain() {
    pl_domain "$1" /dev/null "$2" |
        sed -e "s|<path>/dev/null</path>|<cache id='0' level='2'/>|" \
            -e "s|<emulatorpin cpuset='0-1'/>|<emulatorpin cpuset='${3:-0-1}'/>|"
}

# Ways 8-15 of cache 0 are free (the default group has ways 0-7)
pl_cache_domain rtcache 768 >/tmp/rtcache.xml
define_start rtcache /tmp/rtcache.xml "a domain whose node 1 libvirt creates on L2 cache 0"
$virsh dumpxml rtcache >/tmp/rtcache-live.xml 2>&1
group=$(region_group </tmp/rtcache-live.xml)
diag "live XML: $(sed -n "/<memory model='pseudolock'>/,/<\/memory>/p" /tmp/rtcache-live.xml | tr -s ' ' | tr -d '\n')"
check "the live XML names the region's device, /dev/pseudo_lock/$group" \
    sh -c "[ -n '$group' ] && [ -c '/dev/pseudo_lock/$group' ]"
check_eq "libvirt locked 768 KiB in group $group" \
    "pseudo-locked 786432" \
    "$(cat $R/$group/mode 2>&1) $(sed -n 's/^ *L2:0=\([0-9]*\).*/\1/p' $R/$group/size)"
check "in the six highest free ways" \
    sh -c "tr -d ' ' <$R/$group/schemata | grep -q '^L2:0=fc00'"
diag "schemata of $group: $(cat $R/$group/schemata 2>&1 | tr -d ' ' | tr '\n' ' '); bit_usage: $(cat $R/info/L2/bit_usage)"
$virsh qemu-monitor-command rtcache '{"execute": "query-pseudolock"}' >/tmp/ql.out 2>&1
check "QEMU maps all of it as node 1's memory" \
    sh -c "grep -q '\"group\":\"$group\"' /tmp/ql.out && grep -q '\"mapped-size\":786432' /tmp/ql.out"
grep -q mapped-size /tmp/ql.out || diag "query-pseudolock: $(cat /tmp/ql.out)"

# The daemon killed: the region stays the domain's, and destroy after the
# restart still removes it
kill -9 $daemon_pid
sleep 1
rm -f /run/libvirtd.pid
start_daemon
check "after the daemon's SIGKILL and restart, rtcache still runs" \
    sh -c "$virsh domstate rtcache 2>&1 | grep -q running"
check_eq "with its region" pseudo-locked "$(cat $R/$group/mode 2>&1)"
$virsh destroy rtcache >/dev/null 2>&1
check "virsh destroy stops it" wait_for 10 sh -c "! [ -d /proc/$pid ]"
check "and removes the region libvirt created" wait_for 5 sh -c "! [ -d $R/$group ]"

# QEMU killed behind libvirt's back: libvirt sees it die and removes the
# region too
$virsh start rtcache >/dev/null 2>&1
pid=$(domain_pid rtcache)
group=$($virsh dumpxml rtcache 2>/dev/null | region_group)
check "started again, with region $group" sh -c "[ -n '$group' ] && [ -d '$R/$group' ]"

# Saving the domain's memory would write the region back from CPUs
# outside its cache when it is loaded: libvirt refuses, and says why
$virsh save rtcache /tmp/rtcache.save >/tmp/save.out 2>&1
check "virsh save is refused: $(grep -o 'error:.*' /tmp/save.out | tail -n 1)" \
    grep -q "node 1 is a pseudo-locked region: it cannot be migrated, saved or snapshotted" /tmp/save.out
$virsh managedsave rtcache >/tmp/save.out 2>&1
check "so is virsh managedsave" \
    grep -q "node 1 is a pseudo-locked region" /tmp/save.out
$virsh snapshot-create-as rtcache s1 --memspec file=/tmp/s1.mem,snapshot=external \
    >/tmp/save.out 2>&1
check "and a snapshot with the memory" \
    grep -q "node 1 is a pseudo-locked region" /tmp/save.out
grep -q "pseudo-locked" /tmp/save.out || diag "$(cat /tmp/save.out)"
check "rtcache still runs, on its region" \
    sh -c "$virsh domstate rtcache | grep -q running && [ -d '$R/$group' ]"
kill -9 $pid
check "after QEMU's SIGKILL, libvirt marks rtcache shut off" \
    wait_for 15 sh -c "$virsh domstate rtcache 2>&1 | grep -q 'shut off'"
check "and removes its region" wait_for 5 sh -c "! [ -d $R/$group ]"

# Both killed, the daemon first and then QEMU, with no daemon to see it:
# the restarted daemon finds the domain gone and removes the region that
# only its status XML still names
$virsh start rtcache >/dev/null 2>&1
pid=$(domain_pid rtcache)
group=$($virsh dumpxml rtcache 2>/dev/null | region_group)
kill -9 $daemon_pid
sleep 1
kill -9 $pid
rm -f /run/libvirtd.pid
sleep 1
check_eq "with the daemon and then QEMU killed, region $group stays" \
    pseudo-locked "$(cat $R/$group/mode 2>&1)"
start_daemon
check "the restarted daemon finds rtcache shut off" \
    wait_for 15 sh -c "$virsh domstate rtcache 2>&1 | grep -q 'shut off'"
check "and removes the region" wait_for 5 sh -c "! [ -d $R/$group ]"

# The daemon killed while it starts the domain, after creating the
# region and before saving the domain's status, its only record of the
# region (a start hook kills it there): the restarted daemon finds the
# domain shut off and removes the region that nothing names any more.
# Hooks are found when the daemon starts, so it starts again first.
mkdir -p /etc/libvirt/hooks
cat >/etc/libvirt/hooks/qemu <<'EOF'
#!/bin/sh
# (the scenario's) kill the daemon when rtcache starts, if asked to
[ "$1 $2" = "rtcache start" ] && [ -e /tmp/kill-at-start ] &&
    kill -9 "$(cat /run/libvirtd.pid)"
exit 0
EOF
chmod +x /etc/libvirt/hooks/qemu
kill $daemon_pid
wait $daemon_pid 2>/dev/null
rm -f /run/libvirtd.pid
start_daemon
touch /tmp/kill-at-start
$virsh start rtcache >/tmp/start.out 2>&1
rm -f /tmp/kill-at-start
check "the daemon dies at rtcache's start hook" \
    wait_for 10 sh -c "! kill -0 $daemon_pid 2>/dev/null"
rm -f /run/libvirtd.pid
left=$(cd $R && ls -d qemu-[0-9]*-rtcache-* 2>/dev/null)
check "leaving rtcache's region ${left:-(none)}, which no status names" \
    sh -c "[ -n '$left' ] && [ \"\$(cat $R/$left/mode)\" = pseudo-locked ]"
start_daemon
check "the restarted daemon finds rtcache shut off" \
    sh -c "$virsh domstate rtcache 2>&1 | grep -q 'shut off'"
check "and removes the region" sh -c "! [ -d '$R/${left:-none}' ]"
diag "$(grep 'pseudo-locked region' /tmp/libvirtd.log | tail -n 2)"

# Bad input: nothing is left behind
groups_before=$(resctrl_groups)
pl_cache_domain rtbig 1152 >/tmp/rtbig.xml
$virsh define /tmp/rtbig.xml >/dev/null 2>&1
$virsh start rtbig >/tmp/start.out 2>&1
check "nine ways, when eight are free, are refused: $(grep -o 'error:.*' /tmp/start.out | tail -n 1)" \
    grep -q "has no 9 free ways in a row" /tmp/start.out
$virsh undefine rtbig >/dev/null 2>&1
pl_cache_domain rtodd 700 >/tmp/rtodd.xml
$virsh define /tmp/rtodd.xml >/dev/null 2>&1
$virsh start rtodd >/tmp/start.out 2>&1
check "700 KiB, not whole ways, is refused: $(grep -o 'error:.*' /tmp/start.out | tail -n 1)" \
    grep -q "is not whole ways of L2 cache 0, whose ways are 128 KiB each" /tmp/start.out
$virsh undefine rtodd >/dev/null 2>&1
pl_cache_domain rtpin 768 0-3 >/tmp/rtpin.xml
$virsh define /tmp/rtpin.xml >/dev/null 2>&1
$virsh start rtpin >/tmp/start.out 2>&1
check "an emulator pinned to CPUs 0-3, beyond the cache's, is refused: $(grep -o 'error:.*' /tmp/start.out | tail -n 1)" \
    grep -q "allows only on the cache's CPUs 0-1" /tmp/start.out
$virsh undefine rtpin >/dev/null 2>&1
sed -e "s|<cache id='0' level='2'/>|<cache id='7' level='2'/>|" /tmp/rtcache.xml |
    sed -e 's|<name>rtcache<|<name>rtnobank<|' >/tmp/rtnobank.xml
$virsh define /tmp/rtnobank.xml >/dev/null 2>&1
$virsh start rtnobank >/tmp/start.out 2>&1
check "a cache the host does not have is refused: $(grep -o 'error:.*' /tmp/start.out | tail -n 1)" \
    grep -q "the host has no L2 cache 7" /tmp/start.out
$virsh undefine rtnobank >/dev/null 2>&1
check_eq "no resctrl group is left by the failed starts" "$groups_before" "$(resctrl_groups)"
$virsh undefine rtcache >/dev/null 2>&1

# --- the real-time guest of make demo, from domain XML ---------------------
step "The real-time guest, booted by libvirt from domain XML"

# The rig's real-time guest (rt-guest/init) booted by libvirt: node 0 has
# the vCPUs and 64 MiB, node 1 is a 768 KiB region libvirt creates, node
# 2 takes the firmware's tables at the top of RAM so that all of node 1
# is the guest's; HMAT makes node 1 the fast one, which needs ACPI.  The
# guest reports on its second serial port, then waits for the host to
# hot-plug a DIMM and an NVDIMM (rt.hotplug), for which the domain has
# memory slots.
guest_timeout=$(cmdline_arg guest_timeout)
guest_timeout=${guest_timeout:-300}
cat >/tmp/rtguest.xml <<EOF
<domain type='qemu'>
  <name>rtguest</name>
  <maxMemory slots='2' unit='KiB'>1048576</maxMemory>
  <memory unit='KiB'>70400</memory>
  <vcpu placement='static' cpuset='0-1'>2</vcpu>
  <cputune>
    <emulatorpin cpuset='0-1'/>
  </cputune>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>/rig/rt-guest/vmlinuz</kernel>
    <initrd>/rig/rt-guest/initramfs.cpio.gz</initrd>
    <cmdline>console=ttyS0 rt.bind=196608 rt.hotplug=120</cmdline>
  </os>
  <features>
    <acpi/>
  </features>
  <cpu>
    <numa>
      <cell id='0' cpus='0-1' memory='65536' unit='KiB'/>
      <cell id='1' memory='768' unit='KiB'/>
      <cell id='2' memory='4096' unit='KiB'/>
      <interconnects>
        <latency initiator='0' target='0' type='access' value='100'/>
        <latency initiator='0' target='1' type='access' value='10'/>
        <latency initiator='0' target='2' type='access' value='100'/>
        <bandwidth initiator='0' target='0' type='access' value='10485760' unit='KiB'/>
        <bandwidth initiator='0' target='1' type='access' value='104857600' unit='KiB'/>
        <bandwidth initiator='0' target='2' type='access' value='10485760' unit='KiB'/>
      </interconnects>
    </numa>
  </cpu>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
    <serial type='file'>
      <source path='/tmp/rtguest-console.log'/>
      <target port='0'/>
    </serial>
    <serial type='file'>
      <source path='/tmp/rtguest.out'/>
      <target port='1'/>
    </serial>
    <memory model='pseudolock'>
      <source>
        <cache id='0' level='2'/>
      </source>
      <target>
        <size unit='KiB'>768</size>
        <node>1</node>
      </target>
    </memory>
  </devices>
</domain>
EOF
diag "the domain XML:"
diag "$(sed 's/^/    /' /tmp/rtguest.xml)"
rm -f /tmp/rtguest.out /tmp/rtguest-console.log
t_boot=$(date +%s)
define_start rtguest /tmp/rtguest.xml "the real-time guest's domain"
group=$($virsh dumpxml rtguest 2>/dev/null | region_group)

# wait_guest PATTERN SECONDS: until the guest's report has a line that
# matches PATTERN, for at most SECONDS, while the domain runs
wait_guest() {
    t_end=$(($(date +%s) + $2))
    while ! tr -d '\r' </tmp/rtguest.out 2>/dev/null | grep -q "$1" &&
          [ "$(date +%s)" -lt $t_end ] &&
          $virsh domstate rtguest 2>/dev/null | grep -q running; do
        sleep 1
    done
}

wait_guest "^guest: hot-plug: ready for a pc-dimm" $guest_timeout
check "the guest booted under libvirt and reported in $(($(date +%s) - t_boot)) s" \
    grep -q "^guest: reported" /tmp/rtguest.out
tr -d '\r' </tmp/rtguest.out 2>/dev/null | grep -v '^guest: hot-plug' |
    while read -r line; do diag "$line"; done
check "the guest sees node 1 of 786432 bytes, the region" \
    grep -q "^guest: node 1: CPUs '', present 786432 bytes" /tmp/rtguest.out
lat0=$(sed -n 's/^node 0: read latency //p' /tmp/rtguest.out | tr -d '\r')
lat1=$(sed -n 's/^node 1: read latency //p' /tmp/rtguest.out | tr -d '\r')
check "HMAT makes node 1 faster to read (${lat1:-?} ns) than node 0 (${lat0:-?} ns)" \
    test -n "$lat0" -a -n "$lat1" -a "${lat1:-0}" -lt "${lat0:-0}"
check "a buffer bound to node 1 lands there and holds its pattern" \
    grep -q "^bound 196608 bytes to node 1: all pages on node 1, pattern verified" /tmp/rtguest.out
grep -q "^guest: reported" /tmp/rtguest.out 2>/dev/null ||
    diag "guest console: $(tail -n 20 /tmp/rtguest-console.log 2>&1)"

# --- hot-plug: a second region, on L2 cache 1, as a DIMM and an NVDIMM ---
step "Hot-plug with virsh attach-device: a second region as a DIMM, then as an NVDIMM"

# module_xml TYPE SOURCE: a 512 KiB region, given by SOURCE (its <path>
# or <cache>), which the guest sees as TYPE (dimm or nvdimm) in node 0
module_xml() {
    cat <<EOF
<memory model='pseudolock'>
  <source>
    $2
  </source>
  <target type='$1'>
    <size unit='KiB'>512</size>
    <node>0</node>
  </target>
</memory>
EOF
}
# The DIMM is a region the host locked, the NVDIMM one libvirt creates
pseudo_lock rthot 'L2:1=f000'
check_eq "the host pseudo-locked rthot: 512 KiB on L2 cache 1" \
    "pseudo-locked 524288" "$(cat $R/rthot/mode) $(sed -n 's/^ *L2:1=\([0-9]*\).*/\1/p' $R/rthot/size)"
module_xml dimm "<path>/dev/pseudo_lock/rthot</path>" >/tmp/dimm.xml
module_xml nvdimm "<cache id='1' level='2'/>" >/tmp/nvdimm.xml
diag "the DIMM, for virsh attach-device:"
diag "$(sed 's/^/    /' /tmp/dimm.xml)"

# live_module TYPE: the live XML of the domain's module of TYPE
live_module() {
    $virsh dumpxml rtguest 2>/dev/null |
        awk -v type="$1" '/<memory model=.pseudolock.>/ { on = 1; m = "" }
            on { m = m $0 "\n" }
            on && /<\/memory>/ { on = 0; if (index(m, "type='\''" type "'\''")) printf "%s", m }'
}

groups_before=$(resctrl_groups)
$virsh attach-device rtguest /tmp/dimm.xml --live >/tmp/attach.out 2>&1
check "attach-device refuses a region on L2 cache 1 while the emulator is pinned to cache 0" \
    grep -q "pin the emulator there.*virsh emulatorpin" /tmp/attach.out
diag "$(cat /tmp/attach.out)"
check_eq "and leaves no resctrl group behind" "$groups_before" "$(resctrl_groups)"

$virsh emulatorpin rtguest 2-3 --live >/tmp/pin.out 2>&1
check_eq "virsh emulatorpin --live moves the emulator to cache 1's CPUs" 0 $?
$virsh attach-device rtguest /tmp/dimm.xml --live >/tmp/attach.out 2>&1
rc=$?
check_eq "virsh attach-device --live plugs the region as a DIMM" 0 $rc
[ $rc = 0 ] || diag "$(cat /tmp/attach.out; tail -n 5 /tmp/libvirtd.log)"
live_module dimm >/tmp/dimm-live.xml
diag "its live XML:"
diag "$(sed 's/^/    /' /tmp/dimm-live.xml)"
dimm_group=$(region_group </tmp/dimm-live.xml)
check "the live XML names the region and the DIMM's slot" \
    sh -c "[ '$dimm_group' = rthot ] && grep -q \"<address type='dimm' slot='[01]'\" /tmp/dimm-live.xml"
check_eq "the region is pseudo-locked, on L2 cache 1" "pseudo-locked L2:1" \
    "$(cat $R/$dimm_group/mode 2>&1) $(sed -n 's/^ *\(L2:1\)=.*/\1/p' $R/$dimm_group/schemata 2>&1)"
dimm_alias=$(sed -n "s|.*<alias name='\(.*\)'/>.*|\1|p" /tmp/dimm-live.xml)
check_eq "QEMU's backend of the DIMM is 512 KiB" 524288 \
    "$($virsh qemu-monitor-command rtguest '{"execute":"qom-get","arguments":{"path":"/objects/mem'"$dimm_alias"'","property":"size"}}' 2>&1 |
       sed -n 's/.*"return": *\([0-9]*\).*/\1/p')"
check "QEMU maps it: /proc/PID/maps lists /dev/pseudo_lock/rthot" \
    grep -q pseudo_lock/rthot /proc/$(domain_pid rtguest)/maps
wait_guest "^guest: hot-plug: pc-dimm: \(not \)*added\|pc-dimm: no ACPI" 150
guest_says /tmp/rtguest.out "pc-dimm: kernel: " | while read -r line; do diag "the guest's kernel: $line"; done
check "the guest's Linux refuses the DIMM: it adds memory in 128 MiB blocks" \
    grep -q "^guest: hot-plug: pc-dimm: kernel: .*unaligned hotplug range" /tmp/rtguest.out

$virsh detach-device rtguest /tmp/dimm.xml --live >/tmp/detach.out 2>&1
check_eq "virsh detach-device --live asks the guest to eject the DIMM" 0 $?
check "the guest ejects it" \
    wait_for 30 sh -c "! $virsh dumpxml rtguest | grep -q \"type='dimm'\""
check "QEMU no longer maps the region, which stays the host's" \
    sh -c "! grep -q pseudo_lock/rthot /proc/$(domain_pid rtguest)/maps && [ -d $R/rthot ]"
check "and the host removes it" rmdir $R/rthot

wait_guest "^guest: hot-plug: ready for an NVDIMM" 30
$virsh attach-device rtguest /tmp/nvdimm.xml --live >/tmp/attach.out 2>&1
rc=$?
check_eq "virsh attach-device --live plugs a region as an NVDIMM" 0 $rc
[ $rc = 0 ] || diag "$(cat /tmp/attach.out; tail -n 5 /tmp/libvirtd.log)"
live_module nvdimm >/tmp/nvdimm-live.xml
nv_group=$(region_group </tmp/nvdimm-live.xml)
nv_base=$(sed -n "s|.*<address type='dimm' slot='[0-9]*' base='\(0x[0-9a-f]*\)'/>.*|\1|p" /tmp/nvdimm-live.xml)
check "it is pseudo-locked, at guest-physical ${nv_base:-?}" \
    sh -c "[ -n '$nv_base' ] && [ \"\$(cat $R/$nv_group/mode)\" = pseudo-locked ]"
wait_guest "^guest: hot-plug: nvdimm: read\|nvdimm: no" 150
diag "the guest has $(guest_says /tmp/rtguest.out "nvdimm: ")"
check_eq "the guest sees /dev/pmem0, as large as the region" \
    "/dev/pmem0, 524288 bytes" "$(guest_says /tmp/rtguest.out "nvdimm: ")"
wrote=$(guest_says /tmp/rtguest.out "nvdimm: wrote sha256 ")
check_eq "what the guest wrote to /dev/pmem0 reads back the same" \
    "${wrote:-none}" "$(guest_says /tmp/rtguest.out "nvdimm: read sha256 ")"
# QEMU writes the file as its own user, in a directory of that user's
# (the initramfs's /tmp may not be writable by all)
mkdir -p /tmp/qemu-out && chown $QEMU_UID:$QEMU_UID /tmp/qemu-out
rm -f /tmp/qemu-out/nvdimm.bin
$virsh qemu-monitor-command rtguest \
    '{"execute":"pmemsave","arguments":{"val":'"$((${nv_base:-0}))"',"size":524288,"filename":"/tmp/qemu-out/nvdimm.bin"}}' \
    >/tmp/pmemsave.out 2>&1
check_eq "and QEMU reads the same bytes at the NVDIMM's address (pmemsave)" \
    "${wrote:-none}" "$(sha256sum </tmp/qemu-out/nvdimm.bin 2>&1 | cut -d' ' -f1)"
[ -s /tmp/qemu-out/nvdimm.bin ] || diag "pmemsave: $(cat /tmp/pmemsave.out)"

$virsh detach-device rtguest /tmp/nvdimm.xml --live >/tmp/detach.out 2>&1
check "detach-device of the NVDIMM is refused: QEMU cannot unplug one" \
    grep -q "QEMU cannot unplug an NVDIMM" /tmp/detach.out
diag "$(cat /tmp/detach.out)"

$virsh destroy rtguest >/dev/null 2>&1
check "virsh destroy ends the guest, and libvirt removes both regions" \
    wait_for 30 sh -c "$virsh domstate rtguest 2>&1 | grep -q 'shut off' && ! [ -d '$R/$group' ] && ! [ -d '$R/$nv_group' ]"
$virsh undefine rtguest >/dev/null 2>&1

echo 'L2:0=ffff;1=ffff' >$R/schemata

kill $daemon_pid 2>/dev/null
umount $R
done_testing
