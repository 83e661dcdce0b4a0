# SPDX-License-Identifier: LGPL-2.1-or-later
# Benchmark (not a test): iotuned, TuneD and a plain udev rule, side by side in
# one boot, on the same four queue knobs of NVMe disks (scheduler, read_ahead_kb,
# nr_requests, rq_affinity) and of null_blk disks for scale. Run it with
# bench/compare, which boots this several times, rotating the order of the
# tools, and summarises and plots what every boot wrote to samples.tsv.
#
# Every time is taken inside the guest by one bash process polling sysfs with
# builtins only (read, EPOCHREALTIME; a 10 ms wait on a pipe, no fork), so the
# poller costs the same for every tool. Under TCG everything is slower than on
# hardware (fork+exec of /bin/true takes tens of ms here, see the "calibrate"
# sample): read the ratios, not the absolute numbers.

VM_DEVICES=(
	"nvme nv0" "nvme nv1" "nvme nv2" "nvme nv3" # four cold-plugged disks: nvme0n1..nvme3n1
	"rootport rp1"                               # an empty slot
	"spare hot1"                                 # the hot-added controller's drive
)
VM_MEMORY=3072
# TuneD is a Type=dbus service: the guest runs dbus-daemon (the suite masks it).
VM_DBUS=1
VM_STALL=900
VM_TIMEOUT=3600

HOTPLUGS=${BENCH_HOTPLUGS:-5}
SCALE=${BENCH_SCALE:-1024}
IDLE=${BENCH_IDLE:-40}
ORDER=${BENCH_ORDER:-iotuned tuned udev}
BOOT=${BENCH_BOOT:-1}
OUT=${IOTVM_SHARE:-/mnt/iotvm}/results/samples.tsv

SCHED=mq-deadline RA=512 NR=64 RQ=2
NULL_SCHED=none

# Record one sample: TOOL METRIC VALUE
sample() { printf '%s\t%s\t%s\t%s\n' "$BOOT" "$1" "$2" "$3" >>"$OUT"; note "RESULT $1 $2 $3"; }

# --- the poller: builtins only -------------------------------------------------
TICK=''
# A 10 ms sleep without a fork: `read -t` on a pipe nobody writes (opened once).
tick() {
	[[ -n $TICK ]] || exec {TICK}<> <(:)
	read -r -t 0.01 -u "$TICK" _ || :
}
us() { local t=${EPOCHREALTIME/[.,]/}; REPLY=$((10#$t)); }

# Is knob N of disk D at its target? (1 scheduler, 2 read_ahead_kb, 3 nr_requests, 4 rq_affinity)
knob_ok() { # DISK N SCHED
	local v
	case $2 in
	1) read -r v <"/sys/block/$1/queue/scheduler" 2>/dev/null && [[ $v == *"[$3]"* ]] ;;
	2) read -r v <"/sys/block/$1/queue/read_ahead_kb" 2>/dev/null && [[ $v == "$RA" ]] ;;
	3) read -r v <"/sys/block/$1/queue/nr_requests" 2>/dev/null && [[ $v == "$NR" ]] ;;
	4) read -r v <"/sys/block/$1/queue/rq_affinity" 2>/dev/null && [[ $v == "$RQ" ]] ;;
	esac
}
disk_ok() { knob_ok "$1" 1 "${2:-$SCHED}" && knob_ok "$1" 2 && knob_ok "$1" 3 && knob_ok "$1" 4; }
# The two TuneD's [disk] plugin sets on hotplug: scheduler and read-ahead.
disk_ok2() { knob_ok "$1" 1 "${2:-$SCHED}" && knob_ok "$1" 2; }

# Wait until every disk in DISKS (array name) is tuned; REPLY: the time (us), or 0 at the deadline.
wait_all_tuned() { # ARRAY SCHED TIMEOUT_S [CHECK=disk_ok]
	local -n _d=$1
	local deadline i left check=${4:-disk_ok}
	us
	deadline=$((REPLY + $3 * 1000000))
	while :; do
		left=0
		for i in "${_d[@]}"; do $check "$i" "$2" || { left=1; break; }; done
		us
		((left == 0)) && return 0
		((REPLY > deadline)) && { REPLY=0; return 1; }
		tick
	done
}

NVME_DISKS=(nvme0n1 nvme1n1 nvme2n1 nvme3n1)

