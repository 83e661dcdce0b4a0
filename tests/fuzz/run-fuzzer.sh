#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One bounded libFuzzer run, as a test of the meson `fuzz` suite:
#
#   run-fuzzer.sh FUZZER SEED_DIR DICT ARTIFACT_DIR
#
# Fuzzes a private copy of SEED_DIR (the tree is never written) for
# $IOTUNED_FUZZ_SECONDS seconds (default 10). Exit 0 when libFuzzer found nothing;
# otherwise 1, with the reproducer (crash-*, leak-*, timeout-*, oom-*) kept in
# ARTIFACT_DIR and the command that replays it printed.
set -uo pipefail

fuzzer=$1 seeds=$2 dict=$3 artifacts=$4
seconds=${IOTUNED_FUZZ_SECONDS:-10}

work=$(mktemp -d "${TMPDIR:-/tmp}/iotuned-fuzz-run.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/scratch" "$artifacts"
[[ -d $seeds ]] && cp -- "$seeds"/* "$work/corpus/" 2>/dev/null
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
	-artifact_prefix="$artifacts/")
[[ -f $dict ]] && args+=(-dict="$dict")

# UBSan reports are fatal (the build also has -fno-sanitize-recover); leaks fail.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# The harnesses' scratch files (fuzz-util.h) go here and are removed with it.
export IOTUNED_FUZZ_TMPDIR=$work/scratch

before=$(ls -A "$artifacts" | sort)
echo "run-fuzzer: $(basename "$fuzzer") for ${seconds} s on a copy of $seeds ($(ls -A "$work/corpus" | wc -l) seeds)"
"$fuzzer" "${args[@]}" "$work/corpus"
rc=$?
new=$(comm -13 <(echo "$before") <(ls -A "$artifacts" | sort) | grep -v '^$')
if ((rc != 0)) || [[ -n $new ]]; then
	echo "run-fuzzer: $(basename "$fuzzer") FAILED (exit $rc)" >&2
	for a in $new; do
		echo "run-fuzzer: reproducer: $artifacts/$a" >&2
		echo "run-fuzzer: replay with: $fuzzer $artifacts/$a" >&2
	done
	exit 1
fi
echo "run-fuzzer: $(basename "$fuzzer"): nothing found"
