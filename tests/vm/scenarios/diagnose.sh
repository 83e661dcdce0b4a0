# SPDX-License-Identifier: LGPL-2.1-or-later
# diagnose: the findings of `iotunectl diagnose` and of the daemon, on the real
# kernel with iotuned.service, udevd and journald, in the two-node guest.
#  - Drift counted right: one hand change of the scheduler is one drift (the
#    nr_requests reset the correction causes is not another), and seed 002's
#    legacy udev rule, which puts mq-deadline back on every change event, is a
#    fight: each change event's rewrite is drift, five are a conflict, and the
#    conflict event, status and diagnose name the rule by file:line.
#  - The software-queue signature under fio on a disk with mq-deadline (a
#    null_blk disk of depth 4 and 1 ms completions: see the check), from
#    diagnose and from the daemon's own samples (journal, status, metrics).
#  - A vector moved to the other NUMA node is flagged (irq-off-node).
#  - QEMU's SMART log, read through libnvme, matches nvme-cli's smart-log.

# numa.sh's machine: the suite runs this after numa.sh and irq.sh on their
# boot ('numa+irq+diagnose'), which leave iotuned stopped, irqbalance running
# with nothing banned, and only irq.sh's 00-vmtest.yaml drop-in.
VM_NUMA=2
VM_DEVICES=(
	"nvme nv0 size=256M"         # pcie.0: no NUMA node; the latency profile (none)
	"nvme nvn1 node=1 size=256M" # node 1; the mixed profile (mq-deadline)
	"sata sata0"                 # (irq.sh's AHCI vector; no check here reads sda)
)

DROPIN_DIR=/etc/iotuned/iotuned.yaml.d
RULE=/etc/udev/rules.d/60-legacy-sched.rules
PROM=/var/lib/prometheus/node-exporter/iotuned.prom

ijournal() { journalctl -b -u iotuned.service --no-pager "$@"; }
cursor_now() { echo "$EPOCHREALTIME"; }
nv0_disk() { disk_by_serial nv0; }
nvn1_disk() { disk_by_serial nvn1; }

# Drift events of DISK (optionally for KNOB) since SINCE (cursor_now).
drift_events() { # SINCE DISK [KNOB]
	ijournal --since="@$1" DEVICE="$2" MESSAGE_ID=ddd3ea3720e646139165099acdaad3df ${3:+KNOB=$3} -o cat |
		grep -c . || true
}

# The findings of one disk in `iotunectl diagnose --json` output, one per line:
# "severity kind knob source".
finding_lines() { # JSONFILE
	iotvm_py - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["command"] == "diagnose", doc
for d in doc["devices"]:
    for f in d["findings"]:
        print(f["severity"], f["kind"], f["knob"] or "-", f["source"] or "-")
PY
}

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	command -v iotuned >/dev/null || fail "iotuned is not installed in the guest"
	local nv nn
	nv=$(nv0_disk)
	nn=$(nvn1_disk)
	[[ -n $nv && -n $nn ]] || fail "no NVMe disks nv0, nvn1"
	# A disk that takes 4 requests at a time, each completed after 1 ms (see
	# check_software_queue_under_fio). 6.1 names it after its configfs directory.
	assert_ok modprobe null_blk nr_devices=0
	local nb=/sys/kernel/config/nullb/nullb1
	mkdir -p "$nb" || fail "cannot create $nb (null_blk configfs)"
	echo 2 >"$nb/irqmode"
	echo 1000000 >"$nb/completion_nsec"
	echo 4 >"$nb/hw_queue_depth"
	echo 2 >"$nb/queue_mode"
	echo 64 >"$nb/size" # MiB
	echo 1 >"$nb/power"
	assert_ok udevadm settle --timeout=60
	[[ -e /sys/block/nullb1 ]] || fail "the configfs null_blk disk is not nullb1"
	mkdir -p "$DROPIN_DIR" "${PROM%/*}" /etc/iotuned/profiles
	printf 'extends: mixed\nqueue: { nr_requests: 64 }\n' >/etc/iotuned/profiles/deep-deadline.yaml
	cat >"$DROPIN_DIR/50-diagnose-test.yaml" <<-YAML
		reassert: { interval: 1s }
		metrics: { textfile: $PROM }
		rules:
		  - { name: mixed-nvn1, match: { serial: nvn1 }, profile: mixed }
		  - { name: deep-deadline, match: { kernel: nullb1 }, profile: deep-deadline }
	YAML
	assert_ok systemctl start iotuned.service
	assert_sched "$nv" none
	assert_sched "$nn" mq-deadline
}

