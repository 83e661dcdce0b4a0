# SPDX-License-Identifier: LGPL-2.1-or-later
# nvme-poll: a machine booted with nvme.poll_queues=1 (as after the reboot that
# `pending-reboot` asks for). iotuned.service, under the real systemd, shows the
# poll queue per controller in `iotunectl status`; a profile that wants one poll
# queue is satisfied (ok, no drop-in written, nothing rebound); one that wants two
# (with `apply: rebind`) gets the drop-in asking for two and a rebind that gives them.

VM_DEVICES=("nvme nv0")
VM_CMDLINE="nvme.poll_queues=1"

DROPIN=/etc/modprobe.d/iotuned-nvme.conf
CONF=/etc/iotuned

use_poll() { # N
	mkdir -p "$CONF/profiles" "$CONF/iotuned.yaml.d"
	printf 'extends: latency\nnvme: { poll_queues: %s, apply: rebind }\n' "$1" >"$CONF/profiles/poll.yaml"
	printf 'rules:\n  - { match: { kernel: "nvme*" }, profile: poll }\n' >"$CONF/iotuned.yaml.d/50-poll.yaml"
}

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	assert_match "nvme.poll_queues=1" "$(cat /proc/cmdline)" "kernel command line"
	assert_eq 1 "$(cat /sys/module/nvme/parameters/poll_queues)" "nvme.poll_queues"
	DISK=$(disk_by_serial nv0)
	echo "$DISK" >/run/iotvm-disk
	assert_eq 1 "$(cat "/sys/block/$DISK/queue/io_poll")" "$DISK io_poll"
}

check_status_shows_poll_queue() {
	local disk ctrl out
	disk=$(</run/iotvm-disk)
	ctrl=$(basename "$(readlink -f "/sys/block/$disk/device")")
	use_poll 1
	assert_ok systemctl start iotuned.service
	out=$(iotunectl status) || fail "iotunectl status exited $?: $out"
	printf '%s\n' "$out" | sed 's/^/    | /'
	assert_match "$ctrl +[0-9a-f:.]+, QEMU NVMe Ctrl, firmware [^;]+; queues 2 default, 0 read, 1 poll; APST not supported" \
		"$(grep -E "^  $ctrl " <<<"$out")" "status line of $ctrl"
	iotunectl --json status >/run/iotvm-status.json || fail "iotunectl --json status"
	assert_eq ok "$(json_setting /run/iotvm-status.json "$disk" poll_queues state)" "$disk poll_queues (one wanted, one present)"
	assert_not_exists "$DROPIN"
	# nothing was rebound: the journal says so, and the disk is still the boot one
	assert_eq "" "$(journalctl -b -u iotuned --no-pager -o cat | grep -i rebound || true)" "rebind messages"
}

check_more_than_present_rebinds() {
	local disk j=/run/iotvm-apply.json
	disk=$(</run/iotvm-disk)
	assert_ok systemctl stop iotuned.service
	use_poll 2
	# apply: rebind is allowed, but the controller has one poll queue and nvme.poll_queues
	# is 1: the drop-in must first say 2. The rebind that follows gives the new count.
	iotunectl --json apply >"$j" || fail "apply exited $?"
	assert_match "^options nvme poll_queues=2$" "$(grep '^options' "$DROPIN")" "$DROPIN"
	assert_eq changed "$(json_setting "$j" "$disk" poll_queues state)" "$disk poll_queues"
	assert_eq 2 "$(json_setting "$j" "$disk" poll_queues observed)" "$disk poll queues after the rebind"
	assert_ok iotunectl verify
}
