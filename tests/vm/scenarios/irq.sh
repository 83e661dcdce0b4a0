# SPDX-License-Identifier: LGPL-2.1-or-later
# irq: NUMA-aware IRQ placement by iotuned.service against the real kernel and a
# running irqbalance, on a two-node guest. The NVMe admin vector (unmanaged) of
# a controller on node 1 is pinned to node 1's CPU; the AHCI vector is pinned
# per the throughput profile's node-local policy; NVMe I/O vectors are reported
# as kernel-managed with their effective affinity (their queue's CPUs);
# irqbalance's own "setup" reply lists exactly our bans; moving a pinned vector
# by hand is corrected within one interval; an irqbalance restart gets the bans
# back; stopping iotuned withdraws them and restores the original affinities.

VM_NUMA=2
VM_DEVICES=(
	"nvme nv0"          # pcie.0: no NUMA node (-1)
	"nvme nvn1 node=1"  # behind pxb-pcie on node 1 (CPU 1)
	"sata sata0"        # AHCI: one unmanaged MSI vector
)

DROPIN_DIR=/etc/iotuned/iotuned.yaml.d
INTERVAL_MS=1000
ORIG=/run/iotvm-irq-orig

# irqbalance's banned IRQs, from its control socket (root, SCM_CREDENTIALS).
irqbalance_banned() {
	"$IOTVM_PY" - <<'PY'
import glob, os, re, socket, struct
p = glob.glob("/run/irqbalance/irqbalance*.sock")[0]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(p)
s.sendmsg([b"setup"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("3i", os.getpid(), 0, 0))])
reply = s.recv(8192).decode()
print(" ".join(sorted(re.findall(r"IRQ (\d+)", reply), key=int)))
PY
}

aff() { cat "/proc/irq/$1/smp_affinity_list"; }
eff() { cat "/proc/irq/$1/effective_affinity_list"; }

ctrl_n1() { nvme_ctrl_by_serial nvn1; }
admin_n1() { irq_by_name "$(ctrl_n1)q0"; }
ahci_irq() { awk '$NF ~ /^ahci\[/ { sub(":", "", $1); print $1; exit }' /proc/interrupts; }

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	assert_eq active "$(systemctl is-active irqbalance.service)" "irqbalance"
	mkdir -p "$DROPIN_DIR" "$ORIG"
	printf 'reassert:\n  interval: %sms\n' "$INTERVAL_MS" >"$DROPIN_DIR/00-vmtest.yaml"
	local irq
	for irq in $(admin_n1) $(ahci_irq); do aff "$irq" >"$ORIG/$irq"; done
	note "admin vector of $(ctrl_n1): IRQ $(admin_n1) at $(aff "$(admin_n1)"); AHCI: IRQ $(ahci_irq) at $(aff "$(ahci_irq)")"
	note "irqbalance bans before iotuned: '$(irqbalance_banned)'"
	assert_ok systemctl daemon-reload
	assert_ok systemctl start iotuned.service
}

check_unmanaged_vectors_pinned_per_policy() {
	local admin ahci
	admin=$(admin_n1)
	ahci=$(ahci_irq)
	# latency, queue-local: a vector without a queue goes to the device's node: node 1 = CPU 1
	assert_eq 1 "$(aff "$admin")" "admin vector IRQ $admin of $(ctrl_n1) (node 1)"
	# throughput, node-local: sda has no NUMA node -> one allowed CPU, the first
	assert_eq 0 "$(aff "$ahci")" "AHCI IRQ $ahci (sda, throughput node-local)"
	iotunectl plan sda "$(nvme_ctrl_disks "$(ctrl_n1)" 1)" | sed 's/^/    | /'
}

check_io_vectors_are_managed() {
	local c d q irq n=0 out
	out=$(iotunectl status --json || true)
	for c in $(nvme_ctrls_by_serial nv0) $(ctrl_n1); do
		d=$(nvme_ctrl_disks "$c" 1)
		for q in /sys/block/"$d"/mq/*; do
			q=${q##*/}
			irq=$(irq_by_name "${c}q$((q + 1))") || continue
			n=$((n + 1))
			# their effective affinity is their queue's CPU list (blk-mq map)
			assert_eq "$(cpulist_expand "$(cat /sys/block/"$d"/mq/"$q"/cpu_list)")" "$(cpulist_expand "$(eff "$irq")")" \
				"IRQ $irq (${c}q$((q + 1))) effective affinity vs mq/$q/cpu_list"
			printf '%s' "$out" | "$IOTVM_PY" -c '
