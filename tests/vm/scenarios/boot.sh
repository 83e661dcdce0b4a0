# SPDX-License-Identifier: LGPL-2.1-or-later
# boot: the test bed itself works. The real kernel, systemd, udev and irqbalance
# come up on every kind of device the other scenarios use, and the block layer
# shows what iotuned relies on (schedulers, native multipath hidden paths).
# check_kernel_facts prints, as "fact: WHAT = VALUE" lines, what this kernel
# does with each queue knob iotuned writes, and asserts what iotuned's code
# depends on; docs/KERNELS.md is made from these lines on each kernel.

# --- machine (read by run-scenario on the host) -------------------------------------
VM_DEVICES=(
	"nvme nv0"              # plain controller, one namespace
	"nvme nv1 ns=2"         # one controller, two namespaces
	"subsys mp0 ctrls=2"    # two controllers sharing a namespace: native multipath
	"sata sata0"            # q35's AHCI -> sda
	"virtio vd0"            # virtio-blk-pci -> vda
	"nullb 2"               # null_blk, 2 devices
)
# Units allowed to be failed at boot (none today); anything else failed is a FAIL.
VM_EXPECTED_FAILED=()

# --- guest body ------------------------------------------------------------------------
scenario_setup() {
	# Coldplug has been triggered by the time the test unit starts, but udev
	# may still be working through it.
	assert_ok udevadm settle --timeout=60
}

check_system_running() {
	local state failed u
	state=$(systemctl is-system-running --wait 2>&1) || true
	failed=$(systemctl list-units --failed --plain --no-legend | awk '{print $1}')
	note "system state: $state; failed units: ${failed:-none}"
	if [[ $state == degraded ]]; then
		for u in $failed; do
			[[ " ${VM_EXPECTED_FAILED[*]} " == *" $u "* ]] ||
				fail "unexpected failed unit $u: $(systemctl status --no-pager -n 5 "$u" 2>&1 | tr '\n' ' ')"
		done
		note "ok: only expected units failed"
	else
		assert_eq running "$state" "systemctl is-system-running"
	fi
}

check_services() {
	assert_eq active "$(systemctl is-active systemd-udevd.service)" "systemd-udevd"
	assert_eq active "$(systemctl is-active irqbalance.service)" "irqbalance"
	assert_eq 1 "$(pgrep -c -x irqbalance)" "irqbalance processes"
}

check_nvme_disks() {
	local c0 c1 d nv0
	# Controllers probe asynchronously: nvme0 is whichever came first (a 6.12
	# boot gave that name to the multipath subsystem's), so disks are found by
	# serial, never by number.
	nv0=$(disk_by_serial nv0) || fail "no disk with serial nv0"
	assert_exists "/sys/block/$nv0/queue/scheduler"
	c0=$(nvme_ctrl_by_serial nv0) || fail "no controller with serial nv0"
	c1=$(nvme_ctrl_by_serial nv1) || fail "no controller with serial nv1"
	assert_eq 1 "$(nvme_ctrl_disks "$c0" | wc -l)" "$c0 (nv0) namespaces"
	assert_eq 2 "$(nvme_ctrl_disks "$c1" | wc -l)" "$c1 (nv1) namespaces"
	for d in $(nvme_ctrl_disks "$c0") $(nvme_ctrl_disks "$c1"); do
		assert_match '^nvme[0-9]+n[0-9]+$' "$d" "disk name (no multipath for single controllers)"
		assert_sched "$d" none
		assert_exists "/sys/block/$d/mq/0/nr_tags"
		note "$d: nr_requests $(<"/sys/block/$d/queue/nr_requests"), nr_tags $(<"/sys/block/$d/mq/0/nr_tags"), hw queues $(ls "/sys/block/$d/mq" | wc -l)"
	done
}

check_multipath() {
	assert_file_eq /sys/module/nvme_core/parameters/multipath Y
	local ctrls c path head nhead=0
	ctrls=$(nvme_ctrls_by_serial mp0) || fail "no controllers with serial mp0"
	assert_eq 2 "$(echo "$ctrls" | wc -l)" "controllers in subsystem mp0"
	for c in $ctrls; do
		assert_match 'mp0$' "$(<"/sys/class/nvme/$c/subsysnqn")" "$c subsysnqn"
		path=$(nvme_ctrl_disks "$c" 1)
		assert_match '^nvme[0-9]+c[0-9]+n1$' "$path" "$c path disk"
		assert_file_eq "/sys/block/$path/hidden" 1
		assert_not_exists "/dev/$path" "/dev/$path (hidden disks get no device node)"
		assert_match '^\[[a-z-]+\]' "$(<"/sys/block/$path/queue/scheduler")" "$path scheduler (bracketed: tunable)"
		assert_exists "/sys/block/$path/mq"
	done
	# The head disk lives under the subsystem, not under a controller.
	for head in /sys/class/nvme-subsystem/*/nvme*n*; do
		[[ $(<"${head%/*}/subsysnqn") == *mp0 ]] || continue
		head=${head##*/}
		nhead=$((nhead + 1))
		note "head disk $head"
		assert_not_exists "/sys/block/$head/mq" "$head/mq (bio-based head disk)"
		# block/blk-sysfs.c: 6.12 shows the blk-mq attributes (scheduler,
		# nr_requests, rq_affinity, io_timeout) only on blk-mq queues
		# (blk_mq_queue_attr_visible); 6.1 shows scheduler "none" on every queue.
		if kernel_at_least 6 12; then
			assert_not_exists "/sys/block/$head/queue/scheduler" "$head/queue/scheduler (bio-based, 6.12)"
		else
			assert_file_eq "/sys/block/$head/queue/scheduler" none
		fi
		assert_exists "/dev/$head"
	done
	assert_eq 1 "$nhead" "head disks of subsystem mp0"
}