check_one_hand_change_is_one_drift() {
	local nv since
	nv=$(nv0_disk)
	since=$(cursor_now)
	# The kernel resets nr_requests with the switch (block/elevator.c); iotuned's
	# correction switches back and so resets it again: written, not drift.
	echo mq-deadline >"/sys/block/$nv/queue/scheduler"
	wait_for "[[ \$(sched_of $nv) == none ]]" 10 'ijournal -n 20'
	wait_for "(( \$(drift_events $since $nv scheduler) >= 1 ))" 10 'ijournal -n 20'
	sleep "$(slow_ms 3000)e-3" # three more drift checks: nothing else may be counted
	ijournal --since="@$since" DEVICE="$nv" -o cat | sed 's/^/    | /'
	assert_eq 1 "$(drift_events "$since" "$nv")" "drift events for $nv after one hand change"
	assert_eq 1 "$(drift_events "$since" "$nv" scheduler)" "scheduler drift events"
	note "ok: one hand change of the scheduler, one drift (nr_requests rewritten, not counted)"
}

check_legacy_udev_rule_is_a_conflict_naming_the_rule() {
	local nv since i json=/tmp/diag-rule.json entry writer out
	nv=$(nv0_disk)
	cat >"$RULE" <<-'RULES'
		# seed 002: left over from the old image
		ACTION=="add|change", KERNEL=="nvme[0-9]*n[0-9]*", ATTR{queue/scheduler}="mq-deadline"
	RULES
	assert_ok udevadm control --reload
	# Counts from zero: the check before left a drift in this minute's window.
	assert_ok systemctl restart iotuned.service
	since=$(cursor_now)
	for i in 1 2 3 4 5; do
		assert_ok udevadm trigger --action=change --settle "/sys/block/$nv"
		wait_for "[[ \$(sched_of $nv) == none ]]" 10 'ijournal -n 20'
	done
	# In conflict after the fifth: held for 30 s, so the next change event leaves
	# the rule's mq-deadline, reported as drifted (status exits 1).
	wait_for "iotunectl status | grep_q -F '$nv scheduler: in conflict'" 10 'iotunectl status'
	assert_ok udevadm trigger --action=change --settle "/sys/block/$nv"
	sleep "$(slow_ms 1000)e-3"
	assert_sched "$nv" mq-deadline
	entry=$(ijournal --since="@$since" MESSAGE_ID=095bdbb2377f45468291453ee991e258 DEVICE="$nv" -o json -n 1)
	writer=$(printf '%s' "$entry" | iotvm_py -c 'import json,sys; e=json.load(sys.stdin); print(e.get("WRITER",""))')
	note "conflict: $(printf '%s' "$entry" | iotvm_py -c 'import json,sys; print(json.load(sys.stdin)["MESSAGE"])')"
	assert_eq "udev rule $RULE:2 writing mq-deadline" "$writer" "WRITER= of the conflict event"
	(($(ijournal --since="@$since" DEVICE="$nv" DRIFT_SEEN=udev-change -o cat | grep -c .) >= 1)) ||
		fail "no drift was seen at a udev change event (DRIFT_SEEN=udev-change)"
	# Each rewrite is one drift, seen by a drift check or at the change event,
	# whichever comes first; the nr_requests the switches reset is none.
	assert_eq 5 "$(drift_events "$since" "$nv" scheduler)" "scheduler drift events"
	assert_eq 0 "$(drift_events "$since" "$nv" nr_requests)" "nr_requests drift events"
	assert_journal_matches_catalog
	out=$(iotunectl status) && fail "status exited 0 with a setting held back"
	printf '%s\n' "$out" | grep -F "$nv scheduler: in conflict" | sed 's/^/    | /'
	printf '%s\n' "$out" | grep_q -F "$nv scheduler: in conflict (5 drifts); written by udev rule $RULE:2" ||
		fail "status does not name the rule: $out"
	iotunectl diagnose "$nv" --json --interval 200ms >"$json" && fail "diagnose exited 0 with warnings"
	finding_lines "$json" | sed 's/^/    | /'
	finding_lines "$json" | grep_q -x "warning udev-rule-writer scheduler $RULE:2" || fail "no udev-rule-writer finding"
	finding_lines "$json" | grep_q -x "warning fights-iotuned scheduler $RULE:2" || fail "no fights-iotuned finding"
	finding_lines "$json" | grep_q -x "warning conflict scheduler -" || fail "no conflict finding from the daemon"
	iotunectl diagnose "$nv" | sed 's/^/    | /' || true
	rm -f "$RULE"
	assert_ok udevadm control --reload
	# The hold would last 30 s: a restart starts afresh (and restores, then tunes, nv0).
	assert_ok systemctl restart iotuned.service
	wait_for "[[ \$(sched_of $nv) == none ]]" 10 'ijournal -n 20'
	note "ok: 5 rewrites by the rule on change events -> 1 conflict naming $RULE:2, in the journal, status and diagnose"
}

