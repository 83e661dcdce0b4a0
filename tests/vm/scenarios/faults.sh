# SPDX-License-Identifier: LGPL-2.1-or-later
# faults: iotuned.service when things go wrong around it. SIGKILLs at random
# moments of a start, a null_blk burst or an NVMe hot-add (20 of them), then the
# originals must still be the values from before the first start and stop must
# put every knob back; disks removed in the middle of a burst; the file system
# of /run/iotuned full (nothing written without its original recorded, a clear
# error, recovery without a restart once there is space); journald restarted
# under the daemon; `iotunectl apply` running in a loop while the daemon tunes
# and restarts.
#
# The same machine as daemon.sh: the suite runs it on that boot, after it
# ('daemon+faults+hotplug'); it starts from the disks' values as daemon.sh left them
# (every one restored) and no originals on record.
# The random delays come from bash's $RANDOM seeded with IOTVM_FAULT_SEED (or a
# fresh seed, printed): run with `--shell` and `IOTVM_FAULT_SEED=N iotvm_check
# check_...` to replay one.

VM_TIMEOUT=2400
# A check waits up to 60 s (scaled by the calibration) in silence.
VM_STALL=600

VM_DEVICES=(
	"nvme nv0"
	"nvme nv1"
	"sata sata0"
	"virtio vd0"
	"rootport rp1"
	"spare hot1"
)

FT=/run/iotvm-faults
REF=$FT/ref          # REF/<disk>/<knob>: values before iotuned ever ran
DROPIN_DIR=/etc/iotuned/iotuned.yaml.d
INTERVAL_MS=1000
ORIG=/run/iotuned/originals
STATUS_JSON=/run/iotuned/status.json
# Every queue attribute iotuned records (knob_table entries of section "queue").
QKNOBS=(scheduler nr_requests rq_affinity wbt_lat_usec nomerges read_ahead_kb add_random iostats max_sectors_kb)
BOOT_DISKS=(nvme0n1 nvme1n1 sda vda)
BURST_N=16

fknob() { # DISK KNOB
	if [[ $2 == scheduler ]]; then sched_of "$1"; else cat "/sys/block/$1/queue/$2"; fi
}

# Save every queue knob of DISK under REF/NAME (an unreadable one as "-").
snap_disk() { # DISK NAME
	local k v
	mkdir -p "$REF/$2"
	for k in "${QKNOBS[@]}"; do
		v=$(fknob "$1" "$k" 2>/dev/null) || v=-
		printf '%s\n' "$v" >"$REF/$2/$k"
	done
}

ijournal() { journalctl -b -u iotuned.service --no-pager "$@"; }
main_pid() { systemctl show -P MainPID iotuned.service; }
# For wait_for: a MainPID other than 0 and OLD (any if OLD is empty). One
# systemctl call a poll (each is ~0.2 s of a loaded TCG guest, which the
# daemon under test is waiting for).
new_main_pid() { # OLD
	local p
	p=$(main_pid)
	[[ $p != 0 && $p != "$1" ]]
}
nrestarts() { systemctl show -P NRestarts iotuned.service; }
# A point in the journal: the realtime clock, for `journalctl --since=@SECONDS`.
# (Not --after-cursor: journald 252 skips the first entry after the cursor that
# matches the field filters when the cursor entry itself does not match them.)
cursor_now() { echo "$EPOCHREALTIME"; }
ms_since() { echo $((($(_iotvm_us) - $1) / 1000)); }

# Devices listed in status.json (what the running daemon reports).
status_devices() {
	iotvm_py - "$STATUS_JSON" <<'PY' 2>/dev/null || true
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
for d in doc.get("devices", []):
    print(d["device"])
PY
}
n_records() { # PREFIX: records under ORIG of disks named PREFIX*
	local f n=0
	for f in "$ORIG/$1"*.json; do [[ -e $f ]] && n=$((n + 1)); done
	echo "$n"
}
n_status_nullb() { status_devices | grep -c '^nullb' || true; }

# The NVMe disk of the hot-pluggable controller, if it is there.
hot_disk() { disk_by_serial hot1 2>/dev/null || true; }

hot_add() {
	qmp '{"execute": "device_add", "arguments": {"driver": "nvme", "id": "hot1", "serial": "hot1", "drive": "hot1", "bus": "rp1"}}' >/dev/null ||
		fail "QMP device_add failed"
}

