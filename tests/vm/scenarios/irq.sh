# SPDX-License-Identifier: LGPL-2.1-or-later
# irq: NUMA-aware IRQ placement by iotuned.service against the real kernel and a
# running irqbalance, on a two-node guest. The NVMe admin vector (unmanaged) of
# a controller on node 1 is pinned to node 1's CPU; the AHCI vector is pinned
# per the throughput profile's node-local policy; NVMe I/O vectors are reported
# as kernel-managed with their effective affinity (their queue's CPUs);
# irqbalance's own "setup" reply lists exactly our bans; moving a pinned vector
# by hand is corrected within one interval; an irqbalance restart gets the bans
# back; stopping iotuned withdraws them and restores the original affinities.

# numa.sh's machine (one boot for numa, irq and diagnose).
VM_NUMA=2
VM_DEVICES=(
	"nvme nv0 size=256M"         # pcie.0: no NUMA node (-1)
	"nvme nvn1 node=1 size=256M" # behind pxb-pcie on node 1 (CPU 1)
	"sata sata0"                 # AHCI: one unmanaged MSI vector
)

DROPIN_DIR=/etc/iotuned/iotuned.yaml.d
INTERVAL_MS=1000
ORIG=/run/iotvm-irq-orig

# irqbalance's banned IRQs, from its control socket (root, SCM_CREDENTIALS).
# irqbalance takes one connection per pass of its loop: a connect that finds
# the listen backlog full (EAGAIN) is tried again. After 5 s (scaled) without
# an answer this says so, in words no comparison takes for a list of IRQs, and
# fails: a wait_for polling it asks again, and nothing blocks forever.
irqbalance_banned() {
	iotvm_py - "$(slow_ms 5000)" <<'PY'
import glob, os, re, socket, struct, sys, time
p = glob.glob("/run/irqbalance/irqbalance*.sock")[0]
limit = int(sys.argv[1]) / 1000
end = time.monotonic() + limit
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(limit)
try:
    while True:
        try:
            s.connect(p)
            break
        except BlockingIOError:  # the backlog is full
            if time.monotonic() >= end:
                raise
            time.sleep(0.05)
    s.settimeout(max(end - time.monotonic(), 0.1))
    s.sendmsg([b"setup"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("3i", os.getpid(), 0, 0))])
    reply = s.recv(8192).decode()
except OSError as e:  # socket.timeout included
    print("(no answer from irqbalance on %s within %s ms: %s)" % (p, sys.argv[1], e))
    sys.exit(1)
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
			printf '%s' "$out" | iotvm_py -c '
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
	iotunectl status --json | iotvm_py -c 'import json,sys; print("    irqbalance:", json.load(sys.stdin)["daemon"]["irqbalance"])' || true
}

# Moved by hand, the vector is put back and the move logged as drift. The value
# written by hand is never read back here: the daemon exists to undo it, and its
# drift check may run before this check looks. What is asserted is the journal
# event for this very move (one more than before it) and the final state.
check_hand_move_corrected() {
	local admin t0 ms n0 bound
	admin=$(admin_n1)
	n0=$(drift_events)
	t0=$(_iotvm_us)
	echo 0 >"/proc/irq/$admin/smp_affinity_list"
	wait_for "(( \$(drift_events) > n0 ))" 10 'journalctl -b -u iotuned -n 20 --no-pager'
	wait_for "[[ \$(aff $admin) == 1 ]]" 5 'journalctl -b -u iotuned -n 20 --no-pager'
	ms=$((($(_iotvm_us) - t0) / 1000))
	# One interval plus its 10% jitter, plus slack for the check itself, scaled
	# to this guest's speed (slow_ms).
	bound=$(slow_ms $((INTERVAL_MS * 11 / 10 + 1500)))
	note "moved back after $ms ms (interval $INTERVAL_MS ms, bound $bound ms)"
	((ms <= bound)) || fail "correction took $ms ms, more than one interval ($bound ms here)"
}