# fio's reads at depth 32 on DISK for SECONDS, in the background.
fio_load() { # DISK SECONDS
	fio --name=load --filename="/dev/$1" --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth=32 \
		--time_based --runtime="$2" >/dev/null 2>&1 &
	echo $!
}

# Wait until DISK has completed N more reads than now (fio takes seconds to start under TCG).
wait_reads() { # DISK N
	local n0
	n0=$(awk '{ print $1 }' "/sys/block/$1/stat")
	wait_for "(( \$(awk '{ print \$1 }' /sys/block/$1/stat) > $n0 + $2 ))" 30
}

# The software queue, made certain: a null_blk disk that takes 4 requests at a
# time and completes each after 1 ms (a timer), with mq-deadline and 64 requests
# allowed: fio's 32 reads queue in the scheduler, 4 at the device. (QEMU's NVMe
# under TCG is CPU-bound: fio keeps between 2.6 and 9.6 reads in flight there,
# run to run, so it is no fixed point to test against.) With none, requests beyond
# the 4 wait for a tag before they are accounted: no queue builds.
check_software_queue_under_fio() {
	local d=nullb1 pid since json=/tmp/diag-swq.json
	assert_sched "$d" mq-deadline
	assert_file_eq "/sys/block/$d/queue/nr_requests" 64
	since=$(cursor_now)
	pid=$(fio_load "$d" 30)
	# shellcheck disable=SC2064 # this pid, now
	trap "kill $pid 2>/dev/null || true" EXIT
	wait_reads "$d" 500
	iotunectl diagnose "$d" --json --interval 2s >"$json" || true
	finding_lines "$json" | sed 's/^/    | /'
	iotvm_py - "$json" <<-'PY' || fail "diagnose under fio: no software-queue finding with its numbers"
		import json, sys
		d = json.load(open(sys.argv[1]))["devices"][0]
		f = [f for f in d["findings"] if f["kind"] == "software-queue"]
		assert f, [x["summary"] for x in d["findings"]]
		v = f[0]["values"]
		print("    software-queue:", f[0]["summary"])
		assert f[0]["severity"] == "warning" and f[0]["knob"] == "scheduler", f[0]
		assert v["queue_depth"] >= 16 and v["device_inflight"] <= 8 and v["await_ms"] >= 4, v
	PY
	# The daemon's own samples (every drift check) saw it too: logged once, in status and metrics.
	wait_for "ijournal --since=@$since DEVICE=$d FINDING=software-queue -o cat | grep_q ." 20 'ijournal -n 20'
	ijournal --since="@$since" DEVICE="$d" FINDING=software-queue -o cat | sed 's/^/    | /'
	iotunectl status | grep -F "$d software-queue:" | sed 's/^/    | /'
	iotunectl status | grep_q -F "$d software-queue:" || fail "status does not list the software-queue finding"
	grep -qF "iotuned_device_findings{device=\"$d\",kind=\"software-queue\",severity=\"warning\"} 1" "$PROM" ||
		fail "no software-queue series in $PROM"
	grep -E "iotuned_device_(queue_depth|await_seconds|utilisation_ratio)\{device=\"$d\"\}" "$PROM" | sed 's/^/    | /'
	assert_journal_matches_catalog
	kill "$pid" 2>/dev/null || true
	# The same load under none: no queue, no finding. (iotuned would put
	# mq-deadline back: it stops meanwhile.)
	assert_ok systemctl stop iotuned.service
	echo none >"/sys/block/$d/queue/scheduler"
	pid=$(fio_load "$d" 20)
	trap "kill $pid 2>/dev/null || true" EXIT
	wait_reads "$d" 500
	iotunectl diagnose "$d" --json --interval 2s >"$json" || true
	kill "$pid" 2>/dev/null || true
	iotvm_py -c 'import json,sys
for f in json.load(open(sys.argv[1]))["devices"][0]["findings"]:
    if f["kind"] in ("io-load", "software-queue"): print("    none:", f["kind"], f["summary"])' "$json"
	finding_lines "$json" | grep_q " software-queue " && fail "software-queue flagged under none"
	assert_ok systemctl start iotuned.service
	note "ok: software-queue under mq-deadline (diagnose, journal, status, metrics); none under none"
}