# QEMU takes the id hot1 again once the guest has released the slot (the
# scenario before this one on a shared boot may have just removed it).
hot_id_free() {
	wait_for "! qmp '{\"execute\": \"qom-list\", \"arguments\": {\"path\": \"/machine/peripheral\"}}' | grep_q '\"hot1\"'" 30
}

hot_del() { # waits until the disk is gone and QEMU can take the id again
	qmp '{"execute": "device_del", "arguments": {"id": "hot1"}}' >/dev/null || fail "QMP device_del failed"
	wait_for '[[ -z $(hot_disk) ]]' 30 'ls /sys/block; dmesg | tail -n 20'
	hot_id_free
}

rmmod_null_blk() {
	# udev's workers may still hold a disk open for a moment.
	wait_for 'rmmod null_blk 2>/dev/null || ! grep -q "^null_blk " /proc/modules' 30 'lsmod | grep null_blk; ls /sys/block'
	wait_for '! ls /sys/block | grep_q ^nullb' 30
}

# Compare every record under ORIG with the reference values: a boot disk with
# REF/<disk>, nullb* with REF/nullb, the hot-added disk (name in $1) with REF/hot.
# Prints one line per record; exits 1 on any value that differs or a record of
# a disk it has no reference for. Controller rows (NVMe features) and IRQ
# vectors are counted, not compared: irqbalance moves vectors before any start.
originals_diff() { # [HOT_DISK]
	iotvm_py - "$ORIG" "$REF" "${1:-}" "${QKNOBS[@]}" <<'PY'
import json, os, sys
orig, ref, hot, knobs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
bad = 0
names = sorted(os.listdir(orig)) if os.path.isdir(orig) else []
tmp = [n for n in names if ".tmp." in n]
recs = [n for n in names if n.endswith(".json")]
compared = other = 0
for n in recs:
    disk = n[:-5]
    if os.path.isdir(os.path.join(ref, disk)):
        rdir = os.path.join(ref, disk)
    elif disk.startswith("nullb"):
        rdir = os.path.join(ref, "nullb")
    elif hot and disk == hot:
        rdir = os.path.join(ref, "hot")
    else:
        print(f"MISMATCH {disk}: a record for a disk with no reference (stale?)")
        bad += 1
        continue
    try:
        rec = json.load(open(os.path.join(orig, n)))
    except Exception as e:
        print(f"MISMATCH {disk}: unreadable record: {e}")
        bad += 1
        continue
    diffs = []
    for k, v in sorted(rec.get("values", {}).items()):
        if k not in knobs:
            other += 1
            continue
        want = open(os.path.join(rdir, k)).read().strip()
        compared += 1
        if want != v:
            diffs.append(f"{k} recorded {v!r}, was {want!r} before iotuned")
    if diffs:
        bad += 1
        print(f"MISMATCH {disk}: " + "; ".join(diffs))
# The other way round: every knob of a disk here that is not at its value from
# before iotuned must have its original recorded (nothing written without one).
def current(disk, k):
    try:
        v = open(f"/sys/block/{disk}/queue/{k}").read().strip()
    except OSError:
        return "-"
    if k == "scheduler" and "[" in v:
        v = v[v.index("[") + 1:v.index("]")]
    return v
changed = unrecorded = 0
for disk in sorted(os.listdir("/sys/block")):
    if os.path.isdir(os.path.join(ref, disk)):
        rdir = os.path.join(ref, disk)
    elif disk.startswith("nullb"):
        rdir = os.path.join(ref, "nullb")
    elif hot and disk == hot:
        rdir = os.path.join(ref, "hot")
    else:
        continue
    try:
        rec = json.load(open(os.path.join(orig, disk + ".json"))).get("values", {})
    except Exception:
        rec = {}
    for k in knobs:
        want = open(os.path.join(rdir, k)).read().strip()
        now = current(disk, k)
        if now != want:
            changed += 1
            if k not in rec:
                print(f"UNRECORDED {disk} {k}: {now!r} (was {want!r}), no original on disk")
                unrecorded += 1
                bad += 1
print(f"originals: {len(recs)} records, {compared} queue values compared with the values before iotuned"
      f" ({other} controller values not compared), {len(tmp)} temporary files left{': ' + ' '.join(tmp) if tmp else ''};"
      f" {changed} knobs changed now, {unrecorded} of them without an original on disk")
sys.exit(1 if bad else 0)
PY
}