check_sata_virtio_nullb() {
	local sd vd
	sd=$(disk_by_serial sata0) || fail "no disk with serial sata0"
	vd=$(disk_by_serial vd0) || fail "no disk with serial vd0"
	assert_eq sda "$sd" "SATA disk"
	assert_eq vda "$vd" "virtio disk"
	# Facts about these emulated disks that tuning rules depend on.
	note "sda: rotational $(<"/sys/block/sda/queue/rotational"), scheduler $(sched_of sda)"
	note "vda: rotational $(<"/sys/block/vda/queue/rotational"), scheduler $(sched_of vda)"
	assert_sched sda mq-deadline
	assert_exists /sys/block/nullb0/queue/scheduler
	assert_exists /sys/block/nullb1/queue/scheduler
	assert_not_exists /sys/block/nullb2
}

# --- what this kernel does with the knobs (docs/KERNELS.md) ----------------------------
fact() { echo "fact: $1 = $2"; }

# read_ahead_kb after ATTR is changed (to another value, then back): since 6.11
# a change of a queue-limits attribute commits the limits, and
# block/blk-settings.c: blk_apply_bdi_limits raises the read-ahead to at least
# 128 KiB (max3 of it, 2 * io_opt and VM_READAHEAD_PAGES); 6.1's stores write
# their field only. iotuned writes read_ahead_kb after those rows (knob.c).
readahead_after_change() { # DISK ATTR READ_AHEAD_KB
	local q=/sys/block/$1/queue old new ra
	old=$(<"$q/$2")
	case $2 in
	add_random | iostats | rotational) new=$((1 - old)) ;;
	max_sectors_kb | nr_requests) new=$((old / 2)) ;;
	nomerges) new=$((old == 0 ? 1 : 0)) ;;
	rq_affinity) new=$((old == 1 ? 2 : 1)) ;;
	*) new=$((old + 1000)) ;;
	esac
	echo "$3" >"$q/read_ahead_kb"
	echo "$new" >"$q/$2"
	ra=$(<"$q/read_ahead_kb")
	echo "$old" >"$q/$2"
	echo "$ra"
}