# Admin commands on CTRL's admin queue in a loop for SECONDS (Get Log Page,
# SMART): its vector fires once per command. One process, not nvme-cli per
# command: a fork+exec costs ~70 ms under TCG.
admin_load() { # CTRL SECONDS
	"$IOTVM_PY" -S - "/dev/$1" "$2" >/dev/null 2>/tmp/admin-load.err <<'PY' & # $!: Python's own
import ctypes, fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
buf = ctypes.create_string_buffer(512)
# struct nvme_admin_cmd (include/uapi/linux/nvme_ioctl.h): Get Log Page 0x02, log 0x02
# (SMART), NUMD 127 (512 bytes), all namespaces.
cmd = bytearray(struct.pack("=BBHIII QQ II IIIIII II", 0x02, 0, 0, 0xFFFFFFFF, 0, 0, 0,
                            ctypes.addressof(buf), 0, 512, (127 << 16) | 0x02, 0, 0, 0, 0, 0, 0, 0))
NVME_IOCTL_ADMIN_CMD = 0xC0484E41
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    fcntl.ioctl(fd, NVME_IOCTL_ADMIN_CMD, cmd)
PY
	echo $!
}

check_vector_on_the_other_node_is_flagged() {
	local nn ctrl irq pid json=/tmp/diag-irq.json
	nn=$(nvn1_disk)
	ctrl=$(nvme_ctrl_of_disk "$nn")
	assert_file_eq "/sys/class/nvme/$ctrl/device/numa_node" 1
	# Nobody else places it meanwhile: iotuned (which pins it to node 1) and irqbalance stop.
	assert_ok systemctl stop iotuned.service irqbalance.service
	irq=$(irq_by_name "${ctrl}q0") || fail "no admin vector ${ctrl}q0"
	echo 0 >"/proc/irq/$irq/smp_affinity_list"
	pid=$(admin_load "$ctrl" 60)
	# shellcheck disable=SC2064 # this pid, now
	trap "kill $pid 2>/dev/null || true" EXIT
	iotunectl diagnose "$nn" --json --interval 3s >"$json" || true
	iotvm_py -c 'import json,sys
for f in json.load(open(sys.argv[1]))["devices"][0]["findings"]:
    print("    |", f["severity"], f["kind"], f["summary"])' "$json"
	finding_lines "$json" | grep_q "^warning irq-off-node " ||
		fail "the admin vector firing on node 0's CPU 0 was not flagged ($(cat /tmp/admin-load.err))"
	iotvm_py -c 'import json,sys
for f in json.load(open(sys.argv[1]))["devices"][0]["findings"]:
    if f["kind"] == "irq-off-node": print("    irq-off-node:", f["summary"])' "$json"
	# Back on node 1: no finding.
	echo 1 >"/proc/irq/$irq/smp_affinity_list"
	iotunectl diagnose "$nn" --json --interval 3s >"$json" || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	finding_lines "$json" | grep_q " irq-off-node " && fail "irq-off-node flagged with the vector on node 1"
	assert_ok systemctl start irqbalance.service iotuned.service
	note "ok: ${ctrl}q0 (irq $irq) on CPU 0 of node 0 flagged for a node-1 disk; on CPU 1 not"
}

