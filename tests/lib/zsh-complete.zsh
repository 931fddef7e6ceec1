# SPDX-License-Identifier: Apache-2.0
# zsh-complete.zsh COMPDIR PATHDIRS OUT KEYS...: completion as a person at
# an interactive zsh gets it (zsh/zpty: a terminal, compinit, the keymap):
# COMPDIR (holding _gpuslice) goes first in $fpath, PATHDIRS (colon-
# separated) first in $path; each KEYS is typed (TABs included), then a key
# bound to a widget that appends the command line ($BUFFER) to OUT and
# empties it. What the terminal showed (the completion listings) goes to
# OUT.tty. Run with `zsh -f`; exits 2 without zsh/zpty, 1 when a line never
# came (20 s).
zmodload zsh/zpty || exit 2
local compdir=$1 out=$3 tty= chunk
local pathq=${(j: :)${(q)${(s.:.)2}}} # each directory quoted, then joined
local -i n=0 i
shift 3
: >$out
zpty -b z "zsh -f -i"
zpty -w z "PS1='>'; unsetopt beep; fpath=(${(q)compdir} \$fpath);" \
  "path=($pathq \$path); autoload -Uz compinit; compinit -u -D"
zpty -w z "dump() { print -r -- \"\$BUFFER\" >>${(q)out}; BUFFER=; }; zle -N dump; bindkey '^T' dump"
got() { local -a lines=(${(f)"$(<$out)"}); (( $#lines >= n )) } # empty lines not counted
for keys; do
  # ^T, not a prefix key (^X would wait for the key after it)
  zpty -w -n z "$keys"$'\x14'
  (( n += 1 ))
  for i in {1..200}; do
    got && break
    sleep 0.1
  done
  got || { zpty -d z; exit 1 }
done
while zpty -rt z chunk; do tty+=$chunk; done
print -r -- "$tty" >$out.tty
zpty -d z