assert_originals() { # [HOT_DISK]
	local out
	out=$(originals_diff "$@") || { printf '%s\n' "$out" | sed 's/^/    | /'; fail "an original differs from the value before iotuned, or a changed knob has none"; }
	note "$(tail -n 1 <<<"$out")"
}

assert_boot_values() {
	local d k bad=()
	for d in "${BOOT_DISKS[@]}"; do
		for k in "${QKNOBS[@]}"; do
			[[ $(fknob "$d" "$k" 2>/dev/null || echo -) == "$(<"$REF/$d/$k")" ]] ||
				bad+=("$d $k=$(fknob "$d" "$k" 2>/dev/null || echo -) (boot $(<"$REF/$d/$k"))")
		done
	done
	((${#bad[@]} == 0)) || { ijournal -n 30 | sed 's/^/    | /'; fail "not at boot values: ${bad[*]}"; }
	note "ok: ${#BOOT_DISKS[@]} disks x ${#QKNOBS[@]} knobs at their boot values"
}

# Active with a MainPID that is not OLD (any new one if OLD is empty).
wait_restarted() { # OLD_PID [TIMEOUT]
	wait_for "[[ \$(systemctl is-active iotuned.service) == active ]] && new_main_pid '${1:-}'" "${2:-40}" \
		'systemctl status --no-pager iotuned.service | head -n 15; ijournal -n 20'
}

# Each check starts from the same state whatever the one before left behind: no
# iotuned (its stop restores), no null_blk, no hot-added controller, /run/iotuned
# not covered by check_run_full's small tmpfs.
clean_slate() {
	systemctl stop iotuned.service 2>/dev/null || true
	systemctl reset-failed iotuned.service 2>/dev/null || true
	! grep -q '^null_blk ' /proc/modules || rmmod_null_blk
	[[ -z $(hot_disk) ]] || hot_del
	! mountpoint -q /run/iotuned || umount /run/iotuned
	assert_boot_values >/dev/null
}

# A random delay in [0, MS) ms, from the seeded $RANDOM; sleeps it, prints nothing.
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
rand_ms() { echo $(((RANDOM * 32768 + RANDOM) % ($1 > 0 ? $1 : 1))); }

seed_rng() {
	local seed=${IOTVM_FAULT_SEED:-$((($(_iotvm_us) / 1000) % 1000000))}
	RANDOM=$seed
	note "random seed $seed (replay: IOTVM_FAULT_SEED=$seed)"
}

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	command -v iotuned >/dev/null || fail "iotuned is not installed in the guest"
	systemctl stop iotuned.service 2>/dev/null || true
	mkdir -p "$FT" "$REF" "$DROPIN_DIR"
	local d
	for d in "${BOOT_DISKS[@]}"; do
		snap_disk "$d" "$d"
	done
	# The kernel's values of a fresh null_blk disk and of a fresh hot-added NVMe
	# disk, taken while no iotuned runs.
	assert_ok modprobe null_blk nr_devices=1
	wait_for '[[ -e /sys/block/nullb0/queue/scheduler ]]' 20
	assert_ok udevadm settle --timeout=60
	snap_disk nullb0 nullb
	rmmod_null_blk
	hot_id_free
	hot_add
	wait_for '[[ -n $(hot_disk) && -e /sys/block/$(hot_disk)/queue/scheduler ]]' 30 'ls /sys/block'
	assert_ok udevadm settle --timeout=60
	snap_disk "$(hot_disk)" hot
	hot_del
	for d in "${BOOT_DISKS[@]}" nullb hot; do
		note "before iotuned: $d: $(paste -d= <(printf '%s\n' "${QKNOBS[@]}") <(cat "${QKNOBS[@]/#/$REF/$d/}") | tr '\n' ' ')"
	done
	printf 'reassert:\n  interval: %sms\n' "$INTERVAL_MS" >"$DROPIN_DIR/00-vmtest.yaml"
	assert_ok systemctl daemon-reload
	[[ ! -e $ORIG ]] || [[ -z $(ls -A "$ORIG") ]] || fail "originals left before the first start: $(ls "$ORIG")"
}

# 1. SIGKILL at a random moment of a start, of a null_blk burst being tuned, or
# of a hot-added NVMe disk being tuned; KILLS times. The records must hold the
# values from before the first start, never a tuned one.
# 8: four during starts, two during a burst, two during a hot-add; seeded, so
# a failing draw is repeated by its seed.
KILLS=8
check_sigkill_during_start_and_bursts() {
	local t0 t1 w_start w_burst w_status w_hot pid npid i kind d delay disk kills=0 auto=0 manual=0 log=()
	clean_slate
	seed_rng
	# The working windows, measured on this guest: from the new process to READY;
	# from modprobe to every disk of the burst in status.json; from device_add to
	# the hot disk in status.json.
	systemctl reset-failed iotuned.service 2>/dev/null || true
	assert_ok systemctl start --no-block iotuned.service
	wait_for 'new_main_pid ""' 30
	t1=$(_iotvm_us)
	wait_for '[[ $(systemctl is-active iotuned.service) == active ]]' 60 'ijournal -n 20'
	w_start=$(ms_since "$t1")
	t0=$(_iotvm_us)
	assert_ok modprobe null_blk nr_devices=$BURST_N
	# The records are written as each disk is tuned, status.json after the batch:
	# the kills are drawn within the first part, where a kill can land between
	# a record and the writes it guards.
	wait_for "(( \$(n_records nullb) == $BURST_N ))" 60 "ls $ORIG"
	w_burst=$(ms_since "$t0")
	wait_for "[[ \$(n_status_nullb) == $BURST_N ]]" 60 'iotunectl status | tail -n 20'
	w_status=$(ms_since "$t0")
	assert_originals
	rmmod_null_blk
	wait_for "[[ \$(n_status_nullb) == 0 ]] && ! ls $ORIG | grep_q ^nullb" 30 "ls $ORIG; ijournal -n 20"
	t0=$(_iotvm_us)
	hot_add
	wait_for '[[ -n $(hot_disk) ]] && status_devices | grep_q -x "$(hot_disk)"' 60 'ijournal -n 20'
	w_hot=$(ms_since "$t0")
	disk=$(hot_disk)
	assert_originals "$disk"
	hot_del
	wait_for "[[ ! -e $ORIG/$disk.json ]]" 30 "ls $ORIG"
	note "working windows: start ${w_start} ms (process to READY), burst of $BURST_N ${w_burst} ms (modprobe to every disk recorded; all in status.json after ${w_status} ms), hot-add ${w_hot} ms (device_add to status)"

	for ((i = 1; i <= KILLS; i++)); do
		kind=$(((i - 1) % 4)) # 0, 1: a start; 2: a null_blk burst; 3: an NVMe hot-add
		pid=$(main_pid)
		systemctl reset-failed iotuned.service 2>/dev/null || true # StartLimitBurst is not under test
		case $kind in
		0 | 1)
			# Kill the running one (it idles), then kill its successor while it starts.
			kill -KILL "$pid"
			wait_for "new_main_pid $pid" 40 'systemctl status --no-pager iotuned.service | head'
			npid=$(main_pid)
			delay=$(rand_ms "$w_start")
			sleep_ms "$delay"
			kill -KILL "$npid" 2>/dev/null || true
			log+=("#$i start: killed pid $npid ${delay} ms after it appeared (window ${w_start} ms)")
			pid=$npid
			;;
		2)
			assert_ok modprobe null_blk nr_devices=$BURST_N >/dev/null
			delay=$(rand_ms "$w_burst")
			sleep_ms "$delay"
			kill -KILL "$pid"
			log+=("#$i burst: killed pid $pid ${delay} ms after modprobe (window ${w_burst} ms), $(n_records nullb) nullb records then")
			;;
		3)
			hot_add
			delay=$(rand_ms "$w_hot")
			sleep_ms "$delay"
			kill -KILL "$pid"
			log+=("#$i hot-add: killed pid $pid ${delay} ms after device_add (window ${w_hot} ms)")
			;;
		esac
		kills=$((kills + 1))
		note "${log[-1]}"
		if ((i % 2)); then
			auto=$((auto + 1)) # Restart=on-failure brings it back
		else
			manual=$((manual + 1))
			systemctl reset-failed iotuned.service 2>/dev/null || true
			assert_ok systemctl start iotuned.service >/dev/null
		fi
		wait_restarted "$pid"
		case $kind in
		2)
			wait_for "[[ \$(n_status_nullb) == $BURST_N ]]" 60 'iotunectl status | tail -n 20'
			assert_originals >/dev/null
			rmmod_null_blk
			wait_for "[[ \$(n_status_nullb) == 0 ]] && ! ls $ORIG | grep_q ^nullb" 30 "ls $ORIG; ijournal -n 20"
			;;
		3)
			wait_for '[[ -n $(hot_disk) ]] && status_devices | grep_q -x "$(hot_disk)"' 60 'ijournal -n 20'
			disk=$(hot_disk)
			assert_originals "$disk" >/dev/null
			hot_del
			wait_for "[[ ! -e $ORIG/$disk.json ]]" 30 "ls $ORIG"
			;;
		*) assert_originals >/dev/null ;;
		esac
	done
	note "$kills SIGKILLs ($auto restarted by systemd, $manual by systemctl start)"
	assert_originals
	for d in "${BOOT_DISKS[@]}"; do
		[[ -e $ORIG/$d.json ]] || fail "no record for $d after the kills"
	done
	assert_ok systemctl stop iotuned.service
	assert_boot_values
}

