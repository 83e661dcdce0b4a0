# SPDX-License-Identifier: LGPL-2.1-or-later
# fleet: the tools fleets deploy iotuned with, against the .deb built from this
# tree (run after package.sh on its boot, by tests/vm/package-test, which also
# hands in the role and the source package).
#   - contrib/ansible/roles/iotuned driven by Debian's ansible-playbook
#     (connection local): the first run installs and tunes; a second changes
#     nothing; a bad drop-in is refused by validate: and the running daemon
#     keeps its configuration; a good one is applied by a reload (same PID);
#     `--tags iotuned_verify` fails the play on drift, naming the setting;
#     removals are checked before anything is deleted.
#     The first two runs are whole; the later ones push configuration as a
#     fleet does once the package is there (--tags iotuned_config,iotuned_verify:
#     no apt, no systemctl enable), which also tests that the role's tags hold
#     together. Under TCG one module run takes 7-10 s (a copy task is two:
#     stat, then copy or file), and the install tasks took ~50 s of each run.
#   - autopkgtest (null runner: this guest is the test machine) runs
#     debian/tests against the installed package: the one the role installed
#     from the .deb, checked by its version. Given the .deb as well,
#     autopkgtest would publish it in an apt repository of its own and
#     reinstall it before each test (25 s of each test's 35 s here).

VM_DEVICES=(
	"nvme nv0"
	"sata sata0"
)

FLEET=/run/iotvm-fleet
# The later plays: configuration only, then the check (see above).
# shellcheck disable=SC2054 # one argument, a comma-separated list of tags
CONFIG_TAGS=(--tags iotuned_config,iotuned_verify)
deb() { ls /mnt/iotvm/files/iotuned_*.deb; }
main_pid() { systemctl show -P MainPID iotuned.service; }
ms_since() { echo $((($(_iotvm_us) - $1) / 1000)); }

# Run the test playbook with the variables in $FLEET/vars.yml plus ARGS; the
# output goes to $FLEET/out (also printed, indented) and the exit status is
# the playbook's.
play() { # ARGS...
	local rc=0 t0
	# Pipelining and a named interpreter: no module copied to a temporary
	# file and no interpreter discovery, seconds of each run under TCG.
	# ansible-core's junit callback times each task (play_times).
	rm -rf "$FLEET/junit"
	t0=$(_iotvm_us)
	ANSIBLE_ROLES_PATH=$FLEET/ansible/roles ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 \
		ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 ANSIBLE_PIPELINING=1 \
		ANSIBLE_CALLBACKS_ENABLED=junit JUNIT_OUTPUT_DIR=$FLEET/junit JUNIT_HIDE_TASK_ARGUMENTS=1 \
		ansible-playbook -i localhost, -c local -e ansible_python_interpreter=/usr/bin/python3 \
		-e "@$FLEET/vars.yml" "$@" "$FLEET/site.yml" \
		>"$FLEET/out" 2>&1 || rc=$?
	sed 's/^/    | /' "$FLEET/out" | grep -v '^    | *$' | tail -n 40
	play_times "$(ms_since "$t0")"
	return "$rc"
}

