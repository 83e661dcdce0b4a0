# SPDX-License-Identifier: LGPL-2.1-or-later
# managed-irqs: what the kernel lets a tuner do with NVMe interrupt vectors
# (FACTS.md, kernel/irq/proc.c, drivers/nvme/host/pci.c). The I/O queue vectors
# nvmeXqN (N>0) are kernel-managed: writing their affinity fails (EIO on 6.1,
# EPERM and a 0444 file on 6.12). The admin vector nvmeXq0 is not managed and
# takes a write. A managed vector's affinity is its blk-mq queue's cpu_list.
# nvme.poll_queues=1 adds a polled queue, which has a hardware context but no
# interrupt vector at all.

VM_DEVICES=("nvme nv0")
VM_CMDLINE="nvme.poll_queues=1"

scenario_setup() {
	assert_ok udevadm settle --timeout=60
}

# Vectors of the controller with serial nv0, by name: nvmeXq0 nvmeXq1 ...
vectors() {
	local c
	c=$(nvme_ctrl_by_serial nv0) || fail "no controller with serial nv0"
	awk -v p="^${c}q[0-9]+\$" '$NF ~ p { print $NF }' /proc/interrupts | sort -V
}

check_io_vectors_are_managed() {
	local v irq res n=0 want mode
	# kernel/irq/proc.c: on 6.1 write_irq_affinity refuses a managed vector
	# with EIO (irq_can_set_affinity_usr); 6.12 makes a managed vector's file
	# 0444 and the write, even as root, ends in EPERM (docs/KERNELS.md). The two
	# kernels of the test bed are told apart, nothing in between is claimed.
	if kernel_at_least 6 12; then want=EPERM; else want=EIO; fi
	for v in $(vectors); do
		[[ $v == *q0 ]] && continue
		irq=$(irq_by_name "$v") || fail "no IRQ named $v"
		n=$((n + 1))
		mode=$(stat -c %a "/proc/irq/$irq/smp_affinity_list")
		note "$v is IRQ $irq: smp_affinity_list $(<"/proc/irq/$irq/smp_affinity_list"), mode $mode"
		res=$(write_errno "/proc/irq/$irq/smp_affinity_list" 0)
		assert_eq "$want" "$res" "$v (IRQ $irq): a write of its smp_affinity_list on $(uname -r)"
		echo "fact: managed vector smp_affinity_list = mode $mode, write refused with $res"
	done
	((n > 0)) || fail "no I/O queue vectors (nvmeXqN, N>0) in /proc/interrupts"
	note "$n managed I/O vectors, each refused with $want"
}

check_admin_vector_takes_a_write() {
	local c irq cpu before
	c=$(nvme_ctrl_by_serial nv0)
	irq=$(irq_by_name "${c}q0") || fail "no IRQ named ${c}q0"
	# irqbalance, running in this guest, moves unmanaged vectors at each of its
	# rebalances (every 10 s): between a write here and its read-back it would
	# answer for itself, not for the kernel. It is stopped meanwhile.
	assert_ok systemctl stop irqbalance.service
	before=$(<"/proc/irq/$irq/smp_affinity_list")
	note "${c}q0 is IRQ $irq: smp_affinity_list $before"
	# Write each CPU in turn so at least one write is a real change.
	for cpu in 1 0; do
		assert_eq OK "$(write_errno "/proc/irq/$irq/smp_affinity_list" "$cpu")" "write $cpu to ${c}q0 smp_affinity_list"
		assert_file_eq "/proc/irq/$irq/smp_affinity_list" "$cpu"
	done
	assert_ok systemctl start irqbalance.service
}

check_managed_affinity_follows_blk_mq() {
	local c disk v n irq aff cpus nq nvec
	c=$(nvme_ctrl_by_serial nv0)
	disk=$(nvme_ctrl_disks "$c" 1)
	nq=$(ls -d "/sys/block/$disk/mq/"[0-9]* | wc -l)
	nvec=$(vectors | grep -vc 'q0$')
	note "$disk: $nq hardware contexts, $nvec I/O vectors, poll_queues $(</sys/module/nvme/parameters/poll_queues)"
	assert_file_eq /sys/module/nvme/parameters/poll_queues 1
	# One polled queue: a hardware context without a vector.
	assert_eq $((nvec + 1)) "$nq" "hardware contexts = I/O vectors + 1 poll queue"
	for v in $(vectors); do
		n=${v##*q}
		((n > 0)) || continue
		irq=$(irq_by_name "$v")
		aff=$(cpulist_expand "$(<"/proc/irq/$irq/smp_affinity_list")")
		# I/O queue qid N is hardware context N-1 (qid 0 is the admin queue).
		cpus=$(cpulist_expand "$(<"/sys/block/$disk/mq/$((n - 1))/cpu_list")")
		assert_eq "$cpus" "$aff" "$v affinity vs $disk mq/$((n - 1))/cpu_list"
	done
}