# 2. Disks removed while the daemon is still tuning them: null_blk with many disks
# unloaded in the middle of the burst, an NVMe controller deleted right after it
# was added. The daemon goes on (same process), logs nothing worse than the
# removal for those disks, and keeps nothing about them.
check_disks_removed_mid_burst() {
	local pid nr cur n=64 delay t0 gone hot out
	clean_slate
	seed_rng
	assert_ok systemctl start iotuned.service
	pid=$(main_pid) nr=$(nrestarts)
	cur=$(cursor_now)
	t0=$(_iotvm_us)
	assert_ok modprobe null_blk nr_devices=$n
	delay=$(rand_ms 1500)
	sleep_ms "$delay"
	note "daemon had $(n_status_nullb) of $n nullb in status.json and $(n_records nullb) records when rmmod started (${delay} ms after modprobe)"
	rmmod_null_blk
	note "null_blk unloaded $(ms_since "$t0") ms after modprobe; $(n_status_nullb) nullb in status.json then"
	hot_add
	wait_for '[[ -n $(hot_disk) ]]' 30 'ls /sys/block'
	hot=$(hot_disk)
	hot_del
	note "$hot added and deleted again in $(ms_since "$t0") ms"
	wait_for "[[ \$(n_status_nullb) == 0 ]] && ! status_devices | grep_q -x $hot" 30 'cat /run/iotuned/status.json | head -n 40'
	wait_for "! ls $ORIG | grep_q -e ^nullb -e ^$hot\\." 30 "ls -la $ORIG"
	note "status.json and $ORIG clean ${WAITED}s after the removals"
	gone=$(find /run/iotuned -name "nullb*" -o -name "$hot.*" -o -name "$hot" | tr '\n' ' ')
	assert_eq "" "$gone" "files about removed disks under /run/iotuned"
	assert_eq active "$(systemctl is-active iotuned.service)" "iotuned"
	assert_eq "$pid" "$(main_pid)" "MainPID"
	assert_eq "$nr" "$(nrestarts)" "NRestarts"
	# What the journal says about the removed disks, by kind and priority.
	out=$(ijournal --since="@$cur" -o json | iotvm_py -c '
import json, re, sys
hot = sys.argv[1]
pat = re.compile(r"\b(nullb\d+|" + re.escape(hot) + r")\b")
ids = {"864c75e8f2f04514959963e275d18f0d": "tuned", "c0e74b1dfaf847d5b438382e8afef2b0": "written",
       "209e96bbbcf94bcf8c11688bcfa1047e": "not-tuned", "37d45c408b0b4ba99354ba9add6a1a42": "removed",
       "ff7b44bea39643da99ddbf3a343030d5": "unsupported", "78e618eba7c04a25abdf1b130e03302c": "failed",
       "ddd3ea3720e646139165099acdaad3df": "drift", "491c4daa961a49429ac640a54eacbec9": "restore"}
kinds, errors, devs, tuned, removed, unsup = {}, [], set(), set(), set(), []
for line in sys.stdin:
    e = json.loads(line)
    msg = e.get("MESSAGE", "")
    if not isinstance(msg, str):
        continue
    dev = e.get("DEVICE", "")
    m = pat.search(msg)
    if not (pat.fullmatch(dev) or m):
        continue
    devs.add(dev or m.group(1))
    kind = ids.get(e.get("MESSAGE_ID", ""), "other")
    kinds[kind] = kinds.get(kind, 0) + 1
    if kind == "tuned" and dev:
        tuned.add(dev)
    if kind == "removed" and dev:
        removed.add(dev)
    if kind == "unsupported" and dev.startswith("nullb"):
        unsup.append(msg)
    prio = int(e.get("PRIORITY", 6))
    if prio <= 4:
        errors.append(f"[{prio}] {msg}")
print("journal about the %d removed disks: %s" % (len(devs), ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))))
print("disks with a tuned entry: %d, with a removed entry: %d" % (len(tuned), len(removed)))
# null_blk has every knob the mixed profile sets: "not supported" about one is
# a read that failed because the disk was going away.
for x in unsup:
    errors.append("false unsupported: " + x)
