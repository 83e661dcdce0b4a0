# SPDX-License-Identifier: LGPL-2.1-or-later
# boot: the test bed itself works. The real kernel, systemd, udev and irqbalance
# come up on every kind of device the other scenarios use, and the block layer
# shows what iotuned relies on (schedulers, native multipath hidden paths).

# --- machine (read by run-scenario on the host) -------------------------------------
VM_DEVICES=(
	"nvme nv0"              # plain controller, one namespace
	"nvme nv1 ns=2"         # one controller, two namespaces
	"subsys mp0 ctrls=2"    # two controllers sharing a namespace: native multipath
	"sata sata0"            # q35's AHCI -> sda
	"virtio vd0"            # virtio-blk-pci -> vda
	"nullb 2"               # null_blk, 2 devices
)
# Units allowed to be failed at boot (none today); anything else failed is a FAIL.
VM_EXPECTED_FAILED=()

# --- guest body ------------------------------------------------------------------------
scenario_setup() {
	# Coldplug has been triggered by the time the test unit starts, but udev
	# may still be working through it.
	assert_ok udevadm settle --timeout=60
}

check_system_running() {
	local state failed u
	state=$(systemctl is-system-running --wait 2>&1) || true
	failed=$(systemctl list-units --failed --plain --no-legend | awk '{print $1}')
	note "system state: $state; failed units: ${failed:-none}"
	if [[ $state == degraded ]]; then
		for u in $failed; do
			[[ " ${VM_EXPECTED_FAILED[*]} " == *" $u "* ]] ||
				fail "unexpected failed unit $u: $(systemctl status --no-pager -n 5 "$u" 2>&1 | tr '\n' ' ')"
		done
		note "ok: only expected units failed"
	else
		assert_eq running "$state" "systemctl is-system-running"
	fi
}

check_services() {
	assert_eq active "$(systemctl is-active systemd-udevd.service)" "systemd-udevd"
	assert_eq active "$(systemctl is-active irqbalance.service)" "irqbalance"
	assert_eq 1 "$(pgrep -c -x irqbalance)" "irqbalance processes"
}

check_nvme_disks() {
	assert_exists /sys/block/nvme0n1/queue/scheduler
	local c0 c1 d
	c0=$(nvme_ctrl_by_serial nv0) || fail "no controller with serial nv0"
	c1=$(nvme_ctrl_by_serial nv1) || fail "no controller with serial nv1"
	assert_eq 1 "$(nvme_ctrl_disks "$c0" | wc -l)" "$c0 (nv0) namespaces"
	assert_eq 2 "$(nvme_ctrl_disks "$c1" | wc -l)" "$c1 (nv1) namespaces"
	for d in $(nvme_ctrl_disks "$c0") $(nvme_ctrl_disks "$c1"); do
		assert_match '^nvme[0-9]+n[0-9]+$' "$d" "disk name (no multipath for single controllers)"
		assert_sched "$d" none
		assert_exists "/sys/block/$d/mq/0/nr_tags"
		note "$d: nr_requests $(<"/sys/block/$d/queue/nr_requests"), nr_tags $(<"/sys/block/$d/mq/0/nr_tags"), hw queues $(ls "/sys/block/$d/mq" | wc -l)"
	done
}

check_multipath() {
	assert_file_eq /sys/module/nvme_core/parameters/multipath Y
	local ctrls c path head nhead=0
	ctrls=$(nvme_ctrls_by_serial mp0) || fail "no controllers with serial mp0"
	assert_eq 2 "$(echo "$ctrls" | wc -l)" "controllers in subsystem mp0"
	for c in $ctrls; do
		assert_match 'mp0$' "$(<"/sys/class/nvme/$c/subsysnqn")" "$c subsysnqn"
		path=$(nvme_ctrl_disks "$c" 1)
		assert_match '^nvme[0-9]+c[0-9]+n1$' "$path" "$c path disk"
		assert_file_eq "/sys/block/$path/hidden" 1
		assert_not_exists "/dev/$path" "/dev/$path (hidden disks get no device node)"
		assert_match '^\[[a-z-]+\]' "$(<"/sys/block/$path/queue/scheduler")" "$path scheduler (bracketed: tunable)"
		assert_exists "/sys/block/$path/mq"
	done
	# The head disk lives under the subsystem, not under a controller.
	for head in /sys/class/nvme-subsystem/*/nvme*n*; do
		[[ $(<"${head%/*}/subsysnqn") == *mp0 ]] || continue
		head=${head##*/}
		nhead=$((nhead + 1))
		note "head disk $head"
		assert_not_exists "/sys/block/$head/mq" "$head/mq (bio-based head disk)"
		assert_file_eq "/sys/block/$head/queue/scheduler" none
		assert_exists "/dev/$head"
	done
	assert_eq 1 "$nhead" "head disks of subsystem mp0"
}

check_sata_virtio_nullb() {
	local sd vd
	sd=$(disk_by_serial sata0) || fail "no disk with serial sata0"
	vd=$(disk_by_serial vd0) || fail "no disk with serial vd0"
	assert_eq sda "$sd" "SATA disk"
	assert_eq vda "$vd" "virtio disk"
	# Facts about these emulated disks that tuning rules depend on.
	note "sda: rotational $(<"/sys/block/sda/queue/rotational"), scheduler $(sched_of sda)"
	note "vda: rotational $(<"/sys/block/vda/queue/rotational"), scheduler $(sched_of vda)"
	assert_sched sda mq-deadline
	assert_exists /sys/block/nullb0/queue/scheduler
	assert_exists /sys/block/nullb1/queue/scheduler
	assert_not_exists /sys/block/nullb2
}
