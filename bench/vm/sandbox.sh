# SPDX-License-Identifier: LGPL-2.1-or-later
# Benchmark (not a test): what each sandboxing directive of iotuned.service costs
# at start, and what it buys in systemd-analyze's exposure score. For each
# directive (or group that only works together) a runtime drop-in turns it off,
# the service is started and stopped ROUNDS times, and the median time from
# `systemctl start` to READY=1 (and systemd's own, from forking the service to
# READY=1) is printed beside the unit's exposure score, and beside the same for
# the unit as shipped and for no sandbox at all. Run it with
# bench/vm-bench sandbox. Under TCG, namespace and mount set-up is slow: read the
# differences within one run.

VM_DEVICES=("nvme nv0" "nvme nv1" "nvme nv2" "nvme nv3")
VM_STALL=900
VM_TIMEOUT=3600

ROUNDS=7
DROPIN=/run/systemd/system/iotuned.service.d/zz-sandbox-bench.conf

# NAME|the [Service] lines that turn it off
VARIANTS=(
	"as shipped|"
	"ProtectSystem=strict|ProtectSystem=no"
	"ReadOnlyPaths= (kernel interfaces)|ReadOnlyPaths="
	"PrivateTmp=yes|PrivateTmp=no"
	"PrivateMounts=yes|PrivateMounts=no"
	"ProtectHome=yes|ProtectHome=no"
	"ProtectKernelModules=yes|ProtectKernelModules=no"
	"ProtectKernelLogs=yes|ProtectKernelLogs=no"
	"ProtectControlGroups=yes|ProtectControlGroups=no"
	"ProtectClock=yes|ProtectClock=no"
	"ProtectHostname=yes|ProtectHostname=no"
	"ProtectProc=invisible|ProtectProc=default"
	"DevicePolicy=closed + DeviceAllow=|DevicePolicy=auto\nDeviceAllow="
	"SystemCallFilter=|SystemCallFilter="
	"RestrictNamespaces=yes|RestrictNamespaces=no"
	"MemoryDenyWriteExecute=yes|MemoryDenyWriteExecute=no"
	"IPAddressDeny=any|IPAddressDeny="
	"every sandboxing directive above|ProtectSystem=no\nReadOnlyPaths=\nPrivateTmp=no\nPrivateMounts=no\nProtectHome=no\nProtectKernelModules=no\nProtectKernelLogs=no\nProtectControlGroups=no\nProtectClock=no\nProtectHostname=no\nProtectProc=default\nDevicePolicy=auto\nDeviceAllow=\nSystemCallFilter=\nRestrictNamespaces=no\nMemoryDenyWriteExecute=no\nIPAddressDeny="
)

# One start and stop of the unit as the drop-in leaves it: "WALL UNIT", ms:
# `systemctl start` until it returns (READY=1), and systemd's own account from
# forking the service's process to READY=1 (ExecMainStart -> ActiveEnter), which
# holds the sandbox's set-up and leaves out D-Bus and the job queue.
start_ms() {
	local t0 t1 a b
	t0=${EPOCHREALTIME/[.,]/}
	systemctl start iotuned.service || fail "iotuned did not start (variant: $1)"
	t1=${EPOCHREALTIME/[.,]/}
	a=$(systemctl show -P ExecMainStartTimestampMonotonic iotuned.service)
	b=$(systemctl show -P ActiveEnterTimestampMonotonic iotuned.service)
	echo "$(((10#$t1 - 10#$t0) / 1000)) $(((b - a) / 1000))"
	systemctl stop iotuned.service
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

use_variant() { # INDEX
	local v=${VARIANTS[$1]} lines
	lines=${v#*|}
	if [[ -n $lines ]]; then printf '[Service]\n%b\n' "$lines" >"$DROPIN"; else rm -f "$DROPIN"; fi
	systemctl daemon-reload
}

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	mkdir -p "$(dirname "$DROPIN")"
}

# Rounds go over every variant in turn (not one variant ROUNDS times), so that
# whatever drifts in the guest over the run touches every variant alike.
check_sandbox() {
	local i r n=${#VARIANTS[@]} name base_w='' base_u='' w u out
	local -a walls units scores
	for ((i = 0; i < n; i++)); do
		use_variant "$i"
		scores[i]=$(systemd-analyze security --no-pager iotuned.service 2>/dev/null |
			awk '/Overall exposure level/ {for (f = 1; f <= NF; f++) if ($f ~ /^[0-9]+\.[0-9]+$/) print $f}')
	done
	for ((r = 0; r < ROUNDS; r++)); do
		for ((i = 0; i < n; i++)); do
			use_variant "$i"
			# (a command substitution waits for the stop; a process substitution would not)
			out=$(start_ms "${VARIANTS[i]%%|*}")
			[[ $out =~ ^[0-9]+\ [0-9]+$ ]] || fail "variant ${VARIANTS[i]%%|*}: start and stop did not complete: $out"
			read -r w u <<<"$out"
			walls[i]+="$w "
			units[i]+="$u "
		done
	done
	for ((i = 0; i < n; i++)); do
		name=${VARIANTS[i]%%|*}
		# shellcheck disable=SC2086 # the lists are numbers
		w=$(median ${walls[i]})
		# shellcheck disable=SC2086
		u=$(median ${units[i]})
		[[ -n $base_w ]] || { base_w=$w; base_u=$u; }
		printf 'RESULT off=%-36s start_ms=%5d (%+5d) unit_ms=%5d (%+5d) exposure=%s  [unit: %s]\n' "\"$name\"" \
			"$w" $((w - base_w)) "$u" $((u - base_u)) "${scores[i]:-?}" "${units[i]% }"
	done
	rm -f "$DROPIN"
	systemctl daemon-reload
}
