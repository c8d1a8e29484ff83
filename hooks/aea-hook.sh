#!/bin/sh
# aea-hook: @HOOK@
# aea-hook-version: @VERSION@
# Written by `aea hooks install`; `aea hooks uninstall` puts back @HOOK@.aea-orig.
status=0
if [ -x "$0.aea-orig" ]; then
  "$0.aea-orig" "$@" || status=$?
  if [ "$status" -ne 0 ] && [ @HOOK@ = pre-commit ]; then exit "$status"; fi
fi
case "${AEA_SKIP_HOOKS:-0}" in 0) ;; *) exit "$status" ;; esac
aea=@AEA@
[ -x "$aea" ] || aea=$(command -v aea 2>/dev/null) || aea=
if [ -z "$aea" ]; then
  echo "aea: binary not found, mail not checked (run \`aea hooks install\` again)" >&2
  exit "$status"
fi
# The inboxes served: the top's .aea/, and those below it `aea init` listed
# in the git dir (GIT_DIR in a linked worktree, else .git or what a .git file
# names; no clone or pull writes there): its private state's name, its path.
g=${GIT_DIR:-}
[ -n "$g" ] || if [ -d .git ]; then g=.git; elif [ -f .git ]; then read -r _ g < .git || g=; fi
l="$g/aea/served-inboxes"
[ -n "$g" ] && { [ -e "$l" ] || [ -L "$l" ]; } || l=
if [ @HOOK@ = pre-commit ]; then
  # Start aea only if an inbox may hold mail or have state staged: aea makes
  # an empty sticky folder in its private state when it found neither since
  # the inbox and config last changed. One find compares each with it (as q/:
  # the index too) by change times. 0: all older, 2: all but the index.
  quiet() {
    want= half= or= k=root d=. && set -- -maxdepth 0 \(
    [ -e .aea ] || [ -L .aea ] || [ -z "$l" ] || read -r k d <&3 || k=
    while [ -n "$k" ]; do
      if [ "$d" = . ] || [ -e "$d/.aea" ] || [ -L "$d/.aea" ]; then
        q="$g/aea/$k/seen/quiet" a="$d/.aea"
        c="$a/agent-config.yaml" p="$a/.processed" i="$g/index"
        [ -e "$p" ] || p=$a; [ -e "$i" ] || i=$c
        [ ! -L "$q" ] && [ -d "$q" ] && [ -k "$q" ] && [ -O "$q" ] && [ -f "$c" ] || return 1
        for f in "$q"/* "$q"/.[!.]* "$q"/..?*; do [ ! -e "$f" ] && [ ! -L "$f" ] || return 1; done
        set -- "$q" "$q/" "$@" $or -samefile "$q" -newercc "$a" -newercc "$p" -newercc "$c" \
          ! -newermc "$q" \( ! -path '*/' -o -newercc "$i" \)
        want="$q
$q/${want:+
$want}" half="$q${half:+
$half}" or=-o
      fi
      k= && [ -z "$l" ] || read -r k d <&3 || k=
    done
    [ -n "$want" ] || return 0; o=$(find "$@" \) 2>/dev/null)
    [ "$o" = "$want" ] && return 0; [ "$o" = "$half" ] && return 2; return 1
  }
  # A newer index (git add), or another (commit -a): git says what is staged.
  if [ -n "$g" ] && { [ -z "$l" ] || { [ -f "$l" ] && [ ! -L "$l" ] && [ -O "$l" ]; }; }; then
    v=0 && quiet 3< "${l:-/dev/null}" || v=$?
    [ "$v" = 0 ] && [ "${GIT_INDEX_FILE:-$g/index}" = "$g/index" ] && exit "$status"
    [ "$v" = 1 ] || { t=$(git diff-index --cached --name-only --diff-filter=d HEAD 2>/dev/null) &&
      case $t in *.aea/*) ;; *) exit "$status" ;; esac; }
  fi
fi
# git's variables must not leak into what aea touches (the commit's index
export AEA_GIT_INDEX_FILE="${GIT_INDEX_FILE:-}" # goes under aea's own name)
unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_PREFIX GIT_NAMESPACE GIT_CEILING_DIRECTORIES
# aea's decision (exit 5) stops a commit; so does an aea that could not decide
# while mail waits: a file at the top of .aea/ no .processed/ marker covers, or
# any if aea timed out (124, 137: a pulled flood brings its markers). Else one
# line, and git goes on (unless AEA_HOOKS_FAIL_CLOSED=1). No stdin.
bound=
command -v timeout >/dev/null 2>&1 && bound="timeout -k 2 ${AEA_HOOK_TIMEOUT:-10}"
rc=0
$bound "$aea" hooks run @HOOK@ </dev/null || rc=$?
case "$rc" in
  0) ;;
  5) [ @HOOK@ = pre-commit ] && exit 5 ;;
  *)
    if [ @HOOK@ = pre-commit ]; then
      { echo "root ."; [ -z "$l" ] || cat "$l"; } | while read -r _ d; do
        for f in "$d"/.aea/message-*.json; do
          { [ -e "$f" ] || [ -L "$f" ]; } && { [ "$rc" = 124 ] || [ "$rc" = 137 ] || [ ! -f "$d/.aea/.processed/${f#"$d"/.aea/}" ]; } || continue
          d=$(printf %s "$d" | LC_ALL=C tr -c '[:print:]' '?') # the path as text
          echo "aea: commit blocked: aea could not decide (exit $rc) and mail waits in $d/.aea/; run \`aea check\` there" >&2
          exit 5
        done
      done || exit 5
    fi
    echo "aea: the hook could not run aea (exit $rc): mail not checked; run \`aea doctor\`" >&2
    case "${AEA_HOOKS_FAIL_CLOSED:-0}" in 0) ;; *) [ @HOOK@ = pre-commit ] && exit "$rc" ;; esac
    ;;
esac
exit "$status"
