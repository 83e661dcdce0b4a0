# SPDX-License-Identifier: LGPL-2.1-or-later
# nvme: controller-level settings through libnvme on QEMU's NVMe controller, read
# back independently with nvme-cli. Identity (Identify Controller, Get Features
# 0x07) as iotunectl explain reports it; APST unsupported (QEMU reports APSTA 0);
# interrupt coalescing: QEMU answers Get Features 0x08, reports it not changeable
# (SEL=11b) and refuses Set Features with Feature Not Changeable: `unsupported`,
# not a failure, and not drift for verify; io_timeout
# read back; poll queues asked for on a system without them: the modprobe.d
# drop-in and pending-reboot; `apply: rebind` rebinds the idle controller, which
# comes back with a working poll queue (io_poll=1, polled reads land on it), and
# refuses the controller whose namespace is mounted; nvme.io_queue_depth 2048 (QEMU's
# CAP.MQES + 1): a rebind gives the idle controller a tag set of 2047 that
# nr_requests (none, max) follows, while the mounted one keeps 1023, and asking for
# 4095 comes back with 2048 and says so; restore removes the drop-in.

# The machine of apply-verify (the same two controllers, and a virtio and a
# SATA disk that nothing here looks at), so that both share one boot: meson's
# `apply-verify+nvme` runs apply-verify first, which ends with every disk back at
# its boot values.
VM_DEVICES=(
	"nvme nv0" # idle: may be rebound
	"nvme nv1" # its namespace gets mounted: must never be rebound
	"virtio vd0"
	"sata sata0"
)

DROPIN=/etc/modprobe.d/iotuned-nvme.conf
CONF=/etc/iotuned
BUSY_MNT=/mnt/iotvm-busy

idle_disk() { disk_by_serial nv0; }
busy_disk() { disk_by_serial nv1; }

profiles() { # the profiles this scenario uses; use_profile picks one for both disks
	mkdir -p "$CONF/profiles" "$CONF/iotuned.yaml.d"
	cat >"$CONF/profiles/co.yaml" <<'YAML'
extends: latency
queue: { io_timeout: 10000 }
nvme: { coalescing: { threshold: 8, time_us: 200 } }
YAML
	cat >"$CONF/profiles/poll.yaml" <<'YAML'
extends: latency
nvme: { poll_queues: 1 }
YAML
	cat >"$CONF/profiles/poll-rebind.yaml" <<'YAML'
extends: latency
nvme: { poll_queues: 1, apply: rebind }
YAML
	cat >"$CONF/profiles/deep-rebind.yaml" <<'YAML'
extends: latency
nvme: { poll_queues: 1, io_queue_depth: 2048, apply: rebind }
YAML
	cat >"$CONF/profiles/deep-4095.yaml" <<'YAML'
extends: latency
nvme: { poll_queues: 1, io_queue_depth: 4095, apply: rebind }
YAML
}

use_profile() { # PROFILE: both NVMe disks
	printf 'rules:\n  - { name: nvme-test, match: { kernel: "nvme*" }, profile: %s }\n' "$1" \
		>"$CONF/iotuned.yaml.d/50-nvme-test.yaml"
	note "profile for nvme*: $1"
}

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	command -v iotunectl >/dev/null || fail "iotunectl is not installed in the guest (run-scenario --build-dir BUILD?)"
	command -v nvme >/dev/null || fail "nvme-cli is not installed (tests/vm/setup-host installs it)"
	profiles
	# One-shot `iotunectl apply` pins the admin vectors; a running irqbalance moves
	# them within 10 s (keeping it away is the daemon's job: scenarios daemon, irq).
	assert_ok systemctl stop irqbalance.service
	local busy
	busy=$(busy_disk)
	[[ -n $busy && -n $(idle_disk) ]] || fail "NVMe disks nv0/nv1 not found: $(ls /sys/block)"
	assert_ok mkfs.ext4 -q -F "/dev/$busy"
	mkdir -p "$BUSY_MNT"
	assert_ok mount "/dev/$busy" "$BUSY_MNT"
	note "idle: $(idle_disk) on $(nvme_ctrl_of_disk "$(idle_disk)"); busy: $busy on $(nvme_ctrl_of_disk "$busy"), mounted at $BUSY_MNT"
	assert_eq 0 "$(cat /sys/module/nvme/parameters/poll_queues)" "nvme.poll_queues at boot"
	assert_not_exists "$DROPIN"
}