# The SMART / health log as diagnose reads it (libnvme), against nvme-cli's
# smart-log of the same controller; then a critical warning QEMU raises on
# request (its smart_critical_warning property) is a critical finding, first,
# and the first line of a tuning report on that drive.
check_smart_matches_nvme_cli_and_a_critical_warning_is_first() {
	local nv ctrl json=/tmp/diag-smart.json cli=/tmp/smart-cli.json rc=0 out
	nv=$(nv0_disk)
	ctrl=$(nvme_ctrl_of_disk "$nv")
	nvme smart-log "/dev/$ctrl" -o json >"$cli" || fail "nvme smart-log /dev/$ctrl failed"
	iotunectl diagnose "$nv" --json --interval 100ms >"$json" || true
	iotvm_py - "$json" "$cli" <<-'PY' || fail "diagnose's SMART numbers differ from nvme-cli's"
		import json, sys
		d = json.load(open(sys.argv[1]))["devices"][0]
		cli = json.load(open(sys.argv[2]))
		smart = [f for f in d["findings"] if f["kind"] == "smart"]
		assert len(smart) == 1, [f["kind"] for f in d["findings"]]
		v = smart[0]["values"]
		pairs = [("temperature_c", cli["temperature"] - 273), ("available_spare_pct", cli["avail_spare"]),
		         ("spare_threshold_pct", cli["spare_thresh"]), ("percent_used", cli["percent_used"]),
		         ("media_errors", cli["media_errors"]), ("power_on_hours", cli["power_on_hours"]),
		         ("unsafe_shutdowns", cli["unsafe_shutdowns"]), ("error_log_entries", cli["num_err_log_entries"])]
		for name, want in pairs:
		    want = int(want)  # nvme-cli prints the 128-bit counters as strings
		    print("    %-20s diagnose %-8g nvme-cli %g" % (name, v[name], want))
		    assert v[name] == want, (name, v[name], want)
		assert int(cli["critical_warning"]) == 0 and not [f for f in d["findings"] if f["kind"] == "smart-critical-warning"]
	PY
	# Bit 1: temperature above a threshold (NVMe SMART byte 0).
	qmp "{\"execute\": \"qom-set\", \"arguments\": {\"path\": \"/machine/peripheral/nv0\", \"property\": \"smart_critical_warning\", \"value\": 2}}" >/dev/null ||
		fail "QMP qom-set smart_critical_warning failed"
	nvme smart-log "/dev/$ctrl" -o json >"$cli" || fail "nvme smart-log /dev/$ctrl failed"
	iotunectl diagnose "$nv" --json --interval 100ms >"$json" || rc=$?
	iotunectl diagnose "$nv" --interval 100ms 2>&1 | sed 's/^/    | /' || true
	assert_eq 2 "$rc" "diagnose's exit status with a critical finding"
	iotvm_py - "$json" "$cli" <<-'PY' || fail "the critical warning is not the first finding"
		import json, sys
		d = json.load(open(sys.argv[1]))["devices"][0]
		cli = json.load(open(sys.argv[2]))
		assert int(cli["critical_warning"]) == 2, cli["critical_warning"]
		first = d["findings"][0]
		print("    first:", first["severity"], first["kind"], first["summary"])
		assert first["severity"] == "critical" and first["kind"] in ("smart-critical-warning", "thermal-throttle"), first
		assert [f for f in d["findings"] if f["kind"] == "smart-critical-warning" and f["values"]["critical_warning"] == 2]
	PY
	# A tuning report on that drive says so first.
	out=$(iotunectl tune "$nv" --knobs scheduler --rounds 3 --alpha 0.2 --depths 1 --runtime 100ms --warmup 0 2>&1) ||
		fail "tune on the drive with a critical warning failed: $out"
	printf '%s\n' "$out" | head -n 3 | sed 's/^/    | /'
	[[ $(printf '%s\n' "$out" | head -n 1) == "$nv: smart-critical-warning: SMART critical warning 0x02: "* ]] ||
		fail "tune's report does not begin with the critical warning"
	qmp "{\"execute\": \"qom-set\", \"arguments\": {\"path\": \"/machine/peripheral/nv0\", \"property\": \"smart_critical_warning\", \"value\": 0}}" >/dev/null || true
	note "ok: SMART through libnvme matches nvme-cli's smart-log; QEMU's critical warning 0x02 is the first finding, exit 2, and tune's report begins with it"
}
