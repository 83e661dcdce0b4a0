# SPDX-License-Identifier: LGPL-2.1-or-later
# nvme-poll: a machine booted with nvme.poll_queues=1 (as after the reboot that
# `pending-reboot` asks for). iotuned.service, under the real systemd, shows the
# poll queue per controller in `iotunectl status`; a profile that wants one poll
# queue is satisfied (ok, no drop-in written, nothing rebound); on a reload to one
# that wants two (with `apply: rebind`), the daemon writes the drop-in, rebinds the
# idle controller under its hardened unit and tunes the disk that comes back.

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
	ctrl=$(nvme_ctrl_of_disk "$disk")
	use_poll 1
	assert_ok systemctl start iotuned.service
	out=$(iotunectl status) || fail "iotunectl status exited $?: $out"
	printf '%s\n' "$out" | sed 's/^/    | /'
	assert_match "$ctrl +[0-9a-f:.]+, QEMU NVMe Ctrl, firmware [^;]+; queues 2 default, 0 read, 1 poll; APST not supported" \
		"$(grep -E "^  $ctrl " <<<"$out")" "status line of $ctrl"
	iotunectl --json status >/run/iotvm-status.json || fail "iotunectl --json status"
	assert_eq ok "$(json_setting /run/iotvm-status.json "$disk" poll_queues state)" "$disk poll_queues (one wanted, one present)"
	assert_not_exists "$DROPIN"
	# nothing was rebound (the messages iotuned logs when it does are absent)
	assert_eq "" "$(journalctl -b -u iotuned --no-pager -o cat | grep -E 'Rebinding|bound again' || true)" \
		"rebind messages"
}

check_daemon_rebinds_for_more() {
	local disk ctrl out
	disk=$(</run/iotvm-disk)
	ctrl=$(nvme_ctrl_of_disk "$disk")
	# iotuned.service (hardened unit) from the previous check is running. A profile
	# that wants two poll queues, with `apply: rebind`, on a reload: the daemon
	# writes the drop-in, rebinds the idle controller, and tunes its disk again
	# when udev brings it back.
	use_poll 2
	assert_ok systemctl reload iotuned.service
	wait_for "grep -qx 'options nvme poll_queues=2' '$DROPIN'" 15 "journalctl -b -u iotuned -n 30 --no-pager"
	wait_for "iotunectl status | grep -Eq '^  $ctrl .*queues 2 default, 0 read, 2 poll'" 30 \
		"iotunectl status; journalctl -b -u iotuned -n 30 --no-pager"
	note "status shows 2 poll queues on $ctrl after ${WAITED}s"
	assert_match "controller $ctrl was unbound and bound again for new queue counts" \
		"$(journalctl -b -u iotuned --no-pager -o cat | grep 'bound again')" "journal"
	assert_match "$ctrl poll_queues 1 -> 2" \
		"$(journalctl -b -u iotuned --no-pager -o cat KNOB=poll_queues)" "journal, KNOB=poll_queues"
	assert_eq 2 "$(cat /sys/module/nvme/parameters/poll_queues)" "live nvme.poll_queues"
	disk=$(disk_by_serial nv0)
	assert_eq 1 "$(cat "/sys/block/$disk/queue/io_poll")" "$disk io_poll"
	# the disk that came back is tuned again (latency: scheduler none, rq_affinity 2)
	wait_for "[[ \$(cat /sys/block/$disk/queue/rq_affinity) == 2 ]]" 15 "iotunectl status"
	assert_sched "$disk" none
	iotunectl --json status >/run/iotvm-status.json || fail "iotunectl --json status"
	assert_eq ok "$(json_setting /run/iotvm-status.json "$disk" poll_queues state)" "$disk poll_queues"
	assert_eq active "$(systemctl is-active iotuned.service)" "iotuned.service"
}

check_journal_entries_match_catalog() {
	# Last: the events of the checks above, against the installed catalog.
	assert_journal_matches_catalog
}
