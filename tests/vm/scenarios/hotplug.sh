# SPDX-License-Identifier: LGPL-2.1-or-later
# hotplug: an NVMe controller hot-added into an empty PCIe root port from inside
# the guest (QMP through the host relay) shows up as a udev "add" of its block
# device, and device_del takes it away again. This is the event iotuned reacts
# to; the times printed are TCG times (compare within one run only). The slot is
# driven by ACPI hotplug (acpiphp), QEMU 7.2's default on q35; native pciehp
# would need VM_QEMU_ARGS=(-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off).
# Then NVMe over TCP on loopback (check_fabrics_*, below): iotuned.service tunes
# multipath path disks connected after it started, lost and back, and two paths.

# The machine of daemon.sh and faults.sh, whose boot it shares
# ('daemon+faults+hotplug', after them: faults.sh leaves no iotuned running, no
# hot-added controller and the boot values in place). What it needs of it:
VM_DEVICES=(
	"nvme nv0"       # a cold-plugged controller, so the hot one is not nvme0
	"nvme nv1"
	"sata sata0"
	"virtio vd0"
	"rootport rp1"   # empty slot on pcie.0
	"spare hot1"     # its backing drive, attached by device_add
)

MON=/run/iotvm-udev-monitor.log

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	# The monitor must be listening before the device appears; it keeps running
	# across checks (the checks are subshells, it is not).
	udevadm monitor --udev --subsystem-match=block >"$MON" 2>&1 &
	echo $! >/run/iotvm-udev-monitor.pid
	wait_for "grep -q 'UDEV - the event' '$MON'" 10
}


check_hot_add() {
	assert_eq "" "$(disk_by_serial hot1 || true)" "disk of hot1 before device_add"
	step "device_add nvme hot1 into rp1"
	local t0 disk
	# t0 is taken once QEMU has answered: the QMP round trip itself (python
	# start-up under TCG, the relay) is not part of the hotplug.
	qmp '{"execute": "device_add", "arguments": {"driver": "nvme", "id": "hot1", "serial": "hot1", "drive": "hot1", "bus": "rp1"}}' >/dev/null ||
		fail "QMP device_add failed"
	t0=$(_iotvm_us)
	wait_for '[[ -n $(disk_by_serial hot1) && -e /sys/block/$(disk_by_serial hot1)/queue/scheduler ]]' 30 'ls /sys/class/nvme /sys/block; dmesg | tail -n 20'
	disk=$(disk_by_serial hot1)
	note "kernel: /sys/block/$disk $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_add returned"
	wait_for "grep -Eq '^UDEV .* add +/devices/.*/$disk \(block\)' '$MON'" 30 "cat '$MON'"
	note "udev: add event for $disk processed $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_add returned"
	grep -E "/$disk \(block\)" "$MON" | sed 's/^/    | /'
	assert_exists "/dev/$disk"
	assert_sched "$disk" none
	assert_eq "$(nvme_ctrl_by_serial hot1)" "$(nvme_ctrl_of_disk "$disk")" "controller of $disk"
	echo "$disk" >/run/iotvm-hot-disk
}

check_hot_remove() {
	local disk t0 ctrl
	disk=$(cat /run/iotvm-hot-disk 2>/dev/null) || fail "no hot-added disk (check_hot_add failed)"
	ctrl=$(nvme_ctrl_by_serial hot1) || fail "no controller hot1"
	step "device_del hot1 ($ctrl, $disk)"
	qmp '{"execute": "device_del", "arguments": {"id": "hot1"}}' >/dev/null || fail "QMP device_del failed"
	t0=$(_iotvm_us)
	# QEMU 7.2's q35 does hotplug through ACPI (the guest logs "_OSC: platform
	# does not support [PCIeHotplug]" and acpiphp handles the slot), so there
	# is no 5 s attention-button wait as with native pciehp: removal is quick.
	wait_for "[[ ! -e /sys/block/$disk ]]" 30 'dmesg | tail -n 20'
	note "kernel: $disk gone $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_del returned"
	wait_for "grep -Eq '^UDEV .* remove +/devices/.*/$disk \(block\)' '$MON'" 30 "cat '$MON'"
	note "udev: remove event for $disk processed $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_del returned"
	wait_for "[[ ! -e /sys/class/nvme/$ctrl ]]" 10
	assert_not_exists "/dev/$disk"
	# QEMU frees the id once the guest has released the slot; until then a
	# second device_add with the same id would fail.
	wait_for "! qmp '{\"execute\": \"qom-list\", \"arguments\": {\"path\": \"/machine/peripheral\"}}' | grep_q '\"hot1\"'" 30
	note "QEMU released hot1 $(( ($(_iotvm_us) - t0) / 1000 )) ms after device_del returned"
}