# The kernel's defaults, written by hand: every tool starts from the same state.
reset_disks() {
	local d
	for d in "$@"; do
		echo none >"/sys/block/$d/queue/scheduler"
		echo 1023 >"/sys/block/$d/queue/nr_requests" 2>/dev/null || :
		echo 128 >"/sys/block/$d/queue/read_ahead_kb"
		echo 1 >"/sys/block/$d/queue/rq_affinity"
	done
}

# --- the three tools, configured for the same four knobs -------------------------
setup_iotuned() {
	mkdir -p /etc/iotuned/profiles /etc/iotuned/iotuned.yaml.d
	cat >/etc/iotuned/profiles/bench.yaml <<-EOF
		description: bench/compare, the four knobs
		queue: { scheduler: $SCHED, read_ahead_kb: $RA, nr_requests: $NR, rq_affinity: $RQ }
	EOF
	cat >/etc/iotuned/profiles/bench-null.yaml <<-EOF
		description: bench/compare, the four knobs on null_blk
		queue: { scheduler: $NULL_SCHED, read_ahead_kb: $RA, nr_requests: $NR, rq_affinity: $RQ }
	EOF
	cat >/etc/iotuned/iotuned.yaml.d/90-bench.yaml <<-EOF
		rules:
		  - { name: bench, match: { kernel: "nvme*" }, profile: bench }
		  - { name: bench-null, match: { kernel: "nullb*" }, profile: bench-null }
	EOF
	# The daemon's own exec time, for "exec -> tuned", and its timing lines (--timing:
	# at info level, so that the debug messages of -v cost nothing here).
	mkdir -p /run/systemd/system/iotuned.service.d
	cat >/run/systemd/system/iotuned.service.d/bench.conf <<-'EOF'
		[Service]
		ExecStart=
		ExecStart=/bin/bash -c 'echo $${EPOCHREALTIME/[.,]/} >/run/iotuned/exec-usec; exec /usr/sbin/iotuned --timing'
	EOF
	systemctl daemon-reload
}

setup_tuned() {
	mkdir -p /etc/tuned/bench
	# [disk] covers hotplug (TuneD's udev monitor); nr_requests and rq_affinity
	# have no [disk] option, so [sysfs] sets them, at start only.
	cat >/etc/tuned/bench/tuned.conf <<-EOF
		[main]
		summary=bench/compare: the four knobs
		[disk]
		devices=nvme*n*, nullb*
		elevator=$SCHED
		readahead=$RA
		[sysfs]
		/sys/block/nvme*n*/queue/nr_requests=$NR
		/sys/block/nvme*n*/queue/rq_affinity=$RQ
		/sys/block/nullb*/queue/nr_requests=$NR
		/sys/block/nullb*/queue/rq_affinity=$RQ
	EOF
	echo bench >/etc/tuned/active_profile
	echo manual >/etc/tuned/profile_mode
}

UDEV_RULE=/etc/udev/rules.d/60-bench.rules
udev_rule_on() {
	cat >"$UDEV_RULE" <<-EOF
		ACTION=="add|change", SUBSYSTEM=="block", KERNEL=="nvme*n*", ATTR{queue/scheduler}="$SCHED", ATTR{queue/read_ahead_kb}="$RA", ATTR{queue/nr_requests}="$NR", ATTR{queue/rq_affinity}="$RQ"
		ACTION=="add|change", SUBSYSTEM=="block", KERNEL=="nullb*", ATTR{queue/scheduler}="$NULL_SCHED", ATTR{queue/read_ahead_kb}="$RA", ATTR{queue/nr_requests}="$NR", ATTR{queue/rq_affinity}="$RQ"
	EOF
	udevadm control --reload
}
udev_rule_off() { rm -f "$UDEV_RULE"; udevadm control --reload; }

# tuned.service is masked on the guest's kernel command line (run-scenario), so
# TuneD runs as its unit would run it (tuned.service: Type=dbus, tuned -l -P)
# under another name.
unit_of() { case $1 in iotuned) echo iotuned.service ;; tuned) echo bench-tuned.service ;; esac; }
pid_of() { systemctl show -P MainPID "$(unit_of "$1")"; }

# Start the tool; REPLY: when the start command was issued (us).
start_tool() {
	case $1 in
	iotuned)
		us
		local t=$REPLY
		systemctl start iotuned.service || fail "iotuned did not start"
		REPLY=$t
		;;
	tuned)
		us
		local t=$REPLY
		systemd-run --quiet --unit=bench-tuned --property=Type=dbus --property=BusName=com.redhat.tuned \
			/usr/sbin/tuned -l -P || fail "TuneD did not start"
		REPLY=$t
		;;
	udev)
		udev_rule_on
		us
		local t=$REPLY
		udevadm trigger --action=change --subsystem-match=block --sysname-match='nvme*n*'
		REPLY=$t
		;;
	esac
}
stop_tool() {
	case $1 in
	iotuned | tuned) systemctl stop "$(unit_of "$1")" ;;
	udev) udev_rule_off ;;
	esac
	udevadm settle --timeout=120
}

