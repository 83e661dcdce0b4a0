# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for scenario bodies, sourced inside the guest (by guest-run, and by the
# --shell rc file). Scenarios run as root on the real kernel.
#
# Conventions: step/note print progress on stdout; fail and assertion failures
# print on stderr (so a failure inside $(...) still reaches the log) and exit,
# which ends the current check only: each check runs in its own subshell with
# errexit, and an ERR trap names any command that failed unexpectedly.

IOTVM_SHARE=/mnt/iotvm
# Debian's python (stdlib only); the host's default python3 may be another build.
IOTVM_PY=/usr/bin/python3
# The checks' own Python: stdlib only, so without the site module (-S), which
# would read every .pth file of the site-packages at each start (some import
# modules): ~120 ms of each of the hundreds of starts of a boot under TCG.
# A Python job put in the background (&) that a check later kills runs
# "$IOTVM_PY" -S itself: a function sent to the background is a subshell,
# and its $! the subshell's, which a kill would end without ending Python.
iotvm_py() { "$IOTVM_PY" -S "$@"; }
IOTVM_T0=${IOTVM_T0:-$EPOCHREALTIME}
# The test-bed kernel this guest booted (run-scenario --kernel: 6.1, 6.12, 6.12-rt).
IOTVM_KERNEL=$(cat "$IOTVM_SHARE/kernel" 2>/dev/null || echo 6.1)

