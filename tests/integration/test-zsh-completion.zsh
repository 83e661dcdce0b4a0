#!/bin/zsh -f
# SPDX-License-Identifier: LGPL-2.1-or-later
# The zsh completion, driven through zsh's real completion system in a
# pseudo-terminal (zpty): each line is typed, TAB pressed, and the candidates
# zsh would list are compared with what is expected.
# usage: test-zsh-completion.zsh COMPLETION_DIR IOTUNECTL
emulate -L zsh
zmodload zsh/zpty || { print "not ok - zsh/zpty is missing"; exit 1 }
compdir=${1:A} bindir=${2:A:h}
fails=0
tmp=$(mktemp -d)
trap 'rm -rf $tmp' EXIT

zpty comp zsh -f -i
zpty -w comp "PS1='' PROMPT='' RPROMPT=''; unsetopt zle_bracketed_paste 2>/dev/null; PATH=${(q)bindir}:\$PATH"
zpty -w comp "fpath=(${(q)compdir} \$fpath); autoload -Uz compinit; compinit -u -D"
# List every candidate on its own line between markers instead of inserting.
zpty -w comp 'zstyle ":completion:*" list-separator ""; zstyle ":completion:*" format ""'
zpty -w comp 'comptest() { compadd() { builtin compadd -O _ct "$@"; print -rl -- "<<${(j: :)${(o)_ct}}>>" } ; }'
zpty -w comp '_capture() { local -a _ct; print -n "\n<<BEGIN>>"; _main_complete; print -rl -- ""; print "<<END>>" }'
zpty -w comp 'zle -C capture complete-word _capture; bindkey "^I" capture; comptest; print RE""ADY'
zpty -r comp chunk '*READY*' || { print "not ok - the completion shell did not start"; exit 1 }

expect() { # WANT LINE
	local want=$1 line=$2 out chunk
	zpty -w -n comp "$line"$'\t'
	out=""
	zpty -r comp out '*<<END>>*'
	zpty -w comp $'\C-u'
	[[ -n $ZT_DEBUG ]] && print -r -- "RAW: ${(q+)out}"
	# every candidate compadd was given, once, sorted
	local body=${${out#*<<BEGIN>>}%%<<END>>*}
	local got=$(print -r -- $body | grep -o '<<[^<>]*>>' | tr -d '<>' | tr ' ' '\n' | sed '/^$/d' | sort -u | paste -sd ' ')
	if [[ $got == $want ]]; then
		print "ok - '$line' -> '$got'"
	else
		print "not ok - '$line': expected '$want', got '$got'"
		(( fails++ ))
	fi
}

mkdir -p $tmp/conf/profiles
print 'name: zz-site\nextends: latency' >$tmp/conf/profiles/zz-site.yaml
expect "check-config" "iotunectl check"
expect "latency" "iotunectl profiles show lat"
expect "tune" "iotunectl tu"
expect "diagnose" "iotunectl dia"
expect "zz-site" "iotunectl --config=$tmp/conf profiles show zz"
expect "list show" "iotunectl profiles "
# without --config the site profile is not offered
expect "" "iotunectl profiles show zz"
# explain takes one DEVICE
expect "" "iotunectl explain ${${:-/sys/block/*(N[1]:t)}:-sda} "
zpty -d comp
exit $(( fails > 0 ))