check_identity() {
	local disk ctrl out idj
	disk=$(idle_disk)
	ctrl=$(nvme_ctrl_of_disk "$disk")
	out=/run/iotvm-explain.json
	iotunectl --json explain "$disk" >"$out" || fail "iotunectl explain $disk failed: $(cat "$out")"
	idj=/run/iotvm-id-ctrl.json
	nvme id-ctrl "/dev/$ctrl" -o json >"$idj" || fail "nvme id-ctrl /dev/$ctrl failed"
	# Every identity field against nvme-cli's own Identify Controller and Get Features 0x07.
	iotvm_py - "$out" "$idj" "$ctrl" <<'PY' || fail "identity differs from nvme-cli's"
import json, subprocess, sys
ex = json.load(open(sys.argv[1]))["devices"][0]["facts"]
idc = json.load(open(sys.argv[2]))
n = ex["nvme"]
want = {
    "controller": sys.argv[3],
    "model": idc["mn"].strip(), "serial": idc["sn"].strip(), "firmware": idc["fr"].strip(),
    "subsysnqn": idc["subnqn"].strip(), "transport": "pcie", "identified": True,
    "apst_supported": bool(idc["apsta"] & 1), "power_states": idc["npss"] + 1,
}
nq = subprocess.run(["nvme", "get-feature", "/dev/" + sys.argv[3], "-f", "7"], capture_output=True, text=True).stdout
dw = int(nq.split("Current value:")[1].split()[0], 16)
want["granted_io_sq"] = (dw & 0xFFFF) + 1
want["granted_io_cq"] = (dw >> 16) + 1
bad = 0
for k, v in want.items():
    ok = n[k] == v
    bad += not ok
    print(f"    {'ok' if ok else 'MISMATCH'}: {k} = {n[k]!r} (nvme-cli: {v!r})")
print(f"    queue maps: {n['queue_maps']}, io_queue_depth {n['io_queue_depth']}, NQN fact {ex['nqn']}")
bad += n["queue_maps"] != {"default": 2, "read": 0, "poll": 0}
sys.exit(bad)
PY
	assert_match "controller: +$ctrl \\(pcie [0-9a-f:.]+, live\\)" "$(iotunectl explain "$disk" | grep 'controller:')" "explain"
}

check_shipped_latency_states() {
	local disk j=/run/iotvm-plan.json
	rm -f "$CONF/iotuned.yaml.d/50-nvme-test.yaml"
	iotunectl --json plan >"$j" || fail "plan failed"
	for disk in $(idle_disk) $(busy_disk); do
		assert_eq unsupported "$(json_setting "$j" "$disk" apst state)" "$disk apst"
		assert_match "APSTA is 0" "$(json_setting "$j" "$disk" apst note)" "$disk apst note"
		assert_not_exists "/sys/class/nvme/$(nvme_ctrl_of_disk "$disk")/power/pm_qos_latency_tolerance_us"
		# Get Features 0x08 answers 0 (QEMU's default), which is what latency wants.
		assert_eq off "$(json_setting "$j" "$disk" coalescing observed)" "$disk coalescing read back"
		assert_eq ok "$(json_setting "$j" "$disk" coalescing state)" "$disk coalescing"
	done
}

check_coalescing_not_changeable_and_io_timeout() {
	local disk ctrl j=/run/iotvm-apply.json
	disk=$(idle_disk)
	ctrl=$(nvme_ctrl_of_disk "$disk")
	use_profile co
	iotunectl --json apply >"$j" || fail "apply exited $?: $(cat "$j")"
	assert_eq unsupported "$(json_setting "$j" "$disk" coalescing state)" "$disk coalescing (QEMU 7.2 refuses Set Features 0x08)"
	# Known before any write: Get Features 0x08 with SEL=11b says it is not changeable.
	assert_match "not changeable" "$(json_setting "$j" "$disk" coalescing note)" "$disk coalescing note"
	assert_match "Feature Not Changeable" "$(nvme set-feature "/dev/$ctrl" -f 8 -v 0x0207 2>&1)" \
		"nvme-cli's own Set Features 0x08 (QEMU refuses it)"
	assert_match "Current value: ?0+$" "$(nvme get-feature "/dev/$ctrl" -f 8 | head -n1)" "nvme-cli reads 0x08 back"
	assert_eq 10000 "$(cat "/sys/block/$disk/queue/io_timeout")" "$disk queue/io_timeout"
	assert_ok iotunectl verify
}

check_poll_queues_pending_reboot() {
	local disk j=/run/iotvm-apply.json
	use_profile poll
	iotunectl --json apply >"$j" || fail "apply exited $?"
	for disk in $(idle_disk) $(busy_disk); do
		assert_eq pending-reboot "$(json_setting "$j" "$disk" poll_queues state)" "$disk poll_queues"
		assert_eq 0 "$(json_setting "$j" "$disk" poll_queues observed)" "$disk poll queues present"
		assert_match "queues: 2 default, 0 read, 0 poll" "$(json_setting "$j" "$disk" poll_queues detail)" "$disk queue maps"
		assert_eq 0 "$(cat "/sys/block/$disk/queue/io_poll")" "$disk io_poll (nothing rebound)"
	done
	assert_exists "$DROPIN"
	assert_match "^options nvme poll_queues=1$" "$(grep '^options' "$DROPIN")" "$DROPIN"
	# modprobe reads it as the nvme module's option
	assert_match "options nvme poll_queues=1" "$(modprobe -c | grep '^options nvme ')" "modprobe -c"
	assert_eq 0 "$(cat /sys/module/nvme/parameters/poll_queues)" "live nvme.poll_queues (untouched without rebind)"
	assert_ok iotunectl verify # pending-reboot is not drift
}

