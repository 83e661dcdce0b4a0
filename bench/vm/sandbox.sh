# SPDX-License-Identifier: LGPL-2.1-or-later
# Benchmark (not a test): what each sandboxing directive of iotuned.service costs
# at start, and what it buys in systemd-analyze's exposure score. For each
# directive (or group that only works together) a runtime drop-in turns it off,
# the service is started and stopped ROUNDS times, and the median time from
# `systemctl start` to READY=1 is printed beside the unit's exposure score, and
# beside the same for the unit as shipped and for no sandbox at all. Run it with
# bench/vm-bench sandbox. Under TCG, namespace and mount set-up is slow: read the
# differences within one run.

VM_DEVICES=("nvme nv0" "nvme nv1" "nvme nv2" "nvme nv3")
VM_STALL=900
VM_TIMEOUT=3600

ROUNDS=5
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

start_ms() {
	local t0 t1
	t0=${EPOCHREALTIME/[.,]/}
	systemctl start iotuned.service || fail "iotuned did not start (variant: $1)"
	t1=${EPOCHREALTIME/[.,]/}
	echo $(((10#$t1 - 10#$t0) / 1000))
	systemctl stop iotuned.service
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	mkdir -p "$(dirname "$DROPIN")"
}

check_sandbox() {
	local v name lines i t score base=''
	for v in "${VARIANTS[@]}"; do
		name=${v%%|*}
		lines=${v#*|}
		if [[ -n $lines ]]; then printf '[Service]\n%b\n' "$lines" >"$DROPIN"; else rm -f "$DROPIN"; fi
		systemctl daemon-reload
		local -a ts=()
		for ((i = 0; i < ROUNDS; i++)); do ts+=("$(start_ms "$name")"); done
		t=$(median "${ts[@]}")
		score=$(systemd-analyze security --no-pager iotuned.service 2>/dev/null | awk '/Overall exposure level/ {print $(NF-1)}')
		[[ -n $base ]] || base=$t
		printf 'RESULT off=%-36s start_ms=%5d (%+5d vs shipped) exposure=%s  [%s]\n' "\"$name\"" "$t" $((t - base)) "${score:-?}" "${ts[*]}"
	done
	rm -f "$DROPIN"
	systemctl daemon-reload
}