# Journal entries saying the admin vector drifted to CPU 0 and was put back.
drift_events() {
	journalctl -b -u iotuned --no-pager KNOB=irq_affinity -o cat | grep -c 'drifted to 0 (desired 1)' || true
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
	journalctl -b -u iotuned --no-pager | grep_q "irqbalance restarted (pid $old -> $new)" ||
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
		while read -r irq val; do want[$irq]=$val; done < <(iotvm_py -c '
import json, sys
for k, v in json.load(open(sys.argv[1]))["irqs"].items():
    print(k, v)' "$rec")
	done
	for irq in $(admin_n1) $(ahci_irq); do
		[[ -n ${want[$irq]:-} ]] || fail "IRQ $irq has no recorded original"
		note "IRQ $irq: before this scenario $(cat "$ORIG/$irq"), recorded by iotuned ${want[$irq]}"
	done
	declare -A n0 tuned
	for irq in $(admin_n1) $(ahci_irq); do
		n0[$irq]=$(restore_events "$irq" "${want[$irq]}")
		tuned[$irq]=$(aff "$irq") # still banned, and pinned by iotuned
	done
	assert_ok systemctl stop iotuned.service
	# The proof of the restore is the journal's entry for it, which carries the
	# value read back after the write. The live affinity is not read here: once
	# the bans are withdrawn irqbalance is free to move these vectors, and under
	# load it may already have done so.
	for irq in $(admin_n1) $(ahci_irq); do
		if [[ $(cpulist_expand "${tuned[$irq]}") == $(cpulist_expand "${want[$irq]}") ]]; then
			note "IRQ $irq: tuned value ${tuned[$irq]} is its original: nothing to restore"
			continue
		fi
		(($(restore_events "$irq" "${want[$irq]}") > n0[$irq])) ||
			fail "no journal entry 'irq $irq (...) restored to ${want[$irq]}' for this stop"
		note "ok: IRQ $irq restored from ${tuned[$irq]} to ${want[$irq]} (journal, value read back)"
	done
	assert_eq "" "$(irqbalance_banned)" "irqbalance bans after iotuned stopped"
}

# Journal entries saying IRQ N was restored to VALUE (read back after the write).
restore_events() { # IRQ VALUE
	journalctl -b -u iotuned --no-pager KNOB=irq_affinity MESSAGE_ID=491c4daa961a49429ac640a54eacbec9 -o cat |
		grep -c ": irq $1 (.*) restored to $2\$" || true
}

# Bans withdrawn for sure (issue 18). irqbalance is stopped (SIGSTOP) and its
# listen backlog (one connection, the kernel queues two) is filled, so no request
# of iotuned's reaches it: `systemctl stop iotuned` retries the withdrawal until
# its deadline, still ends within the stop timeout, logs which IRQs stay banned
# (MESSAGE_ID 1fbc58d9..., IRQS=, WITHDRAWAL=not-sent) and keeps them on record
# in /run/iotuned/irqbalance-bans.json. (With irqbalance merely stopped, the
# withdrawal would be queued on its socket and taken after SIGCONT.) The bans
# stay in the same irqbalance, and the next start, whose configuration bans
# nothing, withdraws them. (A start that pins them with keep_irqbalance_away
# would simply keep them.)
check_stop_without_irqbalance_answer_then_start_withdraws_leftovers() {
	local id=1fbc58d9394b4ee0a566e877e7cfca78 rec=/run/iotuned/irqbalance-bans.json
	local nobans=$DROPIN_DIR/50-vmtest-no-bans.yaml filled=/run/iotvm-irq-backlog
	local admin ahci ib t0 ms rc=0 n0 entry line irqs withdrawal prio pid filler
	admin=$(admin_n1)
	ahci=$(ahci_irq)
	ib=$(systemctl show -P MainPID irqbalance.service)
	has_ban() { [[ " $(irqbalance_banned) " == *" $1 "* ]]; }
	bans_left_entries() { journalctl -b MESSAGE_ID=$id -o cat | grep -c . || true; }

	assert_ok systemctl start iotuned.service
	wait_for "has_ban $admin && has_ban $ahci" 20 'irqbalance_banned; journalctl -b -u iotuned -n 20 --no-pager'
	wait_for "[[ -f $rec ]]" 5
	note "record while running: $(cat "$rec")"
	n0=$(bans_left_entries)

	# Whatever happens from here, irqbalance runs again when this check ends (the
	# trap runs after this function returned: no locals in it).
	trap "kill -CONT $ib 2>/dev/null || true" EXIT
	kill -STOP "$ib"
	"$IOTVM_PY" -S - "/run/irqbalance/irqbalance$ib.sock" >"$filled" 2>&1 <<'PY' & # $!: Python's own
import socket, sys, time
held = []
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except BlockingIOError:  # EAGAIN: the listen backlog is full
        break
    held.append(s)
print("backlog full after", len(held), "connections", flush=True)
time.sleep(3600)
PY
	filler=$!
	trap "kill $filler 2>/dev/null || true; kill -CONT $ib 2>/dev/null || true" EXIT
	wait_for "grep -q 'backlog full' $filled" 20 "cat $filled"
	note "$(cat "$filled")"
	t0=$(_iotvm_us)
	systemctl stop iotuned.service || rc=$?
	ms=$((($(_iotvm_us) - t0) / 1000))
	kill "$filler" 2>/dev/null || true
	kill -CONT "$ib"
	note "stop took $ms ms with irqbalance (pid $ib) unreachable; stop timeout $(systemctl show -P TimeoutStopUSec iotuned.service)"
	((rc == 0)) || fail "systemctl stop iotuned exited $rc"
	assert_eq success "$(systemctl show -P Result iotuned.service)" "iotuned.service result of the stop (not a timeout)"

	# The journal names the IRQs left banned; the record keeps them for the next start.
	wait_for "(( \$(bans_left_entries) > n0 ))" 10 'journalctl -b -u iotuned -n 30 --no-pager'
	journalctl -b MESSAGE_ID=$id -o cat -n 1 | sed 's/^/    | /'
	entry=$(journalctl -b MESSAGE_ID=$id -o json -n 1 | iotvm_py -c '
import json, sys
e = json.loads(sys.stdin.readline())
print(e["IRQS"], e["WITHDRAWAL"], e["PRIORITY"], e["IRQBALANCE_PID"], sep="|")')
	note "entry: IRQS|WITHDRAWAL|PRIORITY|IRQBALANCE_PID = $entry"
	IFS='|' read -r irqs withdrawal prio pid <<<"$entry"
	[[ " $irqs " == *" $admin "* && " $irqs " == *" $ahci "* ]] || fail "IRQS='$irqs' does not name $admin and $ahci"
	assert_eq not-sent "$withdrawal" "WITHDRAWAL"
	assert_eq 4 "$prio" "PRIORITY (warning)"
	assert_eq "$ib" "$pid" "IRQBALANCE_PID"
	assert_exists "$rec"
	iotvm_py - "$rec" "$ib" "$admin" "$ahci" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
assert rec["irqbalance_pid"] == int(sys.argv[2]), rec
assert {int(sys.argv[3]), int(sys.argv[4])} <= set(rec["irqs"]), rec
print("    ok: record", rec)
PY
	# Left over: irqbalance (the same process) still bans them.
	wait_for "has_ban $admin && has_ban $ahci" 20 'irqbalance_banned'
	assert_eq "$ib" "$(systemctl show -P MainPID irqbalance.service)" "irqbalance MainPID (the same process)"
	note "left banned in irqbalance: '$(irqbalance_banned)'"

	# The next start does not want them banned: it withdraws them.
	cat >"$nobans" <<'YAML'
rules:
  - name: vmtest-nvme-no-bans
    match: { kernel: "nvme*" }
    profile: latency
    set: { irq: { placement: queue-local, keep_irqbalance_away: false } }
  - name: vmtest-rotational-no-bans
    match: { rotational: true }
    profile: throughput
    set: { irq: { placement: node-local, keep_irqbalance_away: false } }
YAML
	assert_ok systemctl start iotuned.service
	wait_for "! has_ban $admin && ! has_ban $ahci" 20 'irqbalance_banned; journalctl -b -u iotuned -n 20 --no-pager'
	wait_for "journalctl -b -u iotuned -o cat | grep_q 'withdrew [0-9]* leftover irqbalance ban'" 10 'journalctl -b -u iotuned -n 20 --no-pager'
	line=$(journalctl -b -u iotuned -o cat | grep 'withdrew [0-9]* leftover irqbalance ban' | tail -n 1)
	note "journal: $line"
	[[ " $line " == *" $admin "* && " $line " == *" $ahci "* ]] || fail "the line does not name IRQs $admin and $ahci"
	assert_eq "" "$(irqbalance_banned)" "irqbalance bans after the leftovers were withdrawn"

	# The record goes once a reply shows them gone: at the next exchange, at
	# the latest this stop. irqbalance answers one connection per pass of its
	# loop, and a pass after its bans changed may take seconds here: a stop it
	# does not answer in time must say so (the same journal entry) and keep
	# the record, which the next start then clears. Either way: nothing banned,
	# no record, and nothing left unsaid. Tidy up: no drop-in, iotuned stopped.
	rm -f "$filled"
	n0=$(bans_left_entries)
	assert_ok systemctl stop iotuned.service
	assert_eq "" "$(irqbalance_banned)" "irqbalance bans after the last stop"
	if [[ -e $rec ]]; then
		(($(bans_left_entries) > n0)) ||
			fail "$rec kept at the stop without an entry saying what may be left ($(cat "$rec"))"
		note "irqbalance did not confirm the withdrawal before the stop ended: $(journalctl -b MESSAGE_ID=$id -o cat -n 1)"
		assert_ok systemctl start iotuned.service
		wait_for "[[ ! -e $rec ]]" 20 "cat $rec; journalctl -b -u iotuned -n 20 --no-pager"
		note "the next start saw them withdrawn and dropped the record"
		assert_ok systemctl stop iotuned.service
	fi
	assert_not_exists "$rec"
	rm -f "$nobans"
}

check_journal_entries_match_catalog() {
	# Last: the events of the checks above, against the installed catalog.
	assert_journal_matches_catalog
}