check_rebind_idle_refuse_mounted() {
	local idle busy ictrl bctrl j=/run/iotvm-apply.json out
	idle=$(idle_disk) busy=$(busy_disk)
	ictrl=$(nvme_ctrl_of_disk "$idle") bctrl=$(nvme_ctrl_of_disk "$busy")
	use_profile poll-rebind
	out=$(iotunectl apply 2>&1) || fail "apply exited $?: $out"
	printf '%s\n' "$out" | sed 's/^/    | /'
	assert_match "$idle +$ictrl poll_queues +1 +1 +changed .*rebound $ictrl, which was idle: it now has 1 poll queue" \
		"$(grep "$ictrl poll_queues" <<<"$out")" "idle controller rebound"
	assert_match "$busy +$bctrl poll_queues +0 +1 +pending-reboot .*not rebinding $bctrl: $busy is mounted at $BUSY_MNT" \
		"$(grep "$bctrl poll_queues" <<<"$out")" "mounted controller refused"
	assert_eq 1 "$(cat "/sys/block/$(idle_disk)/queue/io_poll")" "$(idle_disk) io_poll after the rebind"
	assert_eq 0 "$(cat "/sys/block/$busy/queue/io_poll")" "$busy io_poll"
	assert_match "$BUSY_MNT" "$(findmnt -n -o TARGET "/dev/$busy")" "$busy still mounted"
	# The rebound disk came back with default queue settings; the second pass tuned it.
	assert_sched "$(idle_disk)" none
	assert_eq 2 "$(cat "/sys/block/$(idle_disk)/queue/rq_affinity")" "$(idle_disk) rq_affinity re-applied"
	iotunectl --json verify >"$j" || fail "verify exited $?"
	assert_eq ok "$(json_setting "$j" "$(idle_disk)" poll_queues state)" "$(idle_disk) poll_queues after rebind"
	assert_eq pending-reboot "$(json_setting "$j" "$busy" poll_queues state)" "$busy poll_queues"
}

reads() { # DISK HIPRI(0|1): 4 MiB of 4 KiB direct random reads; hipri=1 is IORING_SETUP_IOPOLL
	fio --name=hipri --filename="/dev/$1" --ioengine=io_uring --hipri="$2" --direct=1 --rw=randread \
		--bs=4k --size=4m --io_size=4m --output-format=terse >/dev/null
}

check_polled_reads_use_the_poll_queue() {
	local disk ctrl t types="" a b c
	disk=$(idle_disk)
	ctrl=$(nvme_ctrl_of_disk "$disk")
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	for t in /sys/kernel/debug/block/"$disk"/hctx*/type; do
		types+="${t%/type} $(<"$t"); "
	done
	assert_match "hctx2 poll" "$types" "blk-mq hardware queue types of $disk"
	# 1024 reads each: interrupt-driven, then polled (RWF_HIPRI). A polled read is
	# completed by the submitter spinning on the poll queue's CQ: no interrupt.
	a=$(nvme_io_irqs "$ctrl")
	reads "$disk" 0 || fail "fio (interrupts) failed"
	b=$(nvme_io_irqs "$ctrl")
	reads "$disk" 1 || fail "fio (polled) failed"
	c=$(nvme_io_irqs "$ctrl")
	note "I/O vector interrupts for 1024 reads: interrupt-driven $((b - a)), polled $((c - b))"
	(( b - a >= 512 )) || fail "interrupt-driven reads raised only $((b - a)) interrupts: cannot tell"
	(( (c - b) * 10 < b - a )) || fail "polled reads raised $((c - b)) interrupts (interrupt-driven: $((b - a)))"
	note "ok: polled reads completed without interrupts"
}

max_queue_entries() { # JSONFILE DISK -> facts.nvme.max_queue_entries
	iotvm_py - "$@" <<'PY'
import json, sys
for d in json.load(open(sys.argv[1]))["devices"]:
    if d["device"] == sys.argv[2]:
        print(d["facts"]["nvme"]["max_queue_entries"])
PY
}

