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

# PCIe ASPM per link (pcie: { aspm: off }): nvn1 sits behind a PCIe root port, nv0
# is an integrated endpoint of pcie.0 (no link of its own). Whatever link/ files
# the kernel shows are what the row plans against: with files, off is applied,
# verified and restored; without, the row is unsupported with the reason.
aspm_files() { # PCI_DIR -> "l0s_aspm=1 l1_aspm=0 ..." for the files there are
	local f out=
	for f in "$1"/link/*_aspm "$1"/link/*_pcipm; do
		if [[ -e $f ]]; then out+="${f##*/}=$(cat "$f") "; fi
	done
	echo "$out"
}

check_pcie_aspm() {
	local c1 disk pci f j=/tmp/aspm.json before after
	c1=$(nvme_ctrl_by_serial nvn1) || fail "no controller nvn1"
	disk=$(nvme_ctrl_disks "$c1" 1)
	pci=$(readlink -f "/sys/class/nvme/$c1/device")
	for f in /sys/bus/pci/devices/*/link/*; do
		if [[ -e $f ]]; then note "$f = $(cat "$f")"; fi
	done
	note "policy: $(cat /sys/module/pcie_aspm/parameters/policy 2>/dev/null || echo none)"
	mkdir -p /etc/iotuned/profiles /etc/iotuned/iotuned.yaml.d
	echo 'pcie: { aspm: off }' >/etc/iotuned/profiles/awake.yaml # nothing else: irq.sh follows
	printf 'rules:\n  - match: { kernel: %s }\n    profile: awake\n' "$disk" >/etc/iotuned/iotuned.yaml.d/50-awake.yaml
	iotunectl --json plan >"$j" || fail "plan failed: $(cat "$j")"
	if ! compgen -G "$pci/link/*_aspm" >/dev/null && ! compgen -G "$pci/link/*_pcipm" >/dev/null; then
		note "$pci has no ASPM files: the row must be unsupported"
		assert_eq unsupported "$(json_setting "$j" "$disk" aspm state)" "aspm state without link files"
		assert_match "has no ASPM files" "$(json_setting "$j" "$disk" aspm note)" "aspm note"
	else
		before=$(aspm_files "$pci")
		note "$pci link files before: $before"
		iotunectl --json apply >"$j" || fail "apply failed: $(cat "$j")"
		assert_in "$(json_setting "$j" "$disk" aspm state)" "aspm after apply" changed ok
		assert_eq off "$(json_setting "$j" "$disk" aspm observed)" "aspm read back"
		for f in "$pci"/link/*_aspm "$pci"/link/*_pcipm; do
			if [[ -e $f ]]; then assert_file_eq "$f" 0; fi
		done
		assert_ok iotunectl verify
		assert_ok iotunectl restore
		after=$(aspm_files "$pci")
		assert_eq "$before" "$after" "link files after restore"
	fi
	rm -f /etc/iotuned/profiles/awake.yaml /etc/iotuned/iotuned.yaml.d/50-awake.yaml
}
