# SPDX-License-Identifier: Apache-2.0
# bash completion for gpuslice (installed as
# share/bash-completion/completions/gpuslice). gpuslice answers itself
# (`gpuslice complete`, the same tables as --help): commands, options, this
# machine's GPU indices and MIG profiles, the configs of the layout file
# given with -f, and fixed choices; files and commands are bash's own.
_gpuslice() {
  local cur words cword out IFS=$'\n'
  if declare -F _get_comp_words_by_ref >/dev/null; then
    _get_comp_words_by_ref -n =: cur words cword # bash-completion: "a:b" stays one word
  else
    cur=${COMP_WORDS[COMP_CWORD]} words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
  fi
  out=$("${words[0]}" complete --shell bash -- "${words[@]:1:cword}" 2>/dev/null) || return 0
  case $out in
  @file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;
  @dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;
  @default) compopt -o default 2>/dev/null; COMPREPLY=() ;;
  *) COMPREPLY=($out) ;;
  esac
  # bash-completion's cur spans '=' and ':'; readline replaces only what
  # follows the last of them: offer that part.
  if [[ $cur == *=* && $COMP_WORDBREAKS == *=* ]]; then
    COMPREPLY=("${COMPREPLY[@]#"${cur%"${cur##*=}"}"}")
  fi
  if declare -F __ltrim_colon_completions >/dev/null; then
    __ltrim_colon_completions "$cur"
  fi
  return 0
}
complete -F _gpuslice gpuslice
