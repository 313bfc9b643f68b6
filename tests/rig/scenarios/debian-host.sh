# SPDX-License-Identifier: GPL-2.0-or-later
#
# The rig's Debian host (scripts/debian-host-image): Debian 12 with the
# packages of make deb and make libvirt-deb installed by apt, booted on
# the packaged kernel with systemd as PID 1 and AppArmor enforcing.  As
# an administrator would, with virsh and systemctl: the host unit freed
# cache ways at boot, libvirt came up from Debian's own units and offers
# them, and a real-time guest (FIFO vCPU on an isolated CPU of the
# second L2 bank, locked memory) runs from domain XML as libvirt-qemu
# under the profile virt-aa-helper generated, its fast NUMA node 1 a
# region libvirt creates; it takes a hot-plugged NVDIMM region; a
# daemon restart keeps it and its regions; the same guest runs again on
# a region the administrator locked (<path>); after a reboot the unit,
# the free ways and the autostart domain with its region are back.  No
# AppArmor denial in the journal.

# Two boots: the first ends with rig_next=reboot; /var/lib/rig/phase
# says which boot this is.  The TAP plan comes at the end of the second.
#   rig.level=2          the cache level the CPU pseudo-locks in
#   rig.guest_cpu=N      the isolated CPU of the real-time vCPU

