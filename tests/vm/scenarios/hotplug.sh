# SPDX-License-Identifier: LGPL-2.1-or-later
# hotplug: an NVMe controller hot-added into an empty PCIe root port from inside
# the guest (QMP through the host relay) shows up as a udev "add" of its block
# device, and device_del takes it away again. This is the event iotuned reacts
# to; the times printed are TCG times (compare within one run only). The slot is
# driven by ACPI hotplug (acpiphp), QEMU 7.2's default on q35; native pciehp
# would need VM_QEMU_ARGS=(-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off).

VM_DEVICES=(
	"nvme nv0"       # a cold-plugged controller, so the hot one is not nvme0
	"rootport rp1"   # empty slot on pcie.0
	"spare hot1"     # its backing drive, attached by device_add
)

MON=/run/iotvm-udev-monitor.log

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	# The monitor must be listening before the device appears; it keeps running
	# across checks (the checks are subshells, it is not).
	udevadm monitor --udev --subsystem-match=block >"$MON" 2>&1 &
	echo $! >/run/iotvm-udev-monitor.pid
	wait_for "grep -q 'UDEV - the event' '$MON'" 10
}


check_hot_add() {
	assert_eq "" "$(disk_by_serial hot1 || true)" "disk of hot1 before device_add"
	step "device_add nvme hot1 into rp1"
	local t0 disk
	# t0 is taken once QEMU has answered: the QMP round trip itself (python
	# start-up under TCG, the relay) is not part of the hotplug.
	qmp '{"execute": "device_add", "arguments": {"driver": "nvme", "id": "hot1", "serial": "hot1", "drive": "hot1", "bus": "rp1"}}' >/dev/null ||
		fail "QMP device_add failed"
	t0=$(_iotvm_us)
	wait_for '[[ -n $(disk_by_serial hot1) && -e /sys/block/$(disk_by_serial hot1)/queue/scheduler ]]' 30 'ls /sys/class/nvme /sys/block; dmesg | tail -n 20'
	disk=$(disk_by_serial hot1)
	note "kernel: /sys/block/$disk $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_add returned"
	wait_for "grep -Eq '^UDEV .* add +/devices/.*/$disk \(block\)' '$MON'" 30 "cat '$MON'"
	note "udev: add event for $disk processed $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_add returned"
	grep -E "/$disk \(block\)" "$MON" | sed 's/^/    | /'
	assert_exists "/dev/$disk"
	assert_sched "$disk" none
	assert_eq "$(nvme_ctrl_by_serial hot1)" "$(nvme_ctrl_of_disk "$disk")" "controller of $disk"
	echo "$disk" >/run/iotvm-hot-disk
}

check_hot_remove() {
	local disk t0 ctrl
	disk=$(cat /run/iotvm-hot-disk 2>/dev/null) || fail "no hot-added disk (check_hot_add failed)"
	ctrl=$(nvme_ctrl_by_serial hot1) || fail "no controller hot1"
	step "device_del hot1 ($ctrl, $disk)"
	qmp '{"execute": "device_del", "arguments": {"id": "hot1"}}' >/dev/null || fail "QMP device_del failed"
	t0=$(_iotvm_us)
	# QEMU 7.2's q35 does hotplug through ACPI (the guest logs "_OSC: platform
	# does not support [PCIeHotplug]" and acpiphp handles the slot), so there
	# is no 5 s attention-button wait as with native pciehp: removal is quick.
	wait_for "[[ ! -e /sys/block/$disk ]]" 30 'dmesg | tail -n 20'
	note "kernel: $disk gone $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_del returned"
	wait_for "grep -Eq '^UDEV .* remove +/devices/.*/$disk \(block\)' '$MON'" 30 "cat '$MON'"
	note "udev: remove event for $disk processed $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_del returned"
	wait_for "[[ ! -e /sys/class/nvme/$ctrl ]]" 10
	assert_not_exists "/dev/$disk"
	# QEMU frees the id once the guest has released the slot; until then a
	# second device_add with the same id would fail.
	wait_for "! qmp '{\"execute\": \"qom-list\", \"arguments\": {\"path\": \"/machine/peripheral\"}}' | grep -q '\"hot1\"'" 30
	note "QEMU released hot1 $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_del returned"
}

# The slot is reusable: a second add works the same way.
check_hot_readd() {
	local t0
	qmp '{"execute": "device_add", "arguments": {"driver": "nvme", "id": "hot1", "serial": "hot1", "drive": "hot1", "bus": "rp1"}}' >/dev/null ||
		fail "second QMP device_add failed"
	t0=$(_iotvm_us)
	wait_for '[[ -n $(disk_by_serial hot1) && -e /dev/$(disk_by_serial hot1) ]]' 30 'dmesg | tail -n 20'
	note "/dev/$(disk_by_serial hot1) back $(( ($(_iotvm_us) - t0) / 1000 )) ms after the second device_add returned"
	assert_sched "$(disk_by_serial hot1)" none
}
