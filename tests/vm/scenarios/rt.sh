# SPDX-License-Identifier: LGPL-2.1-or-later
# rt: iotuned.service on a PREEMPT_RT kernel (run-scenario --kernel 6.12-rt).
# There every interrupt handler runs in a kernel thread, irq/N-NAME, and the
# thread's CPU affinity follows the vector's: when the affinity of IRQ N
# changes, the kernel flags its thread, and the thread moves itself at its next
# wakeup (kernel/irq/manage.c: irq_set_thread_affinity, irq_thread_check_affinity).
# So iotuned places vectors as on any kernel and never the threads (a taskset
# on an irq thread is undone by the kernel at the next affinity change). The
# checks: the kernel is RT and its handlers are threaded; the daemon starts and
# tunes the NVMe and SATA disks; the AHCI vector, moved to CPU 1 before the
# start, is placed on CPU 0 and its thread follows at the next interrupt; the
# I/O vectors' threads run where their managed vectors do; a drift of a queue
# knob and a hand move of the vector are put back; stop restores and exits 0.

VM_DEVICES=(
	"nvme nv0"
	"sata sata0"
)

BOOT=/run/iotvm-boot
DROPIN_DIR=/etc/iotuned/iotuned.yaml.d
INTERVAL_MS=1000
KNOBS=(scheduler nr_requests rq_affinity nomerges read_ahead_kb wbt_lat_usec)

knob() { # DISK KNOB
	if [[ $2 == scheduler ]]; then sched_of "$1"; else cat "/sys/block/$1/queue/$2"; fi
}
ijournal() { journalctl -b -u iotuned.service --no-pager "$@"; }
aff() { cat "/proc/irq/$1/smp_affinity_list"; }
eff() { cat "/proc/irq/$1/effective_affinity_list"; }
ahci_irq() { awk '$NF ~ /^ahci\[/ { sub(":", "", $1); print $1; exit }' /proc/interrupts; }

# The PID of IRQ N's handler thread (comm "irq/N-NAME", cut at 15 characters).
irq_thread() { # IRQ
	ps -eo pid=,comm= | awk -v p="irq/$1-" 'index($2, p) == 1 { print $1; exit }'
}
# The CPUs a thread may run on, as a list ("0", "0-1").
thread_cpus() { # PID
	taskset -pc "$1" | sed -E 's/.*: *//'
}
# An interrupt from the disk: a direct read its driver completes.
io_on() { # DISK
	dd if="/dev/$1" of=/dev/null bs=4k count=8 iflag=direct status=none
}

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	command -v iotuned >/dev/null || fail "iotuned is not installed in the guest"
	local d k irq
	mkdir -p "$BOOT" "$DROPIN_DIR"
	for d in nvme0n1 sda; do
		for k in "${KNOBS[@]}"; do knob "$d" "$k" >"$BOOT/$d.$k"; done
	done
	printf 'reassert:\n  interval: %sms\n' "$INTERVAL_MS" >"$DROPIN_DIR/00-vmtest.yaml"
	# The AHCI vector starts away from where iotuned puts it (CPU 0), so that
	# its thread has to move.
	irq=$(ahci_irq) || fail "no AHCI vector in /proc/interrupts"
	echo 1 >"/proc/irq/$irq/smp_affinity_list"
	io_on sda
	note "AHCI IRQ $irq at CPU $(aff "$irq") before iotuned; its thread $(irq_thread "$irq") may run on $(thread_cpus "$(irq_thread "$irq")")"
	assert_ok systemctl daemon-reload
}

check_kernel_is_preempt_rt() {
	assert_file_eq /sys/kernel/realtime 1
	assert_match 'PREEMPT_RT' "$(uname -v)" "uname -v"
	local irq pid
	irq=$(ahci_irq)
	pid=$(irq_thread "$irq")
	[[ -n $pid ]] || fail "no irq/$irq-* thread: the AHCI handler is not threaded"
	note "ok: IRQ $irq is handled by thread $pid ($(ps -o comm= -p "$pid"), $(ps -o cls=,rtprio= -p "$pid"))"
}

