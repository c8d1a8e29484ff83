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
  # Start aea only if an inbox may hold mail or have its state staged: aea
  # makes an empty sticky folder in its private state when it found nothing
  # unprocessed after the inbox and config last changed, and none of its
  # state in git's index. One find compares each inbox, and the index this
  # commit is made from if any (`commit -a` and `commit FILE` use another:
  # aea starts), with it by change times (a time set ahead counts for
  # nothing); one without -newerXY or -samefile says nothing: aea starts.
  quiet() {
    [ "${GIT_INDEX_FILE:-$g/index}" = "$g/index" ] && set -- -maxdepth 0 \( || return 1
    want= or= k=root d=.
    [ -e .aea ] || [ -L .aea ] || [ -z "$l" ] || read -r k d <&3 || k=
    while [ -n "$k" ]; do
      if [ "$d" = . ] || [ -e "$d/.aea" ] || [ -L "$d/.aea" ]; then
        q="$g/aea/$k/seen/quiet" a="$d/.aea"
        c="$a/agent-config.yaml" p="$a/.processed" i="$g/index"
        [ -e "$p" ] || p=$a; [ -e "$i" ] || i=$c
        [ ! -L "$q" ] && [ -d "$q" ] && [ -k "$q" ] && [ -O "$q" ] && [ -f "$c" ] || return 1
        for f in "$q"/* "$q"/.[!.]* "$q"/..?*; do
          if [ -e "$f" ] || [ -L "$f" ]; then return 1; fi
        done
        set -- "$q" "$@" $or -samefile "$q" -newercc "$a" -newercc "$p" -newercc "$c" \
          -newercc "$i" ! -newermc "$q"
        want="$q${want:+
$want}" or=-o
      fi
      k= && [ -z "$l" ] || read -r k d <&3 || k=
    done
    [ -z "$want" ] || [ "$(find "$@" \) 2>/dev/null)" = "$want" ]
  }
  if [ -z "$g" ]; then :
  elif [ -z "$l" ]; then quiet && exit "$status"
  elif [ -f "$l" ] && [ ! -L "$l" ] && [ -O "$l" ]; then quiet 3< "$l" && exit "$status"
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
