#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The bash completion completes commands, options and profile names.
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
	_iotunectl
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
expect "latency" iotunectl profiles show lat
exit $((fails > 0))