# --- the measures ------------------------------------------------------------------
measure_start() { # TOOL
	local t0 t1
	reset_disks "${NVME_DISKS[@]}"
	start_tool "$1"
	t0=$REPLY
	wait_all_tuned NVME_DISKS "$SCHED" 60 || { sample "$1" start_ms never; return; }
	t1=$REPLY
	sample "$1" start_ms $(((t1 - t0) / 1000))
	if [[ $1 == iotuned ]]; then
		local e
		e=$(cat /run/iotuned/exec-usec)
		sample "$1" exec_to_tuned_ms $(((t1 - e) / 1000))
		# The daemon's own account, from main() to READY=1 (its timing line).
		e=$(journalctl -u iotuned.service -b -o cat --since=-5min | grep -o 'timing: start: [0-9.]* ms wall' | tail -n 1 | grep -o '[0-9.]* ms' || :)
		[[ -n $e ]] && sample "$1" main_to_ready_ms "${e% ms}"
	fi
	# Wait for the start to finish (TuneD keeps going after its knobs).
	udevadm settle --timeout=60
	sleep 2
}

hot_add_once() { # TOOL I
	local disk=nvme4n1 t0 tp=0 t1=0 k tk=(0 0 0 0 0) done=0
	qmp '{"execute": "device_add", "arguments": {"driver": "nvme", "id": "hot1", "serial": "hot1", "drive": "hot1", "bus": "rp1"}}' >/dev/null ||
		fail "QMP device_add failed"
	us
	t0=$REPLY
	while ((done == 0)); do
		us
		((REPLY - t0 > 10000000)) && break
		if ((tp == 0)); then
			[[ -e /sys/block/$disk/queue/scheduler ]] && tp=$REPLY || { tick; continue; }
		fi
		done=1
		for k in 1 2 3 4; do
			if ((tk[k] == 0)); then
				if knob_ok $disk $k "$SCHED"; then us; tk[k]=$REPLY; else done=0; fi
			fi
		done
		((done)) || tick
	done
	((tp)) || fail "hot-added disk $disk did not appear"
	local names=(x scheduler read_ahead_kb nr_requests rq_affinity) worst=0
	for k in 1 2 3 4; do
		if ((tk[k])); then
			sample "$1" "hotplug_${names[k]}_ms" $(((tk[k] - tp) / 1000))
			((tk[k] > worst)) && worst=${tk[k]}
		else
			sample "$1" "hotplug_${names[k]}_ms" never
			worst=-1
		fi
	done
	if ((worst > 0)); then sample "$1" hotplug_all_ms $(((worst - tp) / 1000)); else sample "$1" hotplug_all_ms never; fi
	udevadm settle --timeout=60
	sleep 1
	qmp '{"execute": "device_del", "arguments": {"id": "hot1"}}' >/dev/null || fail "QMP device_del failed"
	wait_for "[[ ! -e /sys/block/$disk ]]" 30
	wait_for "! qmp '{\"execute\": \"qom-list\", \"arguments\": {\"path\": \"/machine/peripheral\"}}' | grep_q '\"hot1\"'" 30
	udevadm settle --timeout=60
}

measure_memory() { # TOOL
	local pid rss pss threads
	[[ $1 == udev ]] && return
	pid=$(pid_of "$1")
	[[ -n $pid && $pid != 0 ]] || fail "$1 has no main process"
	rss=$(awk '/^Rss:/ {print $2}' "/proc/$pid/smaps_rollup")
	pss=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup")
	threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status")
	sample "$1" rss_kb "$rss"
	sample "$1" pss_kb "$pss"
	sample "$1" threads "$threads"
}

# Wake-ups: the times a thread of it went to sleep and was woken (voluntary
# context switches; involuntary ones are preemption by others, not its own doing).
ctx_switches() { # PID -> sum over its threads
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches:/ {n += $2} END {print n + 0}'
}

measure_idle() { # TOOL
	local pid a b
	[[ $1 == udev ]] && return
	pid=$(pid_of "$1")
	sleep 5 # past the start's tail
	a=$(ctx_switches "$pid")
	sleep "$IDLE"
	b=$(ctx_switches "$pid")
	sample "$1" idle_wakeups_per_s "$(awk -v a="$a" -v b="$b" -v t="$IDLE" 'BEGIN {printf "%.2f", (b - a) / t}')"
}