# Is the running kernel at least MAJOR.MINOR? Where the kernels differ, a check
# asks this and names the kernel source that makes them differ.
kernel_at_least() { # MAJOR MINOR
	local r maj min
	r=$(uname -r)
	maj=${r%%.*}
	r=${r#*.}
	min=${r%%[!0-9]*}
	((maj > $1 || (maj == $1 && min >= $2)))
}
# Is this a PREEMPT_RT kernel (interrupt handlers run in threads)?
kernel_is_rt() {
	[[ $(cat /sys/kernel/realtime 2>/dev/null) == 1 ]]
}

# Microseconds since the epoch, as an integer (EPOCHREALTIME is "s.micro").
_iotvm_us() { local t=${EPOCHREALTIME//[.,]/}; echo "$((10#$t))"; }
# Seconds (2 decimals) since a saved EPOCHREALTIME.
_iotvm_since() {
	local a=${1//[.,]/} b=${EPOCHREALTIME//[.,]/}
	local d=$((10#$b - 10#$a))
	printf '%d.%02d' $((d / 1000000)) $((d % 1000000 / 10000))
}

# --- how fast this guest is right now ----------------------------------------------
# Time limits scale with the machine, not with a guess: guest-run measures what a
# fork+exec costs at the start of the test (iotvm_calibrate) and every wait_for
# limit and every timing bound (slow_ms) is multiplied by IOTVM_SLOW_PCT/100. On
# a quiet 2-core host under TCG a spawn costs about IOTVM_REF_SPAWN_US; a loaded
# or slower host gets proportionally longer limits, never shorter ones.
IOTVM_REF_SPAWN_US=${IOTVM_REF_SPAWN_US:-40000}
IOTVM_SLOW_PCT=${IOTVM_SLOW_PCT:-100}

iotvm_calibrate() {
	local b i t0 per=() n=10
	for b in 1 2 3; do
		t0=$(_iotvm_us)
		for ((i = 0; i < n; i++)); do /bin/true; done
		per+=($((($(_iotvm_us) - t0) / n)))
	done
	# The median of three batches: one busy moment does not set the factor.
	mapfile -t per < <(printf '%s\n' "${per[@]}" | sort -n)
	IOTVM_SPAWN_US=${per[1]}
	IOTVM_SLOW_PCT=$((IOTVM_SPAWN_US * 100 / IOTVM_REF_SPAWN_US))
	((IOTVM_SLOW_PCT >= 100)) || IOTVM_SLOW_PCT=100
	export IOTVM_SPAWN_US IOTVM_SLOW_PCT
}

# A duration in ms (a bound the checks hold the daemon to) scaled to this guest.
slow_ms() { # MS
	echo $(($1 * IOTVM_SLOW_PCT / 100))
}

step() { printf -- '--- [%7ss] %s\n' "$(_iotvm_since "$IOTVM_T0")" "$*"; }
note() { printf '    %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
# `grep -q` for the end of a pipeline: under pipefail, grep -q's exit at the first
# match kills the writer (journalctl, iotunectl) with SIGPIPE, and the pipeline
# fails although the line was there. This reads its input to the end.
grep_q() { grep "$@" >/dev/null; }

_iotvm_err() {
	printf 'FAIL: command failed (exit %s) at %s:%s: %s\n' "$1" "$2" "$3" "$4" >&2
}

# --- assertions: print "ok" with the value, or expected vs actual and exit ------

assert_eq() { # EXPECTED ACTUAL [WHAT]
	local exp=$1 act=$2 what=${3:-value}
	[[ $act == "$exp" ]] || fail "$what: expected '$exp', got '$act'"
	note "ok: $what = '$act'"
}

assert_ne() { # UNEXPECTED ACTUAL [WHAT]
	local bad=$1 act=$2 what=${3:-value}
	[[ $act != "$bad" ]] || fail "$what: expected anything but '$bad', got '$act'"
	note "ok: $what = '$act' (not '$bad')"
}

assert_in() { # ACTUAL WHAT ALLOWED...
	local act=$1 what=$2 a
	shift 2
	for a; do
		[[ $act == "$a" ]] && { note "ok: $what = '$act'"; return 0; }
	done
	fail "$what: expected one of [$*], got '$act'"
}

assert_match() { # REGEX ACTUAL [WHAT]
	local re=$1 act=$2 what=${3:-value}
	[[ $act =~ $re ]] || fail "$what: expected to match /$re/, got '$act'"
	note "ok: $what = '$act'"
}

# Read a sysfs/procfs attribute; fails the check (with the error) if unreadable.
read_attr() { # FILE
	local v
	v=$(cat -- "$1" 2>&1) || fail "cannot read $1: $v"
	printf '%s\n' "$v"
}

assert_file_eq() { # FILE EXPECTED
	local act
	act=$(read_attr "$1") || exit 1
	assert_eq "$2" "$act" "$1"
}

assert_exists() { # PATH [WHAT]
	[[ -e $1 ]] || fail "${2:-$1}: expected to exist, it does not"
	note "ok: ${2:-$1} exists"
}

assert_not_exists() { # PATH [WHAT]
	[[ ! -e $1 ]] || fail "${2:-$1}: expected not to exist, it does"
	note "ok: ${2:-$1} does not exist"
}

# Run a command; it must exit 0. Its output is shown either way (indented), as
# it comes: a long step (dpkg -i under emulation) shows its progress, which is
# what the host runner's stall watchdog looks for.
assert_ok() { # CMD...
	local rc
	# The exit status travels on fd 3, the output through sed to fd 4 (stdout).
	{ rc=$({ { "$@" 2>&1 3>&- 4>&- && echo 0 >&3 || echo "$?" >&3; } | sed -u 's/^/    | /' >&4; } 3>&1); } 4>&1
	((rc == 0)) || fail "'$*' exited $rc, expected 0"
	note "ok: '$*' exited 0"
}

# Run a command; it must fail. Prints its exit code and output.
assert_fails() { # CMD...
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	[[ -n $out ]] && printf '%s\n' "$out" | sed 's/^/    | /'
	((rc != 0)) || fail "'$*' exited 0, expected a failure"
	note "ok: '$*' failed as expected (exit $rc)"
}

# Poll CONDITION (a shell expression, eval'ed quietly) every 50 ms until true.
# Sets WAITED (seconds, 2 decimals) and WAITED_US; on timeout runs DIAGNOSE (a
# shell command that shows why, e.g. the log that was searched) and fails.
wait_for() { # CONDITION [TIMEOUT_SECONDS=10] [DIAGNOSE]
	local cond=$1 timeout=${2:-10} diag=${3:-}
	local t0 now limit
	t0=$(_iotvm_us)
	# TIMEOUT is for a quiet host; a slower guest gets proportionally more.
	timeout=$((${timeout%.*} * IOTVM_SLOW_PCT / 100))
	limit=$((t0 + timeout * 1000000))
	while :; do
		if eval "$cond" >/dev/null 2>&1; then
			now=$(_iotvm_us)
			WAITED_US=$((now - t0))
			# shellcheck disable=SC2034 # for the scenarios
			WAITED=$(printf '%d.%02d' $((WAITED_US / 1000000)) $((WAITED_US % 1000000 / 10000)))
			return 0
		fi
		if (($(_iotvm_us) >= limit)); then
			if [[ -n $diag ]]; then
				echo "    diagnosis: $diag"
				# Best effort: a failing diagnosis must not bury the timeout.
				(trap - ERR; set +e; eval "$diag") 2>&1 | sed 's/^/    | /' || true
			fi
			fail "timed out after ${timeout}s waiting for: $cond"
		fi
		sleep 0.05
	done
}

# --- QMP from inside the guest ---------------------------------------------------
# One command per call, relayed by the host (lib/qmp.py relay) over the
# virtio-serial port org.iotuned.qmp. Prints the "return" value as JSON; on a QMP
# error prints its class and description on stderr and returns 1.
qmp() { # JSON
	iotvm_py "$IOTVM_SHARE/lib/qmp.py" call "$1"
}

# --- finding devices ---------------------------------------------------------------
# The runner gives every device serial=<its id in VM_DEVICES>. NVMe controllers
# probe asynchronously, so nvme0/nvme1 numbering is not stable: look them up.

# Controllers with serial SERIAL, one per line, in name order. The controllers of
# one NVMe subsystem share the serial (QEMU requires it), so there may be several.
# Note: 6.1 pads the serial attribute with spaces to its 20 bytes ("nv0      ...").
nvme_ctrls_by_serial() { # SERIAL -> nvmeX...
	local c s found=1
	for c in /sys/class/nvme/nvme*; do
		[[ -e $c/serial ]] || continue
		s=$(<"$c/serial")
		s=${s%"${s##*[![:space:]]}"}
		[[ $s == "$1" ]] && { echo "${c##*/}"; found=0; }
	done
	return "$found"
}

nvme_ctrl_by_serial() { # SERIAL -> nvmeX (the first)
	local c
	c=$(nvme_ctrls_by_serial "$1") || return 1
	echo "${c%%$'\n'*}"
}

# The disk(s) of a controller's namespace NSID as the controller sees them:
# nvmeXnY without multipath, the hidden path nvmeXcYnZ with native multipath.
nvme_ctrl_disks() { # CTRL [NSID]
	local d n
	for d in /sys/class/nvme/"$1"/nvme*; do
		n=${d##*/}
		[[ $n =~ ^nvme[0-9]+(c[0-9]+)?n([0-9]+)$ ]] || continue
		[[ -z ${2:-} || ${BASH_REMATCH[2]} == "$2" ]] && echo "$n"
	done
	return 0
}

# The NVMe controller of a namespace disk: nvme0n1 -> nvme0 (its device link).
nvme_ctrl_of_disk() { # DISK -> nvmeX
	basename "$(readlink -f "/sys/block/$1/device")"
}

# Interrupts raised so far by a controller's I/O vectors (nvmeXq1.., not the admin
# queue's q0), summed over all CPUs, from /proc/interrupts.
nvme_io_irqs() { # CTRL
	awk -v c="$1" '$NF ~ "^" c "q[1-9][0-9]*$" { for (i = 2; i < NF; i++) if ($i ~ /^[0-9]+$/) s += $i } END { print s + 0 }' /proc/interrupts
}

# (read, not cat: no process per disk, and wait_for conditions call this.)
disk_by_serial() { # SERIAL -> vda / nvme0n1 / sda
	local b n s
	for b in /sys/block/*; do
		n=${b##*/} s=
		case $n in
		vd*) read -r s 2>/dev/null <"$b/serial" || : ;;
		nvme*c*n*) continue ;;
		nvme*) read -r s 2>/dev/null <"$b/device/serial" || : ;; # read strips 6.1's trailing spaces
		sd*) s=$(udevadm info --query=property --path="$b" 2>/dev/null |
			sed -n 's/^ID_SERIAL_SHORT=//p') ;;
		*) continue ;;
		esac
		[[ $s == "$1" ]] && { echo "$n"; return 0; }
	done
	return 1
}

# The active scheduler of a disk: the bracketed name of "[none] mq-deadline", or
# the whole file when there is no choice (bio-based disks read just "none").
# One setting of one disk from `iotunectl --json` output (plan, apply, verify,
# status): FIELD of the setting whose knob is KNOB; "" for null. Fails when absent.
json_setting() { # JSONFILE DISK KNOB FIELD
	iotvm_py - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for d in doc["devices"]:
    if d["device"] == sys.argv[2]:
        for s in d["settings"]:
            if s["knob"] == sys.argv[3]:
                v = s[sys.argv[4]]
                print("" if v is None else v)
                sys.exit(0)
sys.exit(f"{sys.argv[3]} of {sys.argv[2]} not in {sys.argv[1]}")
PY
}

sched_of() { # DISK
	local s
	s=$(read_attr "/sys/block/$1/queue/scheduler") || exit 1
	if [[ $s =~ \[([^]]+)\] ]]; then echo "${BASH_REMATCH[1]}"; else echo "$s"; fi
}

assert_sched() { # DISK EXPECTED
	local s
	s=$(sched_of "$1") || exit 1
	assert_eq "$2" "$s" "$1 scheduler"
}

# Write VALUE to FILE with one write(2) and print "OK" or the errno name (EIO,
# EPERM, ...): for attributes whose failure mode is the point of the test.
write_errno() { # FILE VALUE
	iotvm_py - "$1" "$2" <<'PY'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    try:
        os.write(fd, sys.argv[2].encode())
    finally:
        os.close(fd)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
PY
}

# Expand a cpulist ("0-2,5" or blk-mq's "0, 1, 2") to "0 1 2 5", for comparing.
cpulist_expand() { # LIST
	local part out=() a b i
	for part in ${1//,/ }; do
		if [[ $part == *-* ]]; then
			a=${part%-*} b=${part#*-}
			for ((i = a; i <= b; i++)); do out+=("$i"); done
		else
			out+=("$part")
		fi
	done
	echo "${out[*]}"
}

# IRQ number of the vector named NAME in /proc/interrupts (e.g. nvme0q1).
irq_by_name() { # NAME
	awk -v n="$1" '$NF == n { sub(":", "", $1); print $1; found=1; exit } END { exit !found }' /proc/interrupts
}

# --- running a scenario ------------------------------------------------------------
# A scenario file defines check_* functions (run in file order, or as listed in
# VM_CHECKS) and optionally scenario_setup (run first; if it fails, nothing else
# runs). Each check runs in a subshell: a failure ends that check, the others
# still run, and the summary names every failed one.

# Run one function as a check in a subshell with errexit; prints PASS/FAIL.
# Safe to call from the --shell prompt too (a failing check does not exit it).
iotvm_check() { # FUNCTION
	local t0=$EPOCHREALTIME rc
	echo "=== CHECK $1"
	(
		set -eEuo pipefail
		trap '_iotvm_err $? "${BASH_SOURCE[0]##*/}" $LINENO "$BASH_COMMAND"' ERR
		"$1"
	)
	rc=$?
	if ((rc == 0)); then
		echo "=== PASS $1 ($(_iotvm_since "$t0")s)"
	else
		echo "=== FAIL $1 (exit $rc, $(_iotvm_since "$t0")s)"
	fi
	return "$rc"
}

# Returns 0 only if every check passed.
iotvm_run_scenario() { # FILE
	local file=$1 c failed=() checks=()
	# shellcheck source=/dev/null
	source "$file"
	if [[ -n ${VM_CHECKS+x} ]]; then
		checks=("${VM_CHECKS[@]}")
	else
		mapfile -t checks < <(sed -nE 's/^(check_[A-Za-z0-9_]+)[[:space:]]*\(\).*/\1/p' "$file")
	fi
	((${#checks[@]})) || { echo "FAIL: $file defines no check_* functions" >&2; return 1; }
	step "scenario $IOTVM_KERNEL/$(basename "$file" .sh | sed 's/^[0-9]*-//'): kernel $(uname -r), ${#checks[@]} checks: ${checks[*]}"
	# Boot cost at a glance: seconds since the kernel started.
	note "guest uptime at test start: $(cut -d' ' -f1 /proc/uptime) s"
	note "calibration: fork+exec ${IOTVM_SPAWN_US:-?} us (reference $IOTVM_REF_SPAWN_US us): time limits x$((IOTVM_SLOW_PCT / 100)).$(printf '%02d' $((IOTVM_SLOW_PCT % 100)))"

	if declare -F scenario_setup >/dev/null; then
		iotvm_check scenario_setup || {
			echo "=== RESULT ($IOTVM_KERNEL): FAIL: scenario_setup failed, no check was run"
			return 1
		}
	fi
	for c in "${checks[@]}"; do
		iotvm_check "$c" || failed+=("$c")
	done

	if ((${#failed[@]})); then
		echo "=== RESULT ($IOTVM_KERNEL): FAIL: ${#failed[@]} of ${#checks[@]} checks failed: ${failed[*]}"
		return 1
	fi
	echo "=== RESULT ($IOTVM_KERNEL): PASS: all ${#checks[@]} checks passed"
	return 0
}

# Every journal entry iotuned sent in this boot whose MESSAGE_ID has a catalog
# entry carries each field that entry's text names (@DEVICE@, @PREVIOUS@, ...):
# otherwise `journalctl -x` prints the placeholder itself. Checked on the real
# journal, against the installed catalog; prints the entries seen per ID.
assert_journal_matches_catalog() {
	local catalog=/usr/lib/systemd/catalog/iotuned.catalog out
	[[ -f $catalog ]] || fail "no catalog at $catalog"
	out=$(journalctl -b SYSLOG_IDENTIFIER=iotuned -o json --no-pager | iotvm_py -c '
import json, re, sys
entries = {}
cur = None
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("-- "):
        cur = line[3:].strip()
        entries[cur] = set()
    elif cur and not line.startswith("#"):
        entries[cur].update(re.findall(r"@([A-Z0-9_]+)@", line))
seen, bad = {}, []
for raw in sys.stdin:
    e = json.loads(raw)
    mid = e.get("MESSAGE_ID")
    if mid is None:
        continue
    if mid not in entries:
        bad.append("MESSAGE_ID %s has no catalog entry: %s" % (mid, e.get("MESSAGE")))
        continue
    seen[mid] = seen.get(mid, 0) + 1
    missing = sorted(f for f in entries[mid] if f not in e)
    if missing:
        bad.append("%s lacks %s: %s" % (mid, ", ".join(missing), e.get("MESSAGE")))
for mid in sorted(seen):
    print("seen %s x%d" % (mid, seen[mid]))
for b in bad[:20]:
    print("BAD " + b)
sys.exit(1 if bad else 0)
' "$catalog") || { printf '%s\n' "$out" | sed 's/^/    | /'; fail "journal entries that do not match the catalog"; }
	printf '%s\n' "$out" | sed 's/^/    | /'
	note "ok: $(printf '%s\n' "$out" | grep -c '^seen') kinds of event, every field the catalog names present"
}