check_kernel_facts() {
	local d q a ra want limits=0 boot_ra nr attrs head nv0 v
	kernel_at_least 6 11 && limits=1
	fact kernel "$(uname -r)"
	for d in nullb0 sda; do
		q=/sys/block/$d/queue
		boot_ra=$(<"$q/read_ahead_kb")
		for a in add_random iostats max_sectors_kb rotational nomerges rq_affinity wbt_lat_usec nr_requests io_timeout; do
			[[ -e $q/$a ]] || { fact "queue/$a" "absent"; continue; }
			ra=$(readahead_after_change "$d" "$a" 16)
			fact "$d read_ahead_kb 16, then $a changed" "$ra"
			case $a in
			add_random | iostats | max_sectors_kb | rotational) ((limits)) && want=128 || want=16 ;;
			*) want=16 ;;
			esac
			assert_eq "$want" "$ra" "$d read_ahead_kb 16, then $a changed"
			# Raised, never lowered: a read-ahead above 128 KiB stays.
			ra=$(readahead_after_change "$d" "$a" 512)
			fact "$d read_ahead_kb 512, then $a changed" "$ra"
			assert_eq 512 "$ra" "$d read_ahead_kb 512, then $a changed"
		done
		# A SCSI rescan revalidates the disk (drivers/scsi/sd.c:
		# sd_revalidate_disk), which on 6.11+ commits its limits too: iotuned
		# meets the raised read-ahead as drift and puts it back.
		echo 16 >"$q/read_ahead_kb"
		if [[ -e /sys/block/$d/device/rescan ]]; then
			echo 1 >"/sys/block/$d/device/rescan"
			udevadm settle --timeout=30
			ra=$(<"$q/read_ahead_kb")
			fact "$d read_ahead_kb 16 after a SCSI rescan" "$ra"
			((limits)) && want=128 || want=16
			assert_eq "$want" "$ra" "$d read_ahead_kb 16 after a SCSI rescan"
		fi
		echo 16 >"$q/read_ahead_kb"
		cat "/sys/block/$d/device/queue_depth" >"/sys/block/$d/device/queue_depth" 2>/dev/null &&
			fact "$d read_ahead_kb 16 after a write of device/queue_depth" "$(<"$q/read_ahead_kb")"
		echo "$boot_ra" >"$q/read_ahead_kb"
	done
	d=nullb0 q=/sys/block/nullb0/queue
	echo "$boot_ra" >"$q/read_ahead_kb"

	# block/elevator.c: a scheduler switch sets nr_requests afresh
	# (blk_mq_init_sched); iotuned writes the scheduler first, then nr_requests.
	nr=$(<"$q/nr_requests")
	a=$(sched_of "$d")
	assert_eq none "$a" "$d scheduler (null_blk's default)"
	echo 32 >"$q/nr_requests"
	echo mq-deadline >"$q/scheduler"
	fact "nr_requests 32, then scheduler none -> mq-deadline" "$(<"$q/nr_requests")"
	assert_ne 32 "$(<"$q/nr_requests")" "$d nr_requests after a scheduler switch"
	echo none >"$q/scheduler"
	fact "nr_requests after mq-deadline -> none" "$(<"$q/nr_requests")"
	echo "$nr" >"$q/nr_requests"

	# max_sectors_kb 0: 6.12 takes it as "the driver's default"
	# (queue_max_sectors_store, block/blk-sysfs.c); 6.1 refuses it.
	a=$(<"$q/max_sectors_kb")
	ra=$(write_errno "$q/max_sectors_kb" 0)
	fact "max_sectors_kb write of 0" "$ra (reads $(<"$q/max_sectors_kb") after)"
	if kernel_at_least 6 12; then want=OK; else want=EINVAL; fi
	assert_eq "$want" "$ra" "a write of 0 to $d max_sectors_kb"
	echo "$a" >"$q/max_sectors_kb"

	# Writeback throttling: the default per kind of disk (block/blk-wbt.c:
	# 2 ms non-rotational, 75 ms rotational), and what a switch to bfq (which
	# calls wbt_disable_default, block/bfq-iosched.c) leaves in the file.
	nv0=$(disk_by_serial nv0) || fail "no disk with serial nv0"
	v=$(cat "/sys/block/$nv0/queue/wbt_lat_usec" /sys/block/{sda,vda,nullb0}/queue/wbt_lat_usec) || fail "cannot read a wbt_lat_usec"
	fact "wbt_lat_usec default (nvme, sda, vda, nullb0)" "$(tr '\n' ' ' <<<"$v")"
	modprobe bfq
	a=$(sched_of sda)
	echo bfq >/sys/block/sda/queue/scheduler
	fact "sda wbt_lat_usec under bfq" "$(</sys/block/sda/queue/wbt_lat_usec)"
	echo "$a" >/sys/block/sda/queue/scheduler
	fact "sda wbt_lat_usec back under $a" "$(</sys/block/sda/queue/wbt_lat_usec)"

	# The multipath head (bio-based): which queue files it has, and what a
	# scheduler write does there.
	for head in /sys/class/nvme-subsystem/*/nvme*n*; do
		head=${head##*/}
		[[ -e /sys/block/$head/mq ]] && continue
		fact "multipath head queue/scheduler" "$(cat "/sys/block/$head/queue/scheduler" 2>/dev/null || echo absent)"
		fact "multipath head queue/nr_requests" "$(cat "/sys/block/$head/queue/nr_requests" 2>/dev/null || echo absent)"
		fact "multipath head read_ahead_kb, wbt_lat_usec" "$(cat "/sys/block/$head/queue/read_ahead_kb") $(cat "/sys/block/$head/queue/wbt_lat_usec" 2>/dev/null || echo absent)"
		break
	done

	# The queue attributes of an NVMe disk, for the added/removed columns.
	attrs=$(find "/sys/block/$nv0/queue" -maxdepth 1 -type f -printf '%f\n' | sort | tr '\n' ' ')
	[[ -n $attrs ]] || fail "no queue attributes under /sys/block/$nv0/queue"
	fact "nvme0n1 queue attributes" "$attrs"
	fact "NVMe io_timeout (queue/io_timeout, ms)" "$(<"/sys/block/$nv0/queue/io_timeout")"
	fact "nvme_core multipath, io_timeout, default_ps_max_latency_us" "$(cat /sys/module/nvme_core/parameters/{multipath,io_timeout,default_ps_max_latency_us} | tr '\n' ' ')"
	fact "nvme poll_queues, write_queues" "$(cat /sys/module/nvme/parameters/{poll_queues,write_queues} | tr '\n' ' ')"
	fact "/proc/irq/N files" "$(ls "/proc/irq/$(irq_by_name "$(nvme_ctrl_by_serial nv0)q0")" | tr '\n' ' ')"
}