measure_drift() { # TOOL
	local d=nvme1n1 t0
	echo 4096 >"/sys/block/$d/queue/read_ahead_kb"
	us
	t0=$REPLY
	while :; do
		us
		knob_ok $d 2 && { sample "$1" drift_restore_ms $(((REPLY - t0) / 1000)); return; }
		((REPLY - t0 > 15000000)) && { sample "$1" drift_restore_ms never; echo $RA >"/sys/block/$d/queue/read_ahead_kb"; return; }
		tick
	done
}

# Scale: when is every disk of a burst tuned? Two cursors walk nullb0, nullb1, ...
# in the order the kernel creates them, one for scheduler and read-ahead (what
# TuneD's [disk] plugin sets on a new disk), one for all four knobs; at each
# tick each advances over the disks that pass its check and stops at the first
# that does not (absent yet, or not tuned yet). A disk once passed is not read
# again, so a tick costs a read per knob of each disk newly tuned, and a cursor
# reaches the end within a tick of its last disk being tuned. (Until commit
# 23ba0fc the poller swept all the disks after the load, 2-4 s per sweep of
# 1024 under the burst's load: that sweep, not the tools, was most of the
# "all set" time.) modprobe runs in the background, as it creates the disks.
# At the end one untimed sweep counts disks no longer tuned (0 expected: none
# of the tools undoes its own writes).
measure_scale() { # TOOL
	local n=$SCALE i tl=0 t0 t2=0 t4=0 c2=0 c4=0 cpu0 cpu1 pid left ticks mp
	local last=/sys/block/nullb$((SCALE - 1))/queue/scheduler
	pid=$(pid_of "$1" 2>/dev/null || :)
	ticks=$(getconf CLK_TCK)
	[[ -n $pid && $pid != 0 ]] && cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	us
	t0=$REPLY
	modprobe null_blk nr_devices="$n" &
	mp=$!
	while :; do
		# The last disk present: seen here, or by a cursor that passed it.
		if ((tl == 0)) && [[ -e $last ]]; then
			us
			tl=$REPLY
		fi
		while ((c2 < n)) && disk_ok2 "nullb$c2" "$NULL_SCHED"; do c2=$((c2 + 1)); done
		if ((c2 == n && t2 == 0)); then
			us
			t2=$REPLY
			((tl)) || tl=$t2
		fi
		while ((c4 < n)) && disk_ok "nullb$c4" "$NULL_SCHED"; do c4=$((c4 + 1)); done
		if ((c4 == n && t4 == 0)); then
			us
			t4=$REPLY
			((tl)) || tl=$t4
		fi
		# A disk with all four set has its scheduler and read-ahead set: the
		# first cursor is never behind the second (it may have stopped at a disk
		# a moment before its knobs were written, and the loop ends with t4).
		if ((c4 > c2)); then
			c2=$c4
			if ((c2 == n && t2 == 0)); then t2=$t4; fi
		fi
		((t4)) && break
		us
		((tl && REPLY - tl > 90000000)) && break
		if ((tl == 0)) && ! kill -0 "$mp" 2>/dev/null && [[ ! -e $last ]]; then
			wait "$mp" || fail "modprobe null_blk nr_devices=$n failed"
			fail "modprobe null_blk nr_devices=$n returned without creating nullb$((n - 1))"
		fi
		tick
	done
	wait "$mp" || fail "modprobe null_blk failed"
	sample "$1" scale_load_ms $(((tl - t0) / 1000))
	if ((t2)); then sample "$1" scale_sched_ra_after_last_ms $(((t2 - tl) / 1000)); else sample "$1" scale_sched_ra_after_last_ms never; fi
	if ((t4)); then
		sample "$1" scale_after_last_ms $(((t4 - tl) / 1000))
		left=0
		for ((i = 0; i < n; i++)); do disk_ok "nullb$i" "$NULL_SCHED" || left=$((left + 1)); done
		sample "$1" scale_untuned_at_end "$left"
	else
		sample "$1" scale_after_last_ms never
		sample "$1" scale_untuned_after_90s $((n - c4))
	fi
	if [[ -n $pid && $pid != 0 ]]; then
		# The CPU of the whole burst: until udev has sent every event and the
		# tool's CPU time stops growing (0.5 s without a tick), not only until
		# the knobs are set (iotuned verifies and journals each disk at udev's
		# event, later).
		udevadm settle --timeout=300
		cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		for ((i = 0; i < 120; i++)); do
			sleep 0.5
			local c
			c=$(awk '{print $14 + $15}' "/proc/$pid/stat")
			[[ $c == "$cpu1" ]] && break
			cpu1=$c
		done
		sample "$1" scale_cpu_ms_per_disk "$(awk -v a="$cpu0" -v b="$cpu1" -v n="$n" -v hz="$ticks" 'BEGIN {printf "%.2f", (b - a) * 1000 / hz / n}')"
		sleep 8 # one drift check over every disk at least
		sample "$1" scale_rss_kb "$(awk '/^Rss:/ {print $2}' "/proc/$pid/smaps_rollup")"
	fi
	if [[ $1 == iotuned ]]; then
		local line
		line=$(journalctl -u iotuned.service -b -o cat --since=-30s | grep 'timing: drift check:' | tail -n 1)
		note "$line"
		[[ $line =~ ([0-9.]+)\ ms\ CPU,\ ([0-9]+)\ disks ]] &&
			sample "$1" scale_drift_check_cpu_ms "${BASH_REMATCH[1]}"
	fi
}

