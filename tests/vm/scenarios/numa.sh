# SPDX-License-Identifier: LGPL-2.1-or-later
# numa: the two-node guest the NUMA-aware IRQ placement is tested on. One vCPU
# and half the memory per node; an NVMe controller behind a pxb-pcie expander on
# node 1 reports that node, a controller on the main bus reports none (-1).

# The same machine as irq.sh and diagnose.sh, so that the three run on one
# boot (meson's numa+irq+diagnose); diagnose.sh wants the 256 MiB.
VM_NUMA=2
VM_DEVICES=(
	"nvme nv0 size=256M"         # pcie.0: no NUMA affinity
	"nvme nvn1 node=1 size=256M" # behind pxb-pcie on node 1
	"sata sata0"                 # AHCI (irq.sh's unmanaged vector)
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

# PCIe ASPM per link (pcie: { aspm: ... }) on the real kernel. nvn1 sits behind a
# PCIe root port, whose link QEMU says supports L0s only: the kernel shows
# link/l0s_aspm on nvn1's function; nv0 is an integrated endpoint of pcie.0, with
# no link of its own (an empty link/ directory). Under the default policy SeaBIOS enabled nothing, so a 1
# cannot turn L0s on (aspm_attr_store_common re-applies the policy's
# aspm_default): `l0s` fails with the read-back named. Under `powersave` L0s is on;
# `off` turns it off, verify sees someone turning it on again as drift, and
# restore puts it back.
aspm_files() { # PCI_DIR -> "l0s_aspm=1 l1_aspm=0 ..." for the files there are
	local f out=
	for f in "$1"/link/*_aspm "$1"/link/*_pcipm; do
		if [[ -e $f ]]; then out+="${f##*/}=$(cat "$f") "; fi
	done
	echo "$out"
}

aspm_profile() { # VALUE DISK
	mkdir -p /etc/iotuned/profiles /etc/iotuned/iotuned.yaml.d
	echo "pcie: { aspm: '$1' }" >/etc/iotuned/profiles/awake.yaml # nothing else: irq.sh follows
	printf 'rules:\n  - match: { kernel: %s }\n    profile: awake\n' "$2" >/etc/iotuned/iotuned.yaml.d/50-awake.yaml
}

check_pcie_aspm() {
	local c0 c1 disk pci f j=/tmp/aspm.json policy=/sys/module/pcie_aspm/parameters/policy
	c0=$(nvme_ctrl_by_serial nv0) || fail "no controller nv0"
	c1=$(nvme_ctrl_by_serial nvn1) || fail "no controller nvn1"
	disk=$(nvme_ctrl_disks "$c1" 1)
	pci=$(readlink -f "/sys/class/nvme/$c1/device")
	for f in /sys/bus/pci/devices/*/link/*; do
		if [[ -e $f ]]; then note "$f = $(cat "$f")"; fi
	done
	assert_match '^\[default\]' "$(cat "$policy")" "pcie_aspm policy"
	assert_eq "l0s_aspm=0 " "$(aspm_files "$pci")" "nvn1's link files"
	# the group directory is always there; no state is visible in it
	assert_eq "" "$(aspm_files "$(readlink -f "/sys/class/nvme/$c0/device")")" "nv0's link files"

	# default policy: enabling what the firmware did not is refused by read-back
	aspm_profile l0s "$disk"
	iotunectl --json apply "$disk" >"$j" || true
	assert_eq failed "$(json_setting "$j" "$disk" aspm state)" "aspm l0s under the default policy"
	assert_match "reads back 'off' after writing 'l0s'" "$(json_setting "$j" "$disk" aspm note)" "aspm note"
	assert_ok iotunectl restore "$disk"

	# powersave: L0s on; off, drift, apply, restore
	echo powersave >"$policy"
	assert_eq "l0s_aspm=1 " "$(aspm_files "$pci")" "nvn1's link files under powersave"
	aspm_profile off "$disk"
	iotunectl --json apply "$disk" >"$j" || fail "apply failed: $(cat "$j")"
	assert_eq changed "$(json_setting "$j" "$disk" aspm state)" "aspm off applied"
	assert_eq l0s "$(json_setting "$j" "$disk" aspm previous)" "aspm before"
	assert_file_eq "$pci/link/l0s_aspm" 0
	assert_ok iotunectl verify "$disk"
	echo 1 >"$pci/link/l0s_aspm"
	assert_fails iotunectl verify "$disk"
	assert_ok iotunectl apply "$disk"
	assert_file_eq "$pci/link/l0s_aspm" 0
	assert_ok iotunectl restore "$disk"
	assert_file_eq "$pci/link/l0s_aspm" 1
	echo default >"$policy"
	rm -f /etc/iotuned/profiles/awake.yaml /etc/iotuned/iotuned.yaml.d/50-awake.yaml
}