import json, sys
irq = int(sys.argv[1])
doc = json.load(sys.stdin)
st = [s for d in doc["devices"] for s in d["settings"] if s.get("irq") == irq]
assert st and st[0]["state"] == "managed", st
print("    ok: IRQ %d state managed: %s" % (irq, st[0]["note"]))' "$irq"
		done
	done
	((n >= 2)) || fail "found only $n I/O vectors"
	# a managed vector is not drift: verify passes
	assert_ok iotunectl verify
}

check_irqbalance_lists_our_bans() {
	local want got
	want=$(printf '%s\n' "$(admin_n1)" "$(ahci_irq)" | sort -n | tr '\n' ' ')
	wait_for "[[ \"\$(irqbalance_banned) \" == *\"$(admin_n1)\"* && \"\$(irqbalance_banned)\" == *\"$(ahci_irq)\"* ]]" 10 'irqbalance_banned; journalctl -b -u iotuned -n 20 --no-pager'
	got=$(irqbalance_banned)
	note "irqbalance setup: banned IRQs '$got' (ours include: $want)"
	# No managed vector is banned: we ban exactly what we pin.
	local irq
	for irq in $got; do
		grep -qE "^ *$irq:.*nvme[0-9]+q[1-9]" /proc/interrupts && fail "managed vector $irq was banned"
	done
	iotunectl status --json | "$IOTVM_PY" -c 'import json,sys; print("    irqbalance:", json.load(sys.stdin)["daemon"]["irqbalance"])' || true
}

check_hand_move_corrected() {
	local admin t0 ms
	admin=$(admin_n1)
	echo 0 >"/proc/irq/$admin/smp_affinity_list"
	t0=$(_iotvm_us)
	assert_eq 0 "$(aff "$admin")" "admin vector moved by hand"
	wait_for "[[ \$(aff $admin) == 1 ]]" 5 'journalctl -b -u iotuned -n 20 --no-pager'
	ms=$(( ($(_iotvm_us) - t0) / 1000 ))
	note "moved back after $ms ms (interval $INTERVAL_MS ms)"
	((ms <= INTERVAL_MS * 11 / 10 + 1500)) || fail "correction took $ms ms, more than one interval"
	wait_for "journalctl -b -u iotuned --no-pager KNOB=irq_affinity | grep -q 'drifted to 0 (desired 1)'" 5
}

check_irqbalance_restart_gets_bans_back() {
	local old new
	old=$(systemctl show -P MainPID irqbalance.service)
	assert_ok systemctl restart irqbalance.service
	new=$(systemctl show -P MainPID irqbalance.service)
	assert_ne "$old" "$new" "irqbalance MainPID after restart"
	wait_for "[[ -S /run/irqbalance/irqbalance$new.sock ]]" 10
	wait_for "[[ \"\$(irqbalance_banned)\" == *\"$(admin_n1)\"* ]]" 10 'irqbalance_banned; journalctl -b -u iotuned -n 20 --no-pager'
	note "bans back in irqbalance pid $new after ${WAITED}s: '$(irqbalance_banned)'"
	journalctl -b -u iotuned --no-pager | grep -q "irqbalance restarted (pid $old -> $new)" ||
		fail "no journal entry about the irqbalance restart"
}

check_stop_withdraws_bans_and_restores() {
	local irq disk rec want
	# The originals are what iotuned found before its first write (irqbalance may
	# have moved a vector between this scenario's setup and that moment).
	declare -A want
	for disk in sda "$(nvme_ctrl_disks "$(ctrl_n1)" 1)"; do
		rec=/run/iotuned/originals/$disk.json
		assert_exists "$rec"
		while read -r irq val; do want[$irq]=$val; done < <("$IOTVM_PY" -c '
import json, sys
for k, v in json.load(open(sys.argv[1]))["irqs"].items():
    print(k, v)' "$rec")
	done
	for irq in $(admin_n1) $(ahci_irq); do
		[[ -n ${want[$irq]:-} ]] || fail "IRQ $irq has no recorded original"
		note "IRQ $irq: before this scenario $(cat "$ORIG/$irq"), recorded by iotuned ${want[$irq]}"
	done
	assert_ok systemctl stop iotuned.service
	assert_eq "" "$(irqbalance_banned)" "irqbalance bans after iotuned stopped"
	for irq in $(admin_n1) $(ahci_irq); do
		assert_eq "${want[$irq]}" "$(aff "$irq")" "IRQ $irq affinity restored"
	done
}