# The slot is reusable: a second add works the same way.
check_hot_readd() {
	local t0
	qmp '{"execute": "device_add", "arguments": {"driver": "nvme", "id": "hot1", "serial": "hot1", "drive": "hot1", "bus": "rp1"}}' >/dev/null ||
		fail "second QMP device_add failed"
	t0=$(_iotvm_us)
	wait_for '[[ -n $(disk_by_serial hot1) && -e /dev/$(disk_by_serial hot1) ]]' 30 'dmesg | tail -n 20'
	note "/dev/$(disk_by_serial hot1) back $(( ($(_iotvm_us) - t0) / 1000 )) ms after the second device_add returned"
	assert_sched "$(disk_by_serial hot1)" none
}

# --- NVMe over TCP: multipath paths connected after iotuned started ------------------
# An nvmet-tcp target inside the guest (configfs, a null_blk namespace, two ports
# on 127.0.0.1) and the real nvme-tcp host with native multipath: the tunable
# queues are the hidden path disks nvmeXcYnZ, which send no uevent (block/genhd.c);
# iotuned hears the controllers and the head and lists the paths itself.
FAB_NQN=nqn.2026-12.org.iotuned:fabrics
FAB_HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:5d2c3a8e-5b4e-4d7a-9a51-1f0d4c6e7a10
FAB_CFS=/sys/kernel/config/nvmet

fab_journal() { journalctl -b -u iotuned.service --no-pager "$@"; }
# iotunectl status, whatever its exit status (1 or 2 for some other device), for grep
fab_status() { iotunectl status || true; }
fab_status_json() { iotunectl status --json || true; }
fab_ctrls() { # the nvme-tcp controllers, by name
	local c
	for c in /sys/class/nvme/nvme*; do
		[[ $(cat "$c/transport" 2>/dev/null) == tcp ]] && echo "${c##*/}"
	done
	return 0
}
fab_ctrl_on_port() { # SVCID -> the controller connected to 127.0.0.1:SVCID
	local c
	for c in $(fab_ctrls); do
		grep -q "trsvcid=$1" "/sys/class/nvme/$c/address" && echo "$c"
	done
	return 0
}
fab_path_of() { # CTRL -> its path disk (nvmeXcYn1)
	local p
	for p in /sys/class/nvme/"$1"/nvme*c*n1; do [[ -e $p ]] && echo "${p##*/}"; done
	return 0
}
fab_tuned() { # PATH: at the latency profile's values (rq_affinity 2, nomerges 2)
	[[ $(cat "/sys/block/$1/queue/rq_affinity") == 2 && $(cat "/sys/block/$1/queue/nomerges") == 2 ]]
}
fab_tuned_count() { # PATH -> how many "PATH tuned with profile" entries
	fab_journal DEVICE="$1" | grep -c "$1 tuned with profile latency" || true
}
fab_connect() { # SVCID
	nvme connect -t tcp -a 127.0.0.1 -s "$1" -n "$FAB_NQN" --hostnqn="$FAB_HOSTNQN" \
		--reconnect-delay=1 --ctrl-loss-tmo=60 >/dev/null
}

