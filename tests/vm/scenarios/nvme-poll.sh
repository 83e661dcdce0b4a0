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
	wait_for "iotunectl status | grep_q -E '^  $ctrl .*queues 2 default, 0 read, 2 poll'" 30 \
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

# iotunectl tune's poll trial, with iotuned.service running: the same reads
# interrupt-driven and polled (IORING_SETUP_IOPOLL) at QD1. Which wins is not
# asserted: under TCG a polling vCPU competes with QEMU's own emulation for
# the host's two cores, so polled reads won 2x in one run here and lost 34% in
# another (bench/fio-poll measures the effect properly). What is asserted: the
# trial ran and was judged, the polled reads really polled (no warm-up, so the
# controller's I/O vectors fire once per interrupt-driven read and never for a
# polled one), and nothing was proposed as a setting.
check_tune_measures_polled_reads() {
	local disk ctrl a b json
	disk=$(disk_by_serial nv0)
	ctrl=$(nvme_ctrl_of_disk "$disk")
	a=$(nvme_io_irqs "$ctrl")
	json=$(iotunectl tune "$disk" --knobs poll --depths 1 --rounds 5 --alpha 0.05 --runtime 500ms --warmup 0 \
		--json) || fail "iotunectl tune --knobs poll failed: $json"
	b=$(nvme_io_irqs "$ctrl")
	printf '%s' "$json" | iotvm_py -c 'import json, sys
d = json.load(sys.stdin)["devices"][0]
k = d["knobs"][0]
assert k["knob"] == "poll" and k["judged"] and k["skipped"] is None, k
c = {x["value"]: x for x in k["candidates"]}
ri, rp = c["interrupt"]["depths"][0]["reads"], c["polled"]["depths"][0]["reads"]
print("    interrupt-driven %d reads, polled %d reads (%s, gain %+.0f%% in %d/5 rounds); I/O interrupts %d" % (
    ri, rp, c["polled"]["verdict"], 100 * c["polled"]["gain"]["median"], c["polled"]["gain"]["rounds_favouring"],
    int(sys.argv[1])))
assert c["polled"]["verdict"] in ("winner", "tie", "worse", "mixed"), c["polled"]
assert k["changed"] is False and d["proposal"] is None and d["restored"] is True, d
assert ri > 100 and rp > 100, (ri, rp)
# every interrupt-driven read raises one interrupt (a few more: reads that ended
# after a probe stopped counting); a polled one none
assert int(sys.argv[1]) < ri + rp // 2, "polled reads raised interrupts"
' $((b - a)) || fail "the poll trial: $json"
	note "ok: polled reads measured without interrupts, judged, never proposed as a setting"
}

# diagnose, on the same disk: completions against the I/O vectors' interrupts
# tell polled reads (fio --hipri: io_uring with IORING_SETUP_IOPOLL) from
# interrupt-driven ones.
check_diagnose_tells_polled_reads() {
	local disk pid json=/tmp/diag-poll.json hipri
	disk=$(disk_by_serial nv0)
	for hipri in 1 0; do
		fio --name=poll --filename="/dev/$disk" --rw=randread --bs=4k --direct=1 --ioengine=io_uring \
			--hipri="$hipri" --iodepth=1 --time_based --runtime=20 >/dev/null 2>&1 &
		pid=$!
		# shellcheck disable=SC2064 # this pid, now
		trap "kill $pid 2>/dev/null || true" EXIT
		local n0
		n0=$(awk '{ print $1 }' "/sys/block/$disk/stat")
		wait_for "(( \$(awk '{ print \$1 }' /sys/block/$disk/stat) > $n0 + 200 ))" 30
		iotunectl diagnose "$disk" --json --interval 2s >"$json" || true
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		iotvm_py - "$json" "$hipri" <<-'PY' || fail "diagnose with fio --hipri=$hipri"
			import json, sys
			d = json.load(open(sys.argv[1]))["devices"][0]
			f = {x["kind"]: x for x in d["findings"]}
			want = "polled-completions" if sys.argv[2] == "1" else "poll-queues-unused"
			assert want in f, sorted(f)
			v = f[want]["values"]
			print("    --hipri=%s: %s: %s" % (sys.argv[2], want, f[want]["summary"]))
			assert v["completions"] >= 100, v
			assert (v["polled_share"] >= 0.9) if sys.argv[2] == "1" else (v["polled_share"] <= 0.05), v
		PY
	done
	note "ok: polled reads seen as completions without interrupts; interrupt-driven ones as poll queues unused"
}

check_journal_entries_match_catalog() {
	# Last: the events of the checks above, against the installed catalog.
	assert_journal_matches_catalog
}