# Where a play's time went: the whole run and its slowest tasks, from the
# junit callback's report (what the tasks took; the rest is ansible-playbook's
# own start and the play's set-up).
play_times() { # WALL_MS
	iotvm_py - "$1" "$FLEET"/junit/*.xml <<-'PY'
		import sys
		import xml.etree.ElementTree as ET
		wall = int(sys.argv[1]) / 1000
		cases = []
		for f in sys.argv[2:]:
		    try:
		        tree = ET.parse(f)
		    except (OSError, ET.ParseError) as e:
		        # No report (a play that crashed before its end): the play's
		        # output above says why; the times are only lost.
		        print(f"    play: {wall:.1f} s; no task times ({f}: {e})")
		        sys.exit(0)
		    for c in tree.iter("testcase"):
		        cases.append((float(c.get("time") or 0), c.get("name", "?").split("] ", 1)[-1]))
		tasks = sum(t for t, _ in cases)
		slow = ", ".join(f"{n} {t:.1f} s" for t, n in sorted(cases, reverse=True)[:4])
		print(f"    play: {wall:.1f} s, of which {len(cases)} tasks {tasks:.1f} s (slowest: {slow})")
	PY
}

# The recap's count for localhost: recap changed|failed|ok
recap() { sed -nE "s/^localhost +:.* $1=([0-9]+).*/\1/p" "$FLEET/out"; }

vars() { # YAML written as $FLEET/vars.yml, after iotuned_deb
	{ printf 'iotuned_deb: %s\n' "$(deb)"; cat; } >"$FLEET/vars.yml"
}

scenario_setup() {
	command -v ansible-playbook >/dev/null || fail "ansible-playbook is not installed (tools/dev installs ansible-core)"
	command -v autopkgtest >/dev/null || fail "autopkgtest is not installed (tools/dev installs it)"
	[[ ! -e /usr/sbin/iotuned ]] || fail "iotuned is installed before the first play (package.sh purges it)"
	rm -rf "$FLEET"
	mkdir -p "$FLEET"
	tar -xf /mnt/iotvm/files/ansible.tar -C "$FLEET"
	assert_exists "$FLEET/ansible/roles/iotuned/tasks/main.yml" "the role"
	cat >"$FLEET/site.yml" <<-'YML'
		- name: Tune this node with iotuned
		  hosts: localhost
		  gather_facts: false
		  roles: [iotuned]
	YML
	# No network in the guest: apt reads only what is on it.
	mkdir -p "$FLEET/apt-sources"
	mv /etc/apt/sources.list.d/* "$FLEET/apt-sources/" 2>/dev/null || :
	: >/etc/apt/sources.list
}

# The package's postinst starts the daemon before the role creates
# node_exporter's directory, which the unit may write only if it existed at
# the start: the role restarts the daemon then, and the textfile appears.
check_first_run_installs_and_tunes() {
	[[ ! -e /var/lib/prometheus/node-exporter ]] || fail "node_exporter's directory exists before the first run"
	vars <<-'YML'
		iotuned_dropins:
		  50-site: |
		    rules:
		      - name: site
		        match: { kernel: "nvme*" }
		        profile: throughput
		iotuned_metrics_textfile: /var/lib/prometheus/node-exporter/iotuned.prom
	YML
	play || fail "the first run failed (exit $?)"
	assert_eq 0 "$(recap failed)" "failed tasks"
	(($(recap changed) >= 5)) || fail "changed=$(recap changed): expected the install, the directory, two drop-ins and the restart"
	grep -q "RUNNING HANDLER \[iotuned : Restart iotuned\]" "$FLEET/out" || fail "no restart after the textfile directory was created"
	wait_for 'grep -q "^iotuned_settings" /var/lib/prometheus/node-exporter/iotuned.prom' 15 \
		'ls -l /var/lib/prometheus/node-exporter; journalctl -b -u iotuned -n 20 --no-pager'
	note "ok: the metrics textfile is written"
	assert_eq active "$(systemctl is-active iotuned.service)" "iotuned"
	assert_eq enabled "$(systemctl is-enabled iotuned.service)" "iotuned enabled"
	assert_sched nvme0n1 mq-deadline
	assert_file_eq /sys/block/nvme0n1/queue/read_ahead_kb 4096
	assert_ok iotunectl verify
}

check_second_run_changes_nothing() {
	play || fail "the second run failed (exit $?)"
	assert_eq 0 "$(recap changed)" "changed tasks on the second run"
	assert_eq 0 "$(recap failed)" "failed tasks"
}

check_bad_dropin_refused_by_validate() {
	local pid sum rc=0
	pid=$(main_pid)
	sum=$(sha256sum </etc/iotuned/iotuned.yaml.d/50-site.yaml)
	vars <<-'YML'
		iotuned_dropins:
		  50-site: |
		    rules:
		      - name: site
		        match: { kernel: "nvme*" }
		        profile: throughput
		  60-bad: |
		    rules:
		      - match: { kernel: "sd*" }
		        profile: nonesuch
		iotuned_metrics_textfile: /var/lib/prometheus/node-exporter/iotuned.prom
	YML
	play "${CONFIG_TAGS[@]}" || rc=$?
	((rc != 0)) || fail "the play passed with a drop-in naming an unknown profile"
	# The candidate's own name (Ansible's temporary file), line and column.
	grep -qE "failed to validate" "$FLEET/out" || fail "no 'failed to validate' in the play's output"
	grep -qE ":3:[0-9]+: rule '[^']*' uses unknown profile 'nonesuch'" "$FLEET/out" ||
		fail "check-config's FILE:line:column error is not in the play's output"
	assert_eq 1 "$(recap failed)" "failed tasks"
	assert_not_exists /etc/iotuned/iotuned.yaml.d/60-bad.yaml "the refused drop-in"
	assert_eq "$sum" "$(sha256sum </etc/iotuned/iotuned.yaml.d/50-site.yaml)" "50-site.yaml"
	assert_eq "$pid" "$(main_pid)" "MainPID"
	assert_sched nvme0n1 mq-deadline
	assert_ok iotunectl verify
}

check_good_dropin_applied_by_reload() {
	local pid cursor
	pid=$(main_pid)
	cursor=$(journalctl -n 0 --show-cursor -q | sed -n 's/^-- cursor: //p')
	vars <<-'YML'
		iotuned_profiles:
		  fleet-nvme:
		    extends: latency
		    description: Fleet NVMe (set by the Ansible test)
		    queue: { nr_requests: 64 }
		iotuned_dropins:
		  50-site: |
		    rules:
		      - name: site
		        match: { kernel: "nvme*" }
		        profile: fleet-nvme
		iotuned_metrics_textfile: /var/lib/prometheus/node-exporter/iotuned.prom
	YML
	play "${CONFIG_TAGS[@]}" || fail "the run with a good drop-in failed (exit $?)"
	assert_eq 0 "$(recap failed)" "failed tasks"
	(($(recap changed) >= 3)) || fail "changed=$(recap changed): expected the profile, the drop-in and the reload"
	grep -q "RUNNING HANDLER \[iotuned : Restart iotuned\]" "$FLEET/out" && fail "the daemon was restarted, not reloaded"
	assert_eq "$pid" "$(main_pid)" "MainPID (a reload, not a restart)"
	assert_sched nvme0n1 none
	assert_file_eq /sys/block/nvme0n1/queue/nr_requests 64
	assert_file_eq /sys/block/nvme0n1/queue/read_ahead_kb 0
	journalctl --after-cursor "$cursor" -u iotuned -o cat | grep -qi reload ||
		fail "no reload in the journal since the play started"
	wait_for 'grep -q "^iotuned_devices{profile=\"fleet-nvme\"}" /var/lib/prometheus/node-exporter/iotuned.prom' 15 \
		'cat /var/lib/prometheus/node-exporter/iotuned.prom; journalctl -b -u iotuned -n 20 --no-pager'
	note "ok: the textfile counts the disk under its new profile"
}

check_verify_tag_fails_the_play_on_drift() {
	local rc=0
	# Stopped, the daemon puts the boot values back (read_ahead_kb 128 on this
	# disk): every knob the profile set is now a drift.
	assert_ok systemctl stop iotuned.service
	play --tags iotuned_verify -e iotuned_verify_retries=1 -e iotuned_verify_delay=0 || rc=$?
	((rc != 0)) || fail "the verify run passed with the daemon stopped and its values restored"
	grep -qE "iotunectl verify exited 1 " "$FLEET/out" || fail "the failure does not give verify's exit status"
	grep -qE "nvme0n1 read_ahead_kb: drifted, desired 0, observed [1-9]" "$FLEET/out" ||
		fail "the failure does not name nvme0n1 read_ahead_kb with desired and observed values"
	assert_eq 0 "$(recap changed)" "changed tasks in a verify-only run"
	assert_eq inactive "$(systemctl is-active iotuned.service)" "iotuned (a verify-only run starts nothing)"
	assert_ok systemctl start iotuned.service
	wait_for 'iotunectl --quiet verify' 30 'iotunectl verify'
}

check_removal_checked_first() {
	local rc=0
	vars <<-'YML'
		iotuned_absent_profiles: [fleet-nvme]
		iotuned_dropins: {}
		iotuned_metrics_textfile: /var/lib/prometheus/node-exporter/iotuned.prom
	YML
	play "${CONFIG_TAGS[@]}" || rc=$?
	((rc != 0)) || fail "the play removed a profile a rule still names"
	assert_exists /etc/iotuned/profiles/fleet-nvme.yaml "the profile still named by 50-site"
	grep -q "unknown profile 'fleet-nvme'" "$FLEET/out" || fail "the refusal does not say which rule needs the profile"
	vars <<-'YML'
		iotuned_absent_dropins: [50-site]
		iotuned_absent_profiles: [fleet-nvme]
	YML
	play "${CONFIG_TAGS[@]}" || fail "removing the drop-in and then its profile failed (exit $?)"
	assert_not_exists /etc/iotuned/iotuned.yaml.d/50-site.yaml
	assert_not_exists /etc/iotuned/profiles/fleet-nvme.yaml
	assert_not_exists /etc/iotuned/iotuned.yaml.d/90-ansible-metrics.yaml
	# Back to the shipped rules: NVMe gets latency (nr_requests max again).
	assert_sched nvme0n1 none
	assert_ne 64 "$(cat /sys/block/nvme0n1/queue/nr_requests)" "nvme0n1 nr_requests"
	assert_ok iotunectl verify
}

check_autopkgtest_against_the_installed_package() {
	local rc=0
	cd "$FLEET" || fail "cd $FLEET"
	# The package under test is the tree's: the .deb the first play installed.
	assert_eq "install ok installed $(dpkg-deb -f "$(deb)" Version)" \
		"$(dpkg-query -W -f='${Status} ${Version}' iotuned)" "the installed iotuned"
	# --no-built-binaries: test what is installed (without it, autopkgtest
	# builds the source package first to have binaries for Depends: @).
	autopkgtest --no-built-binaries --output-dir "$FLEET/autopkgtest" /mnt/iotvm/files/iotuned_*.dsc -- null \
		>"$FLEET/autopkgtest.log" 2>&1 || rc=$?
	sed 's/^/    | /' "$FLEET/autopkgtest.log" | tail -n 30
	# Its steps, each with the time it started.
	grep -a 'autopkgtest \[[0-9:]*\]: ' "$FLEET/autopkgtest/log" | sed 's/^/    : /' || :
	assert_eq 0 "$rc" "autopkgtest's exit status (0: every test passed; 2: one was skipped)"
	grep -qE "^service +PASS" "$FLEET/autopkgtest/summary" || fail "autopkgtest summary: no 'service PASS'"
	grep -qE "^reload-keeps-config +PASS" "$FLEET/autopkgtest/summary" || fail "autopkgtest summary: no 'reload-keeps-config PASS'"
}