check_fabrics_target_and_daemon() {
	local port
	[[ -d /lib/modules/$(uname -r)/kernel/drivers/nvme/target ]] || fail "no nvmet modules in the guest kernel"
	assert_ok modprobe null_blk nr_devices=1
	assert_ok modprobe nvmet
	assert_ok modprobe nvmet-tcp
	assert_ok modprobe nvme-tcp
	assert_file_eq /sys/module/nvme_core/parameters/multipath Y
	ip link set lo up
	mountpoint -q /sys/kernel/config || assert_ok mount -t configfs none /sys/kernel/config
	mkdir "$FAB_CFS/subsystems/$FAB_NQN"
	echo 1 >"$FAB_CFS/subsystems/$FAB_NQN/attr_allow_any_host"
	mkdir "$FAB_CFS/subsystems/$FAB_NQN/namespaces/1"
	echo /dev/nullb0 >"$FAB_CFS/subsystems/$FAB_NQN/namespaces/1/device_path"
	echo 1 >"$FAB_CFS/subsystems/$FAB_NQN/namespaces/1/enable"
	for port in 1 2; do
		mkdir "$FAB_CFS/ports/$port"
		echo tcp >"$FAB_CFS/ports/$port/addr_trtype"
		echo ipv4 >"$FAB_CFS/ports/$port/addr_adrfam"
		echo 127.0.0.1 >"$FAB_CFS/ports/$port/addr_traddr"
		echo $((4419 + port)) >"$FAB_CFS/ports/$port/addr_trsvcid"
		ln -s "$FAB_CFS/subsystems/$FAB_NQN" "$FAB_CFS/ports/$port/subsystems/$FAB_NQN"
	done
	assert_eq "" "$(fab_ctrls)" "nvme-tcp controllers before connect"
	assert_ok systemctl start iotuned.service
	assert_eq active "$(systemctl is-active iotuned.service)" "iotuned"
}

# The first path of a new subsystem: tuned within one second (TCG-scaled) of its
# disk appearing, although it sent no uevent.
check_fabrics_connect_after_start() {
	local t0 ctrl path appeared tuned_ms
	t0=$(_iotvm_us)
	fab_connect 4420 || fail "nvme connect to port 4420 failed"
	ctrl=$(fab_ctrl_on_port 4420)
	[[ -n $ctrl ]] || fail "no controller for 127.0.0.1:4420: $(ls /sys/class/nvme)"
	wait_for "[[ -n \$(fab_path_of $ctrl) ]]" 20 "ls /sys/class/nvme/$ctrl /sys/block"
	path=$(fab_path_of "$ctrl")
	appeared=$(_iotvm_us)
	note "kernel: $ctrl ($(cat /sys/class/nvme/"$ctrl"/state)), path $path $(( (appeared - t0) / 1000 )) ms after connect started"
	wait_for "fab_tuned $path" 10 "fab_journal -n 30; grep . /sys/block/$path/queue/{rq_affinity,nomerges}"
	tuned_ms=$(( ($(_iotvm_us) - appeared) / 1000 ))
	note "tuned: $path $tuned_ms ms after its disk appeared (limit $(slow_ms 1000) ms)"
	((tuned_ms <= $(slow_ms 1000))) || fail "$path tuned after $tuned_ms ms, more than $(slow_ms 1000) ms"
	wait_for "fab_journal DEVICE=$path | grep_q '$path tuned with profile latency'" 10 'fab_journal -n 30'
	# The kernel fact this rests on: the head is announced, the hidden path never
	# (block/genhd.c); the block monitor of scenario_setup has run all along.
	wait_for "grep -Eq '^UDEV .* add +/devices/.*/nvme-subsys[0-9]+/nvme[0-9]+n1 \(block\)' '$MON'" 10 "cat '$MON'"
	if grep -q "/$path (block)" "$MON"; then fail "a uevent for the hidden path $path: $(grep "/$path " "$MON")"; fi
	note "udev: the head's add event seen, none for $path"
	wait_for "fab_status | grep_q -E '^  nvme[0-9]+n1 +$path +via $ctrl +live'" 10 'iotunectl status'
	fab_status | sed -n '/NVMe multipath paths/,$p' | sed 's/^/    | /'
	echo "$ctrl $path" >/run/iotvm-fab-first
}

# A second controller to the same subsystem (port 4421): two paths, both tuned;
# the head already exists, so only the new controller's events announce it.
check_fabrics_second_path() {
	local ctrl path first
	first=$(cut -d' ' -f2 /run/iotvm-fab-first 2>/dev/null) || fail "no first path (check_fabrics_connect_after_start failed)"
	fab_connect 4421 || fail "nvme connect to port 4421 failed"
	ctrl=$(fab_ctrl_on_port 4421)
	[[ -n $ctrl ]] || fail "no controller for 127.0.0.1:4421"
	wait_for "[[ -n \$(fab_path_of $ctrl) ]]" 20 "ls /sys/class/nvme/$ctrl"
	path=$(fab_path_of "$ctrl")
	assert_eq "${first%c*}" "${path%c*}" "subsystem of both paths"
	wait_for "fab_tuned $path" 10 "fab_journal -n 30"
	note "tuned: second path $path ${WAITED}s after its disk appeared"
	fab_tuned "$first" || fail "first path $first no longer tuned"
	wait_for "[[ \$(fab_status | grep -Ec ' via nvme[0-9]+ +live') == 2 ]]" 10 'iotunectl status'
	echo "$ctrl $path" >/run/iotvm-fab-second
}

