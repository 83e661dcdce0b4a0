# SPDX-License-Identifier: LGPL-2.1-or-later
# Benchmark (not a test): 4 KiB random reads on a null_blk disk in the QEMU guest
# under iotuned's `mixed` and `latency` profiles, side by side in one boot,
# alternating A/B rounds so drift in the emulator affects both alike. It prints
# IOPS and p99 completion latency per round and the ratios latency/mixed.
#
# Run it with bench/fio-profiles (which boots the guest through tests/vm/run-scenario).
# null_blk does no I/O of its own, so this isolates the software path: scheduler,
# merging, completion placement; TCG inflates that path, so read the ratios, not
# the absolute numbers.

VM_DEVICES=()
VM_CMDLINE=""

ROUNDS=${BENCH_ROUNDS:-3}
RUNTIME=${BENCH_RUNTIME:-8}
DROPIN=/etc/iotuned/iotuned.yaml.d/90-bench.yaml

use_profile() { # PROFILE
	printf 'rules:\n  - name: bench\n    match: { kernel: nullb0 }\n    profile: %s\n' "$1" >"$DROPIN"
	iotunectl apply nullb0 >/dev/null || fail "iotunectl apply nullb0 ($1) failed"
	iotunectl verify nullb0 >/dev/null || fail "iotunectl verify nullb0 ($1) failed"
}

run_fio() { # -> "IOPS P99_USEC"
	fio --name=bench --filename=/dev/nullb0 --rw=randread --bs=4k --ioengine=libaio --direct=1 \
		--iodepth=32 --numjobs=2 --group_reporting --time_based --runtime="$RUNTIME" --output-format=json |
		"$IOTVM_PY" -c 'import json,sys
j = json.load(sys.stdin)["jobs"][0]["read"]
print("%d %d" % (j["iops"], j["clat_ns"]["percentile"]["99.000000"] / 1000))'
}

scenario_setup() {
	assert_ok modprobe null_blk nr_devices=1 submit_queues=2 queue_mode=2
	assert_ok udevadm settle --timeout=60
	mkdir -p "${DROPIN%/*}"
	command -v fio >/dev/null || fail "fio is not installed"
}

check_bench() {
	local r p res iops p99 mixed_iops=() mixed_p99=() lat_iops=() lat_p99=()
	note "$ROUNDS rounds x 2 profiles x ${RUNTIME}s, fio 4k randread QD32 x 2 jobs, libaio, O_DIRECT on nullb0"
	for ((r = 1; r <= ROUNDS; r++)); do
		for p in mixed latency; do
			use_profile "$p"
			res=$(run_fio) || fail "fio failed"
			read -r iops p99 <<<"$res"
			printf 'RESULT round=%d profile=%-8s scheduler=%-12s iops=%8d p99_usec=%6d\n' "$r" "$p" \
				"$(sched_of nullb0)" "$iops" "$p99"
			if [[ $p == mixed ]]; then mixed_iops+=("$iops") mixed_p99+=("$p99"); else lat_iops+=("$iops") lat_p99+=("$p99"); fi
		done
	done
	"$IOTVM_PY" - "${mixed_iops[*]}" "${mixed_p99[*]}" "${lat_iops[*]}" "${lat_p99[*]}" <<'PY'
import statistics, sys
mi, mp, li, lp = ([int(x) for x in a.split()] for a in sys.argv[1:5])
m = statistics.median
print(f"SUMMARY median IOPS: mixed {m(mi):.0f}, latency {m(li):.0f}; ratio latency/mixed {m(li) / m(mi):.2f}")
print(f"SUMMARY median p99 usec: mixed {m(mp):.0f}, latency {m(lp):.0f}; ratio mixed/latency {m(mp) / m(lp):.2f}")
PY
}
