# SPDX-License-Identifier: GPL-2.0-or-later
#
# The rig's Debian host (scripts/debian-host-image): Debian 12 with the
# packages of make deb and libvirt installed by apt, booted on the
# packaged kernel with systemd as PID 1 and AppArmor enforcing.  As an
# administrator would, with virsh and systemctl: the host unit freed
# cache ways at boot, libvirt came up from Debian's own units, and a
# real-time guest (FIFO vCPU on an isolated CPU of the second L2 bank,
# locked memory, a fast NUMA node 1 by HMAT) runs from domain XML as
# libvirt-qemu under the profile virt-aa-helper generated; a daemon
# restart keeps it; after a reboot the unit, the free ways and an
# autostart domain are back.  No AppArmor denial in its journal.
#
# Two boots: the first ends with rig_next=reboot; /var/lib/rig/phase
# says which boot this is.  The TAP plan comes at the end of the second.
#   rig.level=2          the cache level the CPU pseudo-locks in
#   rig.guest_cpu=N      the isolated CPU of the real-time vCPU

level=$(cmdline_arg level)
guest_cpu=$(cmdline_arg guest_cpu)
R=/sys/fs/resctrl
virsh="virsh -c qemu:///system"
images=/var/lib/libvirt/images/rt-guest
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
    guest_report "$1" | grep -q 'ready for a pc-dimm'
}

# rt_domain NAME: the real-time guest's domain XML, libvirt's kbase
# real-time tuning: the vCPU pinned to an isolated CPU and FIFO, the
# emulator on housekeeping CPUs, locked memory; node 1 a small fast node
# by HMAT, and a node 2 after it that takes the firmware's tables at the
# top of RAM (as in scenarios/rt-guest.sh).  Its serial ports are files:
# the console, and the report.
rt_domain() {
    cat <<EOF
<domain type='qemu'>
  <name>$1</name>
  <memory unit='KiB'>$((65536 + 4096 + 4096))</memory>
  <vcpu placement='static'>1</vcpu>
  <cputune>
    <vcpupin vcpu='0' cpuset='$guest_cpu'/>
    <emulatorpin cpuset='0'/>
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
    <cmdline>console=ttyS0 rt.hotplug=600 $(grep -o 'tsc_early_khz=[0-9]*' /proc/cmdline)</cmdline>
  </os>
  <cpu>
    <numa>
      <cell id='0' cpus='0' memory='65536' unit='KiB'/>
      <cell id='1' memory='4096' unit='KiB'/>
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
  </devices>
</domain>
EOF
}

# check_guest NAME: the domain's QEMU as libvirt and AppArmor run it,
# and the guest's report of its nodes
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
        "$(awk '/^VmLck:/ { print ($2 >= 73728) ? "yes" : $2 " kB" }' "/proc/${pid:-none}/status" 2>/dev/null)"
    if wait_until 300 guest_reported "$1"; then
        ok "the guest booted and reported its nodes"
    else
        not_ok "the guest booted and reported its nodes"
        diag "$(tail -n 20 "/var/log/libvirt/qemu/$1.log" "/var/log/libvirt/qemu/$1-console.log" 2>&1)"
    fi
    guest_report "$1" | grep -v hot-plug | while read -r line; do diag "$line"; done
    check_eq "the guest's node 1 is 4 MiB of memory without CPUs" \
        "guest: node 1: CPUs '', present 4194304 bytes" \
        "$(guest_report "$1" | grep '^guest: node 1:')"
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
    $virsh capabilities >/tmp/caps.xml 2>&1
    banks=$(grep -c "<bank id='[0-9]*' level='$level'" /tmp/caps.xml)
    check_eq "virsh capabilities lists both L$level banks with resctrl control" 2 \
        "$(grep -A1 "<bank id='[0-9]*' level='$level'" /tmp/caps.xml | grep -c '<control ')"
    [ "$banks" = 2 ] || diag "$(grep -A3 '<cache>' /tmp/caps.xml)"
    $virsh domcapabilities --virttype qemu >/tmp/domcaps.xml 2>&1
    check "virsh domcapabilities probes the fork's QEMU at /usr/bin" \
        grep -q '<path>/usr/bin/qemu-system-x86_64</path>' /tmp/domcaps.xml

    step "A real-time guest from domain XML"
    rt_domain rt-guest >/tmp/rt-guest.xml
    $virsh define /tmp/rt-guest.xml >/tmp/define.out 2>&1
    check_eq "virsh define takes the real-time domain" 0 $?
    $virsh autostart rt-guest >/dev/null 2>&1
    check_eq "virsh autostart marks it" 0 $?
    $virsh start rt-guest >/tmp/start.out 2>&1
    rc=$?
    check_eq "virsh start runs it" 0 $rc
    [ $rc = 0 ] || diag "$(cat /tmp/define.out /tmp/start.out; tail -n 20 /var/log/libvirt/qemu/rt-guest.log)"
    check_guest rt-guest
    pid=$(domain_pid rt-guest)

    step "systemctl restart libvirtd while the guest runs"
    systemctl restart libvirtd.service
    check_eq "libvirtd restarts" 0 $?
    check "virsh reaches the new daemon" wait_until 30 $virsh version
    check_eq "the guest runs on" running "$($virsh domstate rt-guest 2>&1)"
    check_eq "with the same QEMU" "$pid" "$(domain_pid rt-guest)"

    n=$(denials)
    check_eq "no AppArmor denial in this boot's journal" 0 "$n"
    [ "$n" = 0 ] || diag "$(journalctl -b -q --no-pager | grep 'apparmor="DENIED"' | head -n 20)"

    step "Rebooting the host"
    # The guest does not act on ACPI's power button, for which
    # libvirt-guests.service would wait 300 s at shutdown: an
    # administrator stops it first.  Autostart brings it back.
    $virsh destroy rt-guest >/dev/null 2>&1
    check_eq "virsh destroy stops the guest before the reboot" 0 $?
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
    check_guest rt-guest
    n=$(denials)
    check_eq "no AppArmor denial in this boot's journal either" 0 "$n"
    [ "$n" = 0 ] || diag "$(journalctl -b -q --no-pager | grep 'apparmor="DENIED"' | head -n 20)"
    # The count is worth something only if a denial shows in it
    check_fails "the guest's profile denies reading /etc/shadow" \
        read_shadow_under "libvirt-$uuid"
    check "and that denial is counted" wait_until 10 denied_once
    $virsh destroy rt-guest >/dev/null 2>&1
    check_eq "virsh destroy stops it" 0 $?
    $virsh undefine rt-guest >/dev/null 2>&1
    check_eq "virsh undefine removes it" 0 $?
    done_testing
fi