for x in sorted(tuned - removed):
    print("ERROR tuned but no removed entry: " + x)
    errors.append(x)
for x in errors[:40]:
    print("ERROR " + x)
print("errors: %d" % len(errors))
' "$hot")
	printf '%s\n' "$out" | sed 's/^/    | /'
	assert_eq "errors: 0" "$(tail -n 1 <<<"$out")" "warnings or errors about the removed disks"
	assert_ok systemctl stop iotuned.service
	assert_boot_values
}

# 3. The file system holding /run/iotuned is full. A small tmpfs is mounted on
# /run/iotuned before the start and filled, rather than filling /run itself:
# in this guest /run also holds the journal (volatile storage) and systemd's
# own state, so a full /run would silence journald and the check could not
# see what the daemon says. iotuned meets the same thing either way: ENOSPC
# from write(2) on a tmpfs.
check_run_full() {
	local pid nr cur i d k bad=() t0 free
	clean_slate
	assert_ok mount -t tmpfs -o size=512k,mode=0755 iotvm-small /run/iotuned
	# If this check fails half-way, the next one's clean_slate unmounts it.
	assert_ok systemctl start iotuned.service
	pid=$(main_pid) nr=$(nrestarts)
	assert_originals
	dd if=/dev/zero of=/run/iotuned/zz-filler bs=4k 2>/dev/null || true
	free=$(df --output=avail -B1 /run/iotuned | tail -n 1 | tr -d ' ')
	note "/run/iotuned: $(du -sk /run/iotuned/zz-filler | cut -f1) KiB filler, $free bytes free"
	cur=$(cursor_now)
	t0=$(_iotvm_us)
	assert_ok modprobe null_blk nr_devices=4
	wait_for '(for i in 0 1 2 3; do ijournal --since="@$cur" DEVICE=nullb$i | grep_q "nullb$i: not tuned" || exit 1; done)' 30 \
		'ijournal --since="@$cur" | tail -n 30'
	note "4 'not tuned' entries ${WAITED}s after modprobe:"
	ijournal --since="@$cur" -o cat DEVICE=nullb0 | sed 's/^/    | /'
	ijournal --since="@$cur" -p warning -o cat | grep -v nullb | sort | uniq -c | sed 's/^/    | /'
	ijournal --since="@$cur" DEVICE=nullb0 -o cat | grep_q -E 'nullb0: not tuned: .*original values.*No space left on device' ||
		fail "the journal does not say that nullb0's original values could not be recorded for lack of space"
	sleep 2 # two reassert intervals with the disk still full: nothing may be written
	# Every knob that differs from a fresh disk's value must have a record.
	for ((i = 0; i < 4; i++)); do
		for k in "${QKNOBS[@]}"; do
			[[ $(fknob nullb$i "$k" 2>/dev/null || echo -) == "$(<"$REF/nullb/$k")" ]] ||
				[[ -e $ORIG/nullb$i.json ]] || bad+=("nullb$i $k")
		done
	done
	assert_eq "" "${bad[*]}" "knobs changed without a recorded original"
	assert_eq "" "$(ls -a $ORIG | grep nullb || true)" "records or temporary files of nullb* while full"
	assert_eq "$pid" "$(main_pid)" "MainPID"
	rm /run/iotuned/zz-filler
	t0=$(_iotvm_us)
	wait_for '(for i in 0 1 2 3; do [[ -e $ORIG/nullb$i.json && $(sched_of nullb$i) != "$(<"$REF/nullb/scheduler")" ]] || exit 1; done)' 30 \
		"ls $ORIG; grep -H . /sys/block/nullb*/queue/scheduler; ijournal -n 20"
	note "space back: the 4 disks recorded and tuned $(ms_since "$t0") ms after the filler was deleted (reassert interval $INTERVAL_MS ms)"
	wait_for 'ijournal --since="@$cur" DEVICE=nullb3 | grep_q "nullb3 tuned with profile"' 10 'ijournal -n 20'
	assert_originals
	assert_eq "$pid" "$(main_pid)" "MainPID (no restart)"
	assert_eq "$nr" "$(nrestarts)" "NRestarts"
	rmmod_null_blk
	assert_ok systemctl stop iotuned.service
	assert_ok umount /run/iotuned
	assert_boot_values
}

