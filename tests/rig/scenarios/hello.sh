# SPDX-License-Identifier: GPL-2.0-or-later
#
# The demo's guest-side report, in plain words.

echo "  kernel:      $(uname -sr)"
echo "  CPU:         $(cpuinfo_field 'model name')" \
     "(family $(cpuinfo_field 'cpu family'), model $(cpuinfo_field model))"
echo "  vCPUs:       $(grep -c '^processor' /proc/cpuinfo)"
echo "  memory:      $(sed -n 's/^MemTotal: *//p' /proc/meminfo)"
# The kernel creates the mount point only when the CPU has RDT.
if [ -d /sys/fs/resctrl ] && mount -t resctrl resctrl /sys/fs/resctrl 2>/dev/null; then
    echo "  resctrl:     mounted; resources: $(ls /sys/fs/resctrl/info | tr '\n' ' ')"
else
    echo "  resctrl:     not available on this CPU (no cache allocation reported)"
fi
echo "  powering off"
