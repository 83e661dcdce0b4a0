#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The bash completion completes commands, options, disks, recorded originals and
# profile names (from the --root/--config tree given on the line); shellcheck
# finds nothing in it.
# usage: test-completion.sh COMPLETION_FILE IOTUNECTL
set -euo pipefail
source /usr/share/bash-completion/bash_completion
source "$1"
PATH=$(dirname "$2"):$PATH
fails=0
expect() { # WANT WORDS...
	local want=$1
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	# bash-completion's own helpers (_filedir) are not written for set -e
	set +e
	_iotunectl
	set -e
	local got="${COMPREPLY[*]}"
	if [[ $got == "$want" ]]; then
		echo "ok - '${COMP_WORDS[*]}' -> '$got'"
	else
		echo "not ok - '${COMP_WORDS[*]}': expected '$want', got '$got'"
		fails=$((fails + 1))
	fi
}
expect "plan profiles" iotunectl p
expect "--json" iotunectl --js
expect "check-config" iotunectl --json check
expect "show" iotunectl profiles sh
expect "status" iotunectl help sta
expect "tune" iotunectl tu
expect "nr_requests" iotunectl tune --knobs nr
expect "--runtime" iotunectl tune --ru
expect "diagnose" iotunectl dia
expect "--interval" iotunectl diagnose --inte
expect "--no-pager" iotunectl --no
expect "latency" iotunectl profiles show lat

# Profile names from the configuration the command will read.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/conf/profiles" "$tree/root/etc/iotuned/profiles" "$tree/root/run/iotuned/originals"
printf 'name: zz-site\nextends: latency\n' >"$tree/conf/profiles/zz-site.yaml"
printf 'name: zz-rooted\nextends: latency\n' >"$tree/root/etc/iotuned/profiles/zz-rooted.yaml"
expect "zz-site" iotunectl --config "$tree/conf" profiles show zz
expect "zz-site" iotunectl "--config=$tree/conf" profiles show zz
expect "zz-rooted" iotunectl --root "$tree/root" profiles show zz
expect "" iotunectl profiles show zz
# Recorded originals under --root.
: >"$tree/root/run/iotuned/originals/nvme7n1.json"
expect "nvme7n1" iotunectl --root "$tree/root" restore nv
# explain takes one DEVICE: nothing after it.
expect "" iotunectl explain "$(ls /sys/block | head -n1)" ""
# --root= completes a directory after the '='.
expect "--root=$tree/conf" iotunectl "--root=$tree/co"

if command -v shellcheck >/dev/null; then
	if shellcheck "$1"; then echo "ok - shellcheck $1"; else echo "not ok - shellcheck $1"; fails=$((fails + 1)); fi
fi
exit $((fails > 0))
