# SPDX-License-Identifier: GPL-2.0-or-later
#
# For the rig's test of its own stall report (test-rig-kernel-death.py):
# put on the console the line the kernel prints when RCU detects a
# stall, then wait out the rig's time-out, as a stalled run does.  The
# rig must then show QEMU's vCPUs and local APICs as they were.

echo "<3>rcu: INFO: rcu_preempt detected stalls on CPUs/tasks: (the rig's test of its stall report)" >/dev/kmsg
while :; do
    sleep 60
done