# The target drops port 4421's controllers: the host keeps the path and
# reconnects every second; the path shows as lost (not failed), and once the
# port serves the subsystem again, the reconnect is heard and the path re-tuned.
check_fabrics_path_lost_and_back() {
	local ctrl path n0 ex=0
	read -r ctrl path </run/iotvm-fab-second || fail "no second path (check_fabrics_second_path failed)"
	n0=$(fab_tuned_count "$path")
	rm "$FAB_CFS/ports/2/subsystems/$FAB_NQN"
	wait_for "[[ \$(cat /sys/class/nvme/$ctrl/state) != live ]]" 20 "cat /sys/class/nvme/$ctrl/state; dmesg | tail"
	note "$ctrl: $(cat /sys/class/nvme/"$ctrl"/state) ${WAITED}s after the port dropped the subsystem"
	wait_for "fab_journal | grep_q '$path: multipath path lost for now'" 15 'fab_journal -n 20'
	wait_for "fab_status | grep_q -E ' $path +via $ctrl +(connecting|resetting).*not a failure'" 15 'iotunectl status'
	iotunectl status >/dev/null || ex=$?
	assert_eq 0 "$ex" "iotunectl status exit code while a path is lost"
	ln -s "$FAB_CFS/subsystems/$FAB_NQN" "$FAB_CFS/ports/2/subsystems/$FAB_NQN"
	wait_for "[[ \$(cat /sys/class/nvme/$ctrl/state) == live ]]" 30 "cat /sys/class/nvme/$ctrl/state; dmesg | tail"
	note "$ctrl live again ${WAITED}s after the port serves the subsystem again"
	wait_for "(( \$(fab_tuned_count $path) > $n0 ))" 10 "fab_journal -n 30"
	fab_tuned "$path" || fail "$path not at the profile's values after reconnecting"
	wait_for "fab_status | grep_q -E ' $path +via $ctrl +live'" 10 'iotunectl status'
}

# nvme disconnect deletes one controller (its path disk goes, silently): reported
# lost, not failed, the other path stays tuned; connecting it again is tuned again.
check_fabrics_disconnect_reconnect() {
	local ctrl path first ctrl2 path2
	read -r ctrl path </run/iotvm-fab-second || fail "no second path"
	first=$(cut -d' ' -f2 /run/iotvm-fab-first)
	assert_ok nvme disconnect -d "$ctrl"
	wait_for "[[ ! -e /sys/block/$path ]]" 20
	wait_for "fab_journal DEVICE=$path | grep_q '$path: multipath path lost'" 10 'fab_journal -n 20'
	wait_for "! fab_status_json | grep_q '\"device\": \"$path\"'" 10 'iotunectl status'
	fab_journal -p warning DEVICE="$path" | grep_q "$path" && fail "a warning or worse about the lost path $path"
	assert_not_exists "/run/iotuned/originals/$path.json"
	fab_tuned "$first" || fail "the other path $first is no longer tuned"
	fab_connect 4421 || fail "nvme connect to port 4421 (again) failed"
	ctrl2=$(fab_ctrl_on_port 4421)
	wait_for "[[ -n \$(fab_path_of $ctrl2) ]]" 20
	path2=$(fab_path_of "$ctrl2")
	wait_for "fab_tuned $path2" 10 "fab_journal -n 30"
	note "reconnected as $ctrl2, path $path2 tuned ${WAITED}s after its disk appeared"
	wait_for "[[ \$(fab_status | grep -Ec ' via nvme[0-9]+ +live') == 2 ]]" 10 'iotunectl status'
	fab_status | sed -n '/NVMe multipath paths/,$p' | sed 's/^/    | /'
	assert_ok nvme disconnect -n "$FAB_NQN"
	assert_ok systemctl stop iotuned.service
}
