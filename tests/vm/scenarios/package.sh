# SPDX-License-Identifier: LGPL-2.1-or-later
# package: the .deb as an administrator meets it. Run through tests/vm/package-test,
# which builds the package and passes it in (no --build-dir: nothing of iotuned
# is in the guest until dpkg installs it). Install enables and starts the
# service, verify passes, a drop-in plus `systemctl reload` takes effect, an
# upgrade with an invalid configuration keeps the old daemon running while a
# valid one restarts it, and purge restores the disks and leaves no files (also
# not the modprobe.d drop-in a poll_queues profile had the daemon write).

VM_DEVICES=(
	"nvme nv0"
	"sata sata0"
)

BOOT=/run/iotvm-boot
KNOBS=(scheduler nr_requests rq_affinity nomerges read_ahead_kb)

knob() { if [[ $2 == scheduler ]]; then sched_of "$1"; else cat "/sys/block/$1/queue/$2"; fi; }
deb() { ls /mnt/iotvm/files/iotuned_*.deb; }
main_pid() { systemctl show -P MainPID iotuned.service; }

scenario_setup() {
	assert_ok udevadm settle --timeout=60
	# The host root is a container image whose policy-rc.d forbids maintainer
	# scripts to start services (exit 101); this guest is a real machine.
	rm -f /usr/sbin/policy-rc.d
	# man-db's trigger rebuilds the index of every manual page on the host image
	# at each dpkg run: most of a dpkg -i under TCG (55-70 s seen), for an index
	# nothing here reads. Its own switch (debconf man-db/auto-update) is this
	# file; that the pages are installed is still checked below.
	rm -f /var/lib/man-db/auto-update
	assert_exists "$(deb)" "the package under test"
	[[ ! -e /usr/sbin/iotuned ]] || fail "iotuned is already in the guest before dpkg -i"
	local d k
	mkdir -p "$BOOT"
	for d in nvme0n1 sda; do
		for k in "${KNOBS[@]}"; do knob "$d" "$k" >"$BOOT/$d.$k"; done
	done
}

check_install_enables_and_starts() {
	assert_ok dpkg -i "$(deb)"
	assert_eq enabled "$(systemctl is-enabled iotuned.service)" "iotuned.service enabled"
	wait_for '[[ $(systemctl is-active iotuned.service) == active ]]' 30 'systemctl status --no-pager iotuned.service'
	assert_sched nvme0n1 none
	assert_file_eq /sys/block/sda/queue/nr_requests 1024
	assert_ok iotunectl verify
	assert_exists /usr/share/man/man8/iotuned.8.gz
	assert_exists /usr/share/bash-completion/completions/iotunectl
	assert_exists /etc/iotuned/iotuned.yaml.example
}

# The hardened unit still reaches what NVMe tuning needs: the controller's
# character device (DeviceAllow=char-nvme) and /etc/modprobe.d (ReadWritePaths=).
check_hardened_unit_reaches_nvme_and_modprobe_d() {
	local st=/run/iotvm-status.json
	iotunectl --json status >"$st" || fail "iotunectl --json status exited $?"
	iotvm_py - "$st" <<'PY' || fail "NVMe controller rows under the hardened unit"
import json, sys
d = [d for d in json.load(open(sys.argv[1]))["devices"] if d["device"] == "nvme0n1"][0]
n = d["facts"]["nvme"]
s = {x["knob"]: x for x in d["settings"]}
print(f"    identified={n['identified']} identify_error={n['identify_error']!r} coalescing={s['coalescing']['state']}")
sys.exit(not (n["identified"] and s["coalescing"]["state"] == "ok" and s["apst"]["state"] == "unsupported"))
PY
	printf 'extends: latency\nnvme: { poll_queues: 1 }\n' >/etc/iotuned/profiles/pollq.yaml
	printf 'rules:\n  - { match: { kernel: "nvme*" }, profile: pollq }\n' >/etc/iotuned/iotuned.yaml.d/40-pollq.yaml
	assert_ok systemctl reload iotuned.service
	wait_for 'grep -qx "options nvme poll_queues=1" /etc/modprobe.d/iotuned-nvme.conf' 15 \
		'journalctl -b -u iotuned -n 20 --no-pager; ls -l /etc/modprobe.d'
	assert_match "nvme0 poll_queues: pending-reboot" "$(iotunectl status)" "status"
	# One journal entry per pending setting, with its own MESSAGE_ID and catalog text.
	wait_for '[[ -n $(journalctl -b -u iotuned MESSAGE_ID=492b5ad305de457895dce53f9df26d01 KNOB=poll_queues -o cat) ]]' 10 \
		'journalctl -b -u iotuned -n 20 --no-pager'
	assert_match "takes effect when the nvme driver next probes its controller" \
		"$(journalctl -b -x -u iotuned MESSAGE_ID=492b5ad305de457895dce53f9df26d01 --no-pager)" "journalctl -x (catalog from the package)"
	rm /etc/iotuned/iotuned.yaml.d/40-pollq.yaml /etc/iotuned/profiles/pollq.yaml
	assert_ok systemctl reload iotuned.service
}

check_dropin_and_reload() {
	printf 'rules:\n  - name: site\n    match: { kernel: "nvme*" }\n    profile: throughput\n' \
		>/etc/iotuned/iotuned.yaml.d/50-site.yaml
	assert_ok systemctl reload iotuned.service
	wait_for '[[ $(sched_of nvme0n1) == mq-deadline && $(</sys/block/nvme0n1/queue/read_ahead_kb) == 4096 ]]' 15 'journalctl -b -u iotuned -n 20 --no-pager'
	assert_file_eq /sys/block/nvme0n1/queue/read_ahead_kb 4096
	assert_ok iotunectl verify
}

check_upgrade_keeps_old_daemon_on_bad_config() {
	local pid out
	pid=$(main_pid)
	printf 'rules:\n  - match: {}\n    profile: nonesuch\n' >/etc/iotuned/iotuned.yaml.d/60-bad.yaml
	out=$(dpkg -i "$(deb)" 2>&1) || fail "dpkg -i (upgrade) failed: $out"
	printf '%s\n' "$out" | sed 's/^/    | /' | tail -n 5
	[[ $out == *"keeps its old configuration"* ]] || fail "no warning about the invalid configuration"
	assert_eq "$pid" "$(main_pid)" "MainPID (old daemon kept running)"
	assert_eq active "$(systemctl is-active iotuned.service)" "iotuned"
	rm /etc/iotuned/iotuned.yaml.d/60-bad.yaml
	assert_ok dpkg -i "$(deb)"
	wait_for "[[ \$(main_pid) != $pid && \$(systemctl is-active iotuned.service) == active ]]" 30
	note "restarted on upgrade with a valid configuration: pid $pid -> $(main_pid)"
}

check_purge_restores_and_leaves_nothing() {
	local d k left
	rm -f /etc/iotuned/iotuned.yaml.d/50-site.yaml
	assert_ok dpkg --purge iotuned
	for d in nvme0n1 sda; do
		for k in "${KNOBS[@]}"; do
			assert_eq "$(<"$BOOT/$d.$k")" "$(knob "$d" "$k")" "$d $k (boot value after purge)"
		done
	done
	left=$(ls -d /etc/iotuned /run/iotuned /usr/lib/iotuned /usr/sbin/iotuned /usr/bin/iotunectl \
		/usr/lib/systemd/system/iotuned.service /etc/modprobe.d/iotuned-nvme.conf 2>/dev/null || true)
	assert_eq "" "$left" "files left after purge"
	assert_fails systemctl is-enabled iotuned.service
}