# Stop after the scale part: iotuned restores every disk (restore_on_stop).
measure_stop() { # TOOL
	local t0 t1
	[[ $1 == iotuned ]] || return
	us
	t0=$REPLY
	systemctl stop iotuned.service
	us
	t1=$REPLY
	sample "$1" scale_stop_ms $(((t1 - t0) / 1000))
}

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	: >"$OUT"
	command -v tuned >/dev/null || fail "TuneD is not installed on the host (bench/compare installs it)"
	setup_iotuned
	setup_tuned
	systemctl stop iotuned.service 2>/dev/null || :
	local t0
	us
	t0=$REPLY
	/bin/true
	us
	sample calibrate fork_exec_true_ms "$(((REPLY - t0) / 1000))"
	# What iotuned's own exec costs before main() does anything: the binary and
	# its shared libraries mapped and relocated (--version returns at once), and
	# the dynamic loader's own count of its part (LD_DEBUG=statistics, in cycles
	# of the guest's TSC rate).
	local i line cyc mhz
	for i in 1 2 3; do
		us
		t0=$REPLY
		/usr/sbin/iotuned --version >/dev/null
		us
		sample calibrate exec_iotuned_version_ms "$(((REPLY - t0) / 1000))"
		line=$(LD_DEBUG=statistics /usr/sbin/iotuned --version 2>&1 >/dev/null | grep 'total startup time in dynamic loader')
		mhz=$(awk '/^cpu MHz/ {print $4; exit}' /proc/cpuinfo)
		[[ $line =~ :\ ([0-9]+)\ cycles ]] && cyc=${BASH_REMATCH[1]} && [[ -n $mhz ]] &&
			sample calibrate dynamic_loader_ms "$(awk -v c="$cyc" -v m="$mhz" 'BEGIN {printf "%.1f", c / m / 1000}')"
	done
	# The kernel's own cost of the four knobs on a settled disk's queue, written
	# by builtin echos (no fork) in the order the kernel needs (the switch resets
	# nr_requests): the elevator switch alone (none -> mq-deadline), and all
	# four; three times each. What every tool's hot-add time is read against.
	local i q=/sys/block/nvme0n1/queue
	for i in 1 2 3; do
		reset_disks nvme0n1
		us
		t0=$REPLY
		echo "$SCHED" >$q/scheduler
		us
		sample calibrate elevator_switch_ms "$(((REPLY - t0) / 1000))"
		reset_disks nvme0n1
		us
		t0=$REPLY
		echo "$SCHED" >$q/scheduler
		echo "$NR" >$q/nr_requests
		echo "$RA" >$q/read_ahead_kb
		echo "$RQ" >$q/rq_affinity
		us
		sample calibrate four_knobs_ms "$(((REPLY - t0) / 1000))"
	done
	reset_disks nvme0n1
}

check_compare() {
	local tool i
	for tool in $ORDER; do
		step "$tool"
		measure_start "$tool"
		for ((i = 1; i <= HOTPLUGS; i++)); do hot_add_once "$tool" "$i"; done
		measure_memory "$tool"
		measure_idle "$tool"
		measure_drift "$tool"
		measure_scale "$tool"
		measure_stop "$tool"
		stop_tool "$tool"
		rmmod null_blk || { sleep 2; rmmod null_blk; } || fail "rmmod null_blk failed"
		udevadm settle --timeout=120
		reset_disks "${NVME_DISKS[@]}"
	done
}