# 4. journald restarted under the daemon, also in the middle of a burst.
check_journald_restarts() {
	local pid nr cur cur0 i rc n=24 jpid seen
	clean_slate
	assert_ok systemctl start iotuned.service
	pid=$(main_pid) nr=$(nrestarts)
	cur0=$(cursor_now)
	for ((i = 1; i <= 3; i++)); do
		jpid=$(systemctl show -P MainPID systemd-journald.service)
		if ((i == 2)); then
			assert_ok modprobe null_blk nr_devices=$n >/dev/null
		fi
		assert_ok systemctl restart systemd-journald.service >/dev/null
		rc=0
		iotunectl status >/dev/null 2>&1 || rc=$?
		note "journald restart $i (pid $jpid -> $(systemctl show -P MainPID systemd-journald.service)): iotunectl status exit $rc"
		assert_eq 0 "$rc" "iotunectl status after journald restart $i"
	done
	wait_for "[[ \$(n_status_nullb) == $n ]]" 60 'iotunectl status | tail'
	# the per-disk summary (MESSAGE_ID of a device tuned; catalog/iotuned.catalog)
	seen=$(ijournal --since="@$cur0" -o cat MESSAGE_ID=864c75e8f2f04514959963e275d18f0d | grep -Ec '^nullb[0-9]+ tuned with profile' || true)
	note "tuned entries for the $n nullb disks of the burst (tuned while journald restarted): $seen"
	assert_eq active "$(systemctl is-active iotuned.service)" "iotuned"
	assert_eq "$pid" "$(main_pid)" "MainPID"
	assert_eq "$nr" "$(nrestarts)" "NRestarts"
	# Events after the restarts: one drift, and the removal of the burst's disks.
	cur=$(cursor_now)
	echo mq-deadline >/sys/block/nvme0n1/queue/scheduler
	wait_for 'ijournal --since="@$cur" DEVICE=nvme0n1 KNOB=scheduler MESSAGE_ID=ddd3ea3720e646139165099acdaad3df | grep_q "drifted to mq-deadline"' 20 'ijournal -n 20'
	note "drift entry with DEVICE=nvme0n1 KNOB=scheduler ${WAITED}s after the write"
	rmmod_null_blk
	wait_for "[[ \$(ijournal --since=\"@\$cur\" MESSAGE_ID=37d45c408b0b4ba99354ba9add6a1a42 -o json | grep -c '\"DEVICE\":\"nullb') == $n ]]" 30 \
		'ijournal --since="@$cur" | tail -n 20'
	note "$n 'removed' entries with DEVICE=nullb* ${WAITED}s after rmmod"
	assert_ok systemctl stop iotuned.service
	assert_boot_values
}

# 5. `iotunectl apply` in a loop while the daemon tunes a burst and is restarted.
# Every record must still hold the values from before iotuned.
check_concurrent_apply() {
	local loop n=16 applies
	clean_slate
	assert_ok systemctl start iotuned.service
	: >"$FT/applies"
	( while :; do iotunectl apply >/dev/null 2>&1; echo x >>"$FT/applies"; done ) &
	loop=$!
	# shellcheck disable=SC2064
	trap "kill $loop 2>/dev/null || true" EXIT
	assert_ok modprobe null_blk nr_devices=$n
	assert_ok systemctl restart iotuned.service
	wait_for "[[ \$(n_status_nullb) == $n ]]" 60 'iotunectl status | tail'
	wait_for "(( \$(wc -l <$FT/applies) >= 3 ))" 60
	kill "$loop" 2>/dev/null || true
	wait "$loop" 2>/dev/null || true
	wait_for '! pgrep -x iotunectl' 60 'ps -ef | grep iotunectl'
	applies=$(wc -l <"$FT/applies")
	note "$applies runs of iotunectl apply during the burst and the restart"
	assert_originals
	rmmod_null_blk
	assert_ok systemctl stop iotuned.service
	assert_boot_values
}
