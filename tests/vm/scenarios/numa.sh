# SPDX-License-Identifier: LGPL-2.1-or-later
# numa: the two-node guest the NUMA-aware IRQ placement is tested on. One vCPU
# and half the memory per node; an NVMe controller behind a pxb-pcie expander on
# node 1 reports that node, a controller on the main bus reports none (-1).

# The same machine as irq.sh, so that both run on one boot (meson's numa+irq).
VM_NUMA=2
VM_DEVICES=(
	"nvme nv0"          # pcie.0: no NUMA affinity
	"nvme nvn1 node=1"  # behind pxb-pcie on node 1
	"sata sata0"        # AHCI (irq.sh's unmanaged vector)
)

scenario_setup() {
	assert_ok udevadm settle --timeout=60
}

check_two_nodes() {
	assert_eq "node0 node1" "$(cd /sys/devices/system/node && echo node[0-9]*)" "NUMA nodes"
	assert_file_eq /sys/devices/system/node/node0/cpulist 0
	assert_file_eq /sys/devices/system/node/node1/cpulist 1
}

check_device_nodes() {
	local c0 c1
	c0=$(nvme_ctrl_by_serial nv0) || fail "no controller nv0"
	c1=$(nvme_ctrl_by_serial nvn1) || fail "no controller nvn1"
	assert_file_eq "/sys/class/nvme/$c1/device/numa_node" 1
	assert_file_eq "/sys/class/nvme/$c1/device/local_cpulist" 1
	assert_file_eq "/sys/class/nvme/$c0/device/numa_node" -1
	assert_sched "$(nvme_ctrl_disks "$c1" 1)" none
}