level=$(cmdline_arg level)
guest_cpu=$(cmdline_arg guest_cpu)
R=/sys/fs/resctrl
virsh="virsh -c qemu:///system"
images=/var/lib/libvirt/images/rt-guest
# The guest's CPUs: its vCPU on the isolated CPU, the emulator on
# another CPU of the same L2 bank (libvirt wants QEMU on a region's
# cache while it maps it)
cache_id() {
    cat /sys/devices/system/cpu/cpu$1/cache/index$level/id 2>/dev/null
}
bank=$(cache_id $guest_cpu)
for c in /sys/devices/system/cpu/cpu[0-9]*; do
    c=${c##*cpu}
    if [ "$c" != "$guest_cpu" ] && [ "$(cache_id $c)" = "$bank" ]; then
        emulator_cpu=$c
        break
    fi
done
for c in /sys/devices/system/cpu/cpu[0-9]*; do
    c=${c##*cpu}
    if [ "$(cache_id $c)" != "$bank" ]; then
        other_cpu=$c
        other_bank=$(cache_id $c)
        break
    fi
done
state=/var/lib/rig
mkdir -p $state
phase=$(cat $state/phase 2>/dev/null || echo 1)
rig_test_count=$(cat $state/count 2>/dev/null || echo 0)

# denials: AppArmor's denials in this boot's journal: its audit records,
# which reach journald over its audit socket or, without it, through
# the kernel log (no auditd runs)
denials() {
    journalctl -b -q --no-pager 2>/dev/null | grep -c 'apparmor="DENIED"'
}

# read_shadow_under PROFILE: read /etc/shadow confined by PROFILE
read_shadow_under() {
    aa-exec -p "$1" -- cat /etc/shadow >/dev/null 2>&1
}

denied_once() {
    [ "$(denials)" -gt 0 ]
}

# wait_until SECONDS COMMAND...: poll until COMMAND succeeds
wait_until() {
    n=$(($1 * 2))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $n -gt 0 ] || return 1
        n=$((n - 1))
        sleep 0.5
    done
}

# free_ways_everywhere: every L$level instance has a zero bit in the
# default group's schemata that no one else uses
free_ways_everywhere() {
    line=$(sed -n "s/^ *L$level://p" $R/schemata)
    usage=$(cat $R/info/L$level/bit_usage)
    diag "default group L$level:$line; bit_usage $usage"
    [ -n "$line" ] && [ "$(echo "$usage" | tr ';' '\n' | grep -vc '=[0-9A-Za-z]*0')" = 0 ]
}

# domain_pid NAME: its QEMU's pid, from the state libvirt keeps
domain_pid() {
    cat "/run/libvirt/qemu/$1.pid" 2>/dev/null
}

# guest_report NAME: what the guest of domain NAME reported on ttyS1
guest_report() {
    tr -d '\r' <"/var/log/libvirt/qemu/$1-report.log" 2>/dev/null
}

# guest_reported NAME: the guest has reported its nodes and waits
guest_reported() {
    guest_report "$1" | grep -q 'ready for an NVDIMM'
}

# rt_domain NAME SOURCE KIB: the real-time guest's domain XML, libvirt's
# kbase real-time tuning: the vCPU pinned to an isolated CPU and FIFO,
# the emulator FIFO next to it on the region's cache, locked memory;
# node 1 a region of KIB from SOURCE (a <cache> or a <path>), the fast
# node by HMAT, and a node 2 after it that takes the firmware's tables
# at the top of RAM (as in scenarios/rt-guest.sh); a slot for the
# NVDIMM.  Its serial ports are files: the console, and the report.
rt_domain() {
    cat <<EOF
<domain type='qemu'>
  <name>$1</name>
  <maxMemory slots='2' unit='KiB'>1048576</maxMemory>
  <memory unit='KiB'>$((65536 + $3 + 4096))</memory>
  <vcpu placement='static'>1</vcpu>
  <cputune>
    <vcpupin vcpu='0' cpuset='$guest_cpu'/>
    <emulatorpin cpuset='$emulator_cpu'/>
    <vcpusched vcpus='0' scheduler='fifo' priority='1'/>
    <emulatorsched scheduler='fifo' priority='1'/>
  </cputune>
  <memoryBacking>
    <locked/>
  </memoryBacking>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>$images/vmlinuz</kernel>
    <initrd>$images/initramfs.cpio.gz</initrd>
    <cmdline>console=ttyS0 rt.hotplug=600 rt.nvdimm_only $(grep -o 'tsc_early_khz=[0-9]*' /proc/cmdline)</cmdline>
  </os>
  <features>
    <acpi/>
  </features>
  <cpu>
    <numa>
      <cell id='0' cpus='0' memory='65536' unit='KiB'/>
      <cell id='1' memory='$3' unit='KiB'/>
      <cell id='2' memory='4096' unit='KiB'/>
      <interconnects>
        <latency initiator='0' target='0' type='access' value='100'/>
        <latency initiator='0' target='1' type='access' value='10'/>
        <latency initiator='0' target='2' type='access' value='100'/>
      </interconnects>
    </numa>
  </cpu>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <serial type='file'>
      <source path='/var/log/libvirt/qemu/$1-console.log'/>
      <target port='0'/>
    </serial>
    <serial type='file'>
      <source path='/var/log/libvirt/qemu/$1-report.log'/>
      <target port='1'/>
    </serial>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
    <memory model='pseudolock'>
      <source>
        $2
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

# nvdimm_xml KIB: a region of KIB that libvirt creates on the other L2
# bank (one region per cache hierarchy), which the guest sees as an
# NVDIMM
nvdimm_xml() {
    cat <<EOF
<memory model='pseudolock'>
  <source>
    <cache id='$other_bank' level='$level'/>
  </source>
  <target type='nvdimm'>
    <size unit='KiB'>$1</size>
    <node>0</node>
  </target>
</memory>
EOF
}

# region_of NAME: the resctrl group of node 1's region, from the <path>
# in the live XML (libvirt adds it to a <cache> source)
region_of() {
    $virsh dumpxml "$1" 2>/dev/null |
        sed -n 's|.*<path>/dev/pseudo_lock/\(.*\)</path>.*|\1|p' | head -n 1
}

# max_size BANK: the region size, in KiB, that virsh capabilities offers
# on L$level cache BANK
max_size() {
    $virsh capabilities 2>/dev/null |
        sed -n "/<bank id='$1' level='$level'/,/<\/bank>/s/.*<pseudolock .*maxSize='\([0-9]*\)'.*/\1/p"
}

# check_guest NAME KIB [running]: the domain's QEMU as libvirt and
# AppArmor run it, its region, and the guest's report of its nodes: node
# 1 of KIB; with running, not the report (the guest booting under TCG
# inside TCG takes minutes, and what it reports does not depend on how
# libvirt started it)
check_guest() {
    pid=$(domain_pid "$1")
    check "libvirt knows the QEMU of $1" test -d "/proc/${pid:-none}"
    check_eq "its QEMU runs as libvirt-qemu" libvirt-qemu \
        "$(stat -c %U "/proc/${pid:-none}" 2>/dev/null)"
    label=$(cat "/proc/${pid:-none}/attr/current" 2>/dev/null)
    uuid=$($virsh domuuid "$1" 2>/dev/null)
    check_eq "it is confined by the profile virt-aa-helper made, enforcing" \
        "libvirt-$uuid (enforce)" "$label"
    check "the profile's rules are on disk as virt-aa-helper wrote them" \
        test -f "/etc/apparmor.d/libvirt/libvirt-$uuid.files"
    vcpu=$(grep -lx 'CPU 0/TCG' /proc/"${pid:-none}"/task/*/comm 2>/dev/null)
    vcpu=${vcpu%/comm}
    # policy and rt_priority, fields 41 and 40 of stat, counted after
    # the command name (which has spaces)
    check_eq "its vCPU thread is SCHED_FIFO, priority 1" "1 1" \
        "$(sed 's/.*) //' "$vcpu/stat" 2>/dev/null | awk '{ print $39, $38 }')"
    check_eq "and may run on isolated CPU $guest_cpu only" "$guest_cpu" \
        "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$vcpu/status" 2>/dev/null)"
    check_eq "its memory is locked (VmLck covers the guest's RAM)" yes \
        "$(awk '/^VmLck:/ { print ($2 >= 69632) ? "yes" : $2 " kB" }' "/proc/${pid:-none}/status" 2>/dev/null)"
    group=$(region_of "$1")
    check_eq "node 1 is a pseudo-locked region on L$level cache $bank" \
        "pseudo-locked L$level:$bank" \
        "$(cat $R/${group:-none}/mode 2>&1) $(sed -n "s/^ *\(L$level:$bank\)=.*/\1/p" $R/${group:-none}/schemata 2>&1)"
    check "QEMU maps it: /proc/PID/maps lists /dev/pseudo_lock/${group:-?}" \
        grep -q "/dev/pseudo_lock/${group:-none}\$" "/proc/${pid:-none}/maps"
    [ "${3:-}" = running ] && return 0
    if wait_until 300 guest_reported "$1"; then
        ok "the guest booted and reported its nodes"
    else
        not_ok "the guest booted and reported its nodes"
        diag "$(tail -n 5 "/var/log/libvirt/qemu/$1.log" 2>&1)"
        # the guest kernel's first report of trouble, and what led to it
        console=/var/log/libvirt/qemu/$1-console.log
        first=$(grep -n -m1 'BUG:\|Oops\|panic\|WARNING:\|stall' "$console" 2>/dev/null | cut -d: -f1)
        if [ -n "$first" ]; then
            diag "$(sed -n "$((first > 15 ? first - 15 : 1)),$((first + 30))p" "$console")"
        else
            diag "$(tail -n 30 "$console" 2>&1)"
        fi
    fi
    guest_report "$1" | grep -v hot-plug | while read -r line; do diag "$line"; done
    check_eq "the guest's node 1 is the region: memory without CPUs" \
        "guest: node 1: CPUs '', present $(($2 * 1024)) bytes" \
        "$(guest_report "$1" | grep '^guest: node 1:')"
}

# no_denials WHEN: no AppArmor denial in this boot's journal so far
no_denials() {
    n=$(denials)
    check_eq "no AppArmor denial in this boot's journal $1" 0 "$n"
    [ "$n" = 0 ] || diag "$(journalctl -b -q --no-pager | grep 'apparmor="DENIED"' | head -n 20)"
}

# start_domain NAME: virsh start NAME, one check
start_domain() {
    $virsh start "$1" >/tmp/start.out 2>&1
    rc=$?
    check_eq "virsh start runs $1" 0 $rc
    [ $rc = 0 ] || diag "$(cat /tmp/start.out; tail -n 20 /var/log/libvirt/qemu/$1.log)"
}

if [ "$phase" = 1 ]; then
    step "The Debian host, first boot: systemd, AppArmor, the host unit, libvirt"
    check_eq "PID 1 is systemd" /usr/lib/systemd/systemd "$(readlink /proc/1/exe)"
    # (the system is "starting" until this scenario's own unit ends)
    check_eq "multi-user.target is reached" active "$(systemctl is-active multi-user.target)"
    check_eq "no unit failed" "" "$(systemctl --failed --no-legend --plain 2>&1)"
    check "journald has this boot's log" \
        sh -c "journalctl -b -q --no-pager -u qemu-pseudolock-host | grep -q ."
    check_eq "AppArmor is enabled" Y "$(cat /sys/module/apparmor/parameters/enabled)"
    check "libvirtd's profile is loaded, enforcing" \
        grep -qx 'libvirtd (enforce)' /sys/kernel/security/apparmor/profiles
    diag "$(grep -c '(enforce)' /sys/kernel/security/apparmor/profiles) profiles enforcing," \
        "$(grep -c '(complain)' /sys/kernel/security/apparmor/profiles) complaining"
    check_eq "CPU $guest_cpu is isolated from the scheduler's load balancing" \
        "$guest_cpu" "$(cat /sys/devices/system/cpu/isolated)"

    step "The host unit freed cache ways at boot"
    check_eq "qemu-pseudolock-host.service ran and succeeded" active \
        "$(systemctl is-active qemu-pseudolock-host.service)"
    diag "$(journalctl -b -q --no-pager -o cat -u qemu-pseudolock-host)"
    check "it mounted resctrl" grep -q " $R resctrl " /proc/mounts
    check "each L$level instance has ways free for regions" free_ways_everywhere
    check "the unit ran before libvirtd" sh -c \
        "[ \$(systemctl show -P ExecMainExitTimestampMonotonic qemu-pseudolock-host) -le \
           \$(systemctl show -P ExecMainStartTimestampMonotonic libvirtd) ]"

    step "libvirt from Debian's units"
    check_eq "libvirtd.socket listens" active "$(systemctl is-active libvirtd.socket)"
    check "virsh reaches the daemon over its socket" wait_until 30 $virsh version
    diag "$($virsh version 2>&1 | tr '\n' ' ')"
    check "it is the fork's libvirt, from make libvirt-deb" \
        sh -c "dpkg-query -W -f '\${Version}' libvirt-daemon-driver-qemu | grep -q '+pseudolock'"
    diag "libvirt-daemon-driver-qemu $(dpkg-query -W -f '${Version}' libvirt-daemon-driver-qemu 2>&1)"
    $virsh capabilities >/tmp/caps.xml 2>&1
    check_eq "virsh capabilities lists both L$level banks with resctrl control" 2 \
        "$(grep -A1 "<bank id='[0-9]*' level='$level'" /tmp/caps.xml | grep -c '<control ')"
    kib=$(max_size $bank)
    other_kib=$(max_size $other_bank)
    diag "regions on offer: L$level cache $bank ${kib:-none} KiB, cache $other_bank ${other_kib:-none} KiB"
    check "and offers regions on both, in the ways the unit freed" \
        sh -c "[ '${kib:-0}' -gt 0 ] && [ '${other_kib:-0}' -gt 0 ]"
    [ -n "$kib" ] || diag "$(grep -A4 '<bank ' /tmp/caps.xml)"
    kib=${kib:-512} other_kib=${other_kib:-512}
    $virsh domcapabilities --virttype qemu >/tmp/domcaps.xml 2>&1
    check "virsh domcapabilities probes the fork's QEMU at /usr/bin" \
        grep -q '<path>/usr/bin/qemu-system-x86_64</path>' /tmp/domcaps.xml
    check "and offers the pseudolock memory model" \
        grep -q '<value>pseudolock</value>' /tmp/domcaps.xml

    step "A real-time guest whose node 1 is a region libvirt creates"
    rt_domain rt-guest "<cache id='$bank' level='$level'/>" $kib >/tmp/rt-guest.xml
    $virsh define /tmp/rt-guest.xml >/tmp/define.out 2>&1
    check_eq "virsh define takes the real-time domain" 0 $?
    [ -s /tmp/define.out ] && diag "$(cat /tmp/define.out)"
    $virsh autostart rt-guest >/dev/null 2>&1
    check_eq "virsh autostart marks it" 0 $?
    start_domain rt-guest
    check_guest rt-guest $kib
    pid=$(domain_pid rt-guest)
    region=$group
    echo $kib >$state/kib

    step "Hot-plug: a region libvirt creates on the other bank, as an NVDIMM"
    # libvirt maps a region only with QEMU on that region's cache
    nvdimm_xml $other_kib >/tmp/nvdimm.xml
    $virsh emulatorpin rt-guest $other_cpu --live >/tmp/pin.out 2>&1
    check_eq "virsh emulatorpin --live moves the emulator to cache $other_bank" 0 $?
    $virsh attach-device rt-guest /tmp/nvdimm.xml --live >/tmp/attach.out 2>&1
    rc=$?
    check_eq "virsh attach-device --live plugs it" 0 $rc
    [ $rc = 0 ] || diag "$(cat /tmp/attach.out; tail -n 5 /var/log/libvirt/qemu/rt-guest.log)"
    $virsh emulatorpin rt-guest $emulator_cpu --live >/dev/null 2>&1
    check_eq "and back next to the vCPU" 0 $?
    # the live XML's other region
    nv_group=$($virsh dumpxml rt-guest 2>/dev/null |
        sed -n 's|.*<path>/dev/pseudo_lock/\(.*\)</path>.*|\1|p' | grep -vx "$region" | head -n 1)
    check_eq "the NVDIMM's region is pseudo-locked on L$level cache $other_bank" \
        "pseudo-locked L$level:$other_bank" \
        "$(cat $R/${nv_group:-none}/mode 2>&1) $(sed -n "s/^ *\(L$level:$other_bank\)=.*/\1/p" $R/${nv_group:-none}/schemata 2>&1)"
    if wait_until 300 sh -c "tr -d '\r' </var/log/libvirt/qemu/rt-guest-report.log | grep -q 'nvdimm: read\|nvdimm: no'"; then
        ok "the guest used the NVDIMM"
    else
        not_ok "the guest used the NVDIMM"
    fi
    guest_report rt-guest | grep 'nvdimm:' | while read -r line; do diag "$line"; done
    check_eq "it sees /dev/pmem0, as large as the region" \
        "guest: hot-plug: nvdimm: /dev/pmem0, $((other_kib * 1024)) bytes" \
        "$(guest_report rt-guest | grep 'nvdimm: /dev/pmem0')"
    wrote=$(guest_report rt-guest | sed -n 's/.*nvdimm: wrote sha256 //p')
    check_eq "and reads back what it wrote there" "${wrote:-none}" \
        "$(guest_report rt-guest | sed -n 's/.*nvdimm: read sha256 //p')"

    step "systemctl restart libvirtd while the guest runs"
    systemctl restart libvirtd.service
    check_eq "libvirtd restarts" 0 $?
    check "virsh reaches the new daemon" wait_until 30 $virsh version
    check_eq "the guest runs on" running "$($virsh domstate rt-guest 2>&1)"
    check_eq "with the same QEMU" "$pid" "$(domain_pid rt-guest)"
    check_eq "and its regions" "$region $nv_group" \
        "$(region_of rt-guest) $(cd $R && ls -d "$nv_group" 2>/dev/null)"
    no_denials "with the region libvirt created"

    $virsh destroy rt-guest >/dev/null 2>&1
    check_eq "virsh destroy stops the guest" 0 $?
    check "and libvirt removes both regions" \
        wait_until 30 sh -c "! [ -d '$R/$region' ] && ! [ -d '$R/$nv_group' ]"

    step "The same guest on a region the administrator locked (<path>)"
    # As pseudolock.rst tells: a group in pseudo-locksetup mode, then
    # its schemata, on the ways the unit left free
    mask=$(printf '%x' $(( 0x$(cat $R/info/L$level/cbm_mask) & ~0x$(sed -n "s/^ *L$level:.*$bank=\([0-9a-f]*\).*/\1/p" $R/schemata) )))
    mkdir $R/rt-locked && echo pseudo-locksetup >$R/rt-locked/mode &&
        echo "L$level:$bank=$mask" >$R/rt-locked/schemata
    check_eq "the administrator locks rt-locked on L$level cache $bank (ways $mask)" \
        pseudo-locked "$(cat $R/rt-locked/mode 2>&1)"
    [ -c /dev/pseudo_lock/rt-locked ] || diag "$(cat $R/info/last_cmd_status)"
    rt_domain rt-path "<path>/dev/pseudo_lock/rt-locked</path>" $kib >/tmp/rt-path.xml
    $virsh define /tmp/rt-path.xml >/tmp/define.out 2>&1
    check_eq "virsh define takes it" 0 $?
    start_domain rt-path
    # Not the guest's report again: rt-guest's showed what the guest
    # sees, and QEMU maps the region (under AppArmor) before it boots
    check_guest rt-path $kib running
    no_denials "with the administrator's region"
    $virsh destroy rt-path >/dev/null 2>&1
    check_eq "virsh destroy stops it" 0 $?
    check "the region stays the administrator's" test -c /dev/pseudo_lock/rt-locked
    $virsh undefine rt-path >/dev/null 2>&1
    rmdir $R/rt-locked
    check_eq "who removes it" "" "$(ls $R | grep -x rt-locked)"

    step "Rebooting the host"
    # Autostart brings rt-guest back on the next boot.
    echo 2 >$state/phase
    echo $rig_test_count >$state/count
    rig_next=reboot
else
    step "The Debian host, second boot: the unit, the free ways, the autostart domain"
    check_eq "multi-user.target is reached again" active "$(systemctl is-active multi-user.target)"
    check_eq "no unit failed" "" "$(systemctl --failed --no-legend --plain 2>&1)"
    check_eq "qemu-pseudolock-host.service ran again" active \
        "$(systemctl is-active qemu-pseudolock-host.service)"
    check "each L$level instance has ways free again" free_ways_everywhere
    check "libvirt started the autostart domain" \
        wait_until 60 sh -c "$virsh domstate rt-guest | grep -qx running"
    # The guest reported twice in the first boot; here what is new is
    # that libvirt started it by itself
    check_guest rt-guest "$(cat $state/kib)" running
    no_denials "either"
    # The count is worth something only if a denial shows in it
    check_fails "the guest's profile denies reading /etc/shadow" \
        read_shadow_under "libvirt-$uuid"
    check "and that denial is counted" wait_until 10 denied_once
    $virsh destroy rt-guest >/dev/null 2>&1
    check_eq "virsh destroy stops it" 0 $?
    check "and libvirt removes its region" \
        wait_until 30 sh -c "! [ -d '$R/${group:-none}' ]"
    $virsh undefine rt-guest >/dev/null 2>&1
    check_eq "virsh undefine removes it" 0 $?
    done_testing
fi