check_start_tunes_nvme_and_sata() {
	assert_ok systemctl start iotuned.service
	assert_eq active "$(systemctl is-active iotuned.service)" "iotuned"
	note "STATUS=$(systemctl show -P StatusText iotuned.service)"
	assert_match '^2 devices: latency 1, throughput 1; ' "$(systemctl show -P StatusText iotuned.service)" "STATUS"
	assert_sched nvme0n1 none
	assert_file_eq /sys/block/nvme0n1/queue/rq_affinity 2
	assert_file_eq /sys/block/sda/queue/nr_requests 1024
	assert_ok iotunectl verify
}

# The vector is placed by iotuned; the thread moves at the next interrupt.
check_ahci_thread_follows_vector() {
	local irq pid
	irq=$(ahci_irq)
	pid=$(irq_thread "$irq")
	wait_for "[[ \$(aff $irq) == 0 ]]" 10 'ijournal -n 20'
	note "ok: AHCI IRQ $irq placed on CPU $(aff "$irq") (effective $(eff "$irq"))"
	wait_for "io_on sda && [[ \$(thread_cpus $pid) == 0 ]]" 10 "taskset -pc $pid; cat /proc/irq/$irq/effective_affinity_list"
	note "ok: its thread $pid runs on CPU $(thread_cpus "$pid") after an interrupt"
}

# Managed vectors keep the kernel's spread; each thread runs where its vector does.
check_io_vector_threads_follow_managed_affinity() {
	local c irq pid n=0
	c=$(nvme_ctrl_by_serial nv0) || fail "no controller nv0"
	io_on nvme0n1
	for irq in $(awk -v p="^${c}q[1-9][0-9]*\$" '$NF ~ p { sub(":", "", $1); print $1 }' /proc/interrupts); do
		pid=$(irq_thread "$irq")
		[[ -n $pid ]] || fail "IRQ $irq of $c has no handler thread"
		wait_for "io_on nvme0n1 && [[ \$(cpulist_expand \$(thread_cpus $pid)) == \$(cpulist_expand \$(eff $irq)) ]]" 10 \
			"taskset -pc $pid; cat /proc/irq/$irq/effective_affinity_list"
		note "ok: IRQ $irq (managed, effective $(eff "$irq")): thread $pid on $(thread_cpus "$pid")"
		n=$((n + 1))
	done
	((n >= 1)) || fail "$c has no I/O vectors"
}

# Drift of a queue knob and of the vector: the event is asserted, and the final
# state; never the value written here, which the daemon exists to undo.
check_drift_restored() {
	local n0 irq pid m0
	n0=$(ijournal DEVICE=nvme0n1 KNOB=scheduler -o cat | grep -c 'drifted to mq-deadline' || true)
	echo mq-deadline >/sys/block/nvme0n1/queue/scheduler
	wait_for "(( \$(ijournal DEVICE=nvme0n1 KNOB=scheduler -o cat | grep -c 'drifted to mq-deadline' || true) > n0 ))" 10 'ijournal -n 20'
	wait_for '[[ $(sched_of nvme0n1) == none ]]' 5 'ijournal -n 20'
	note "ok: nvme0n1 scheduler drift logged and put back"
	irq=$(ahci_irq)
	pid=$(irq_thread "$irq")
	m0=$(ijournal KNOB=irq_affinity -o cat | grep -c 'drifted to 1 (desired 0)' || true)
	echo 1 >"/proc/irq/$irq/smp_affinity_list"
	wait_for "(( \$(ijournal KNOB=irq_affinity -o cat | grep -c 'drifted to 1 (desired 0)' || true) > m0 ))" 10 'ijournal -n 20'
	wait_for "[[ \$(aff $irq) == 0 ]]" 5 'ijournal -n 20'
	wait_for "io_on sda && [[ \$(thread_cpus $pid) == 0 ]]" 10 "taskset -pc $pid"
	note "ok: AHCI vector moved by hand is put back, and its thread with it"
	assert_ok iotunectl verify
}

check_stop_restores_cleanly() {
	local d k
	assert_ok systemctl stop iotuned.service
	assert_eq success "$(systemctl show -P Result iotuned.service)" "iotuned.service Result"
	assert_eq 0 "$(systemctl show -P ExecMainStatus iotuned.service)" "iotuned exit status"
	for d in nvme0n1 sda; do
		for k in "${KNOBS[@]}"; do
			assert_eq "$(<"$BOOT/$d.$k")" "$(knob "$d" "$k")" "$d $k (boot value)"
		done
	done
	assert_eq "" "$(ijournal -p err -o cat)" "iotuned's error-level journal entries"
}
