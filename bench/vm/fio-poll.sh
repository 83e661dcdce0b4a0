# SPDX-License-Identifier: LGPL-2.1-or-later
# Benchmark (not a test): what a poll queue buys. QEMU's NVMe controller, the
# nvme driver without poll queues at boot; a profile with `poll_queues: 1` and
# `apply: rebind` makes iotunectl rebind the idle controller, which comes back
# with one. Then 4 KiB random reads at queue depth 1 through io_uring, O_DIRECT,
# interrupt-driven and polled (IORING_SETUP_IOPOLL, fio --hipri), alternating
# A/B rounds in one boot. It prints IOPS, p99 completion latency and interrupts
# per I/O for each round, and the median ratios polled/interrupt.
#
# Run it with bench/fio-poll. Under TCG an interrupt is expensive to emulate,
# so read the ratios as the software-path effect on this machine, not as what
# a real drive would show.

VM_DEVICES=("nvme nv0 size=256M")
VM_CMDLINE=""

ROUNDS=${BENCH_ROUNDS:-3}
RUNTIME=${BENCH_RUNTIME:-8}
CONF=/etc/iotuned

run_fio() { # DISK HIPRI -> "IOPS P99_USEC IOS"
	fio --name=bench --filename="/dev/$1" --rw=randread --bs=4k --ioengine=io_uring --hipri="$2" --direct=1 \
		--iodepth=1 --time_based --runtime="$RUNTIME" --output-format=json |
		"$IOTVM_PY" -c 'import json,sys
j = json.load(sys.stdin)["jobs"][0]["read"]
print("%d %d %d" % (j["iops"], j["clat_ns"]["percentile"]["99.000000"] / 1000, j["total_ios"]))'
}

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	command -v fio >/dev/null || fail "fio is not installed"
	mkdir -p "$CONF/profiles" "$CONF/iotuned.yaml.d"
	printf 'extends: latency\nnvme: { poll_queues: 1, apply: rebind }\n' >"$CONF/profiles/poll.yaml"
	printf 'rules:\n  - { match: { kernel: "nvme*" }, profile: poll }\n' >"$CONF/iotuned.yaml.d/90-bench.yaml"
	assert_ok systemctl stop irqbalance.service
	assert_ok iotunectl apply
	assert_eq 1 "$(cat "/sys/block/$(disk_by_serial nv0)/queue/io_poll")" "io_poll after the rebind"
}

check_bench() {
	local disk ctrl r mode hipri res iops p99 ios a b irq_per_io irq_iops=() irq_p99=() poll_iops=() poll_p99=()
	disk=$(disk_by_serial nv0)
	ctrl=$(nvme_ctrl_of_disk "$disk")
	note "$ROUNDS rounds x 2 modes x ${RUNTIME}s, fio 4k randread QD1, io_uring, O_DIRECT on $disk ($ctrl)"
	for ((r = 1; r <= ROUNDS; r++)); do
		for mode in interrupt polled; do
			[[ $mode == polled ]] && hipri=1 || hipri=0
			a=$(nvme_io_irqs "$ctrl")
			res=$(run_fio "$disk" "$hipri") || fail "fio failed"
			b=$(nvme_io_irqs "$ctrl")
			read -r iops p99 ios <<<"$res"
			irq_per_io=$("$IOTVM_PY" -c "print('%.2f' % (($b - $a) / max($ios, 1)))")
			printf 'RESULT round=%d mode=%-9s iops=%7d p99_usec=%6d irqs_per_io=%s\n' "$r" "$mode" "$iops" "$p99" "$irq_per_io"
			if [[ $mode == interrupt ]]; then irq_iops+=("$iops") irq_p99+=("$p99"); else poll_iops+=("$iops") poll_p99+=("$p99"); fi
		done
	done
	"$IOTVM_PY" - "${irq_iops[*]}" "${irq_p99[*]}" "${poll_iops[*]}" "${poll_p99[*]}" <<'PY'
import statistics, sys
ii, ip, pi, pp = ([int(x) for x in a.split()] for a in sys.argv[1:5])
m = statistics.median
print(f"SUMMARY median IOPS: interrupt {m(ii):.0f}, polled {m(pi):.0f}; ratio polled/interrupt {m(pi) / m(ii):.2f}")
print(f"SUMMARY median p99 usec: interrupt {m(ip):.0f}, polled {m(pp):.0f}; ratio interrupt/polled {m(ip) / max(m(pp), 1):.2f}")
PY
}