check_io_queue_depth_rebind() {
	local idle busy ictrl bctrl j=/run/iotvm-apply.json out
	idle=$(idle_disk) busy=$(busy_disk)
	ictrl=$(nvme_ctrl_of_disk "$idle") bctrl=$(nvme_ctrl_of_disk "$busy")
	assert_eq 1024 "$(cat /sys/module/nvme/parameters/io_queue_depth)" "nvme.io_queue_depth before"
	assert_eq 1023 "$(cat "/sys/block/$idle/mq/0/nr_tags")" "$idle tag depth before"
	assert_eq 1023 "$(cat "/sys/block/$idle/queue/nr_requests")" "$idle nr_requests before"
	# Debian's kernel has CONFIG_IO_STRICT_DEVMEM: a BAR the nvme driver claimed cannot
	# be mapped (nvme-cli's show-regs fails the same way), so CAP.MQES is unknown.
	iotunectl --json plan >"$j" || fail "plan failed"
	assert_eq None "$(max_queue_entries "$j" "$idle")" "$idle max_queue_entries (BAR 0 not mappable while bound)"
	note "nvme show-regs: $(nvme show-regs "/dev/$ictrl" 2>&1 | head -n1)"

	use_profile deep-rebind # io_queue_depth 2048: QEMU's CAP.MQES 0x7ff + 1
	out=$(iotunectl apply 2>&1) || fail "apply exited $?: $out"
	printf '%s\n' "$out" | sed 's/^/    | /'
	assert_match "$idle +$ictrl io_queue_depth +2048 +2048 +changed .*rebound $ictrl, which was idle: it now has 2048 entries per I/O queue" \
		"$(grep "$ictrl io_queue_depth" <<<"$out")" "idle controller rebound for the depth"
	assert_match "$busy +$bctrl io_queue_depth +1024 +2048 +pending-reboot .*not rebinding $bctrl: $busy is mounted at $BUSY_MNT" \
		"$(grep "$bctrl io_queue_depth" <<<"$out")" "mounted controller refused"
	assert_match "^options nvme .*io_queue_depth=2048" "$(grep '^options' "$DROPIN")" "$DROPIN"
	assert_eq 2048 "$(cat /sys/module/nvme/parameters/io_queue_depth)" "live nvme.io_queue_depth"
	idle=$(idle_disk)
	ictrl=$(nvme_ctrl_of_disk "$idle")
	# drivers/nvme/host/pci.c: q_depth = min(io_queue_depth, MQES + 1) = 2048, tags 2047
	assert_eq 2047 "$(cat "/sys/class/nvme/$ictrl/sqsize")" "$ictrl sqsize after the rebind"
	assert_eq 2047 "$(cat "/sys/block/$idle/mq/0/nr_tags")" "$idle tag depth after the rebind"
	assert_eq 2047 "$(cat "/sys/block/$idle/queue/nr_requests")" "$idle nr_requests (none, max) after the rebind"
	assert_sched "$idle" none
	assert_eq 1 "$(cat "/sys/block/$idle/queue/io_poll")" "$idle keeps its poll queue"
	assert_eq 1023 "$(cat "/sys/block/$busy/mq/0/nr_tags")" "$busy tag depth (not rebound)"
	# the kernel's own cap: above the tag depth with none is EINVAL (block/blk-mq-tag.c)
	assert_eq EINVAL "$(write_errno "/sys/block/$idle/queue/nr_requests" 2048)" "$idle nr_requests 2048 refused"
	iotunectl --json verify >"$j" || fail "verify exited $?"
	assert_eq ok "$(json_setting "$j" "$idle" io_queue_depth state)" "$idle io_queue_depth after the rebind"
	assert_eq 2048 "$(json_setting "$j" "$idle" io_queue_depth observed)" "$idle io_queue_depth observed"
	assert_match "tag depth 2047" "$(json_setting "$j" "$idle" io_queue_depth detail)" "$idle tag depth in status"
	assert_eq 2047 "$(json_setting "$j" "$idle" nr_requests observed)" "$idle nr_requests in status"
	assert_eq pending-reboot "$(json_setting "$j" "$busy" io_queue_depth state)" "$busy io_queue_depth"

	# More than the controller allows: one rebind, back with 2048, and the note says why.
	use_profile deep-4095
	out=$(iotunectl apply 2>&1)
	printf '%s\n' "$out" | sed 's/^/    | /'
	assert_match "$idle +$ictrl io_queue_depth .*failed .*came back with 2048 entries per I/O queue.*2048 is this controller's own limit, CAP.MQES \+ 1" \
		"$(grep "$ictrl io_queue_depth" <<<"$out")" "asking past MQES"
	assert_eq 4095 "$(cat /sys/module/nvme/parameters/io_queue_depth)" "live nvme.io_queue_depth raised"
	assert_eq 2047 "$(cat "/sys/block/$(idle_disk)/mq/0/nr_tags")" "tag depth stays at MQES"
}

check_restore_removes_dropin() {
	assert_ok iotunectl restore
	assert_not_exists "$DROPIN"
}
