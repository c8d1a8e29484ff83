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
if [ @HOOK@ = pre-commit ]; then
  # Start aea only if the inbox may hold mail: aea makes an empty sticky
  # folder in its private state in the git dir (GIT_DIR in a linked
  # worktree, else .git or what a .git file names; no clone or pull writes
  # there) when it found nothing unprocessed after the inbox and config
  # last changed. Change times on both sides (a time set ahead counts for
  # nothing). A find without -newerXY says nothing, and aea starts.
  g=${GIT_DIR:-}
  if [ -z "$g" ]; then
    if [ -d .git ]; then g=.git; elif [ -f .git ]; then read -r _ g < .git || g=; fi
  fi
  q="$g/aea/root/seen/quiet"
  c=.aea/agent-config.yaml
  p=.aea/.processed
  [ -e "$p" ] || p=.aea
  quiet=
  if [ -n "$g" ] && [ ! -L "$q" ] && [ -d "$q" ] && [ -k "$q" ] && [ -O "$q" ] && [ -f "$c" ] &&
    [ -n "$(find "$q" -maxdepth 0 -newercc .aea -newercc "$p" -newercc "$c" ! -newermc "$q" 2>/dev/null)" ]; then
    quiet=1
    for f in "$q"/* "$q"/.[!.]* "$q"/..?*; do
      if [ -e "$f" ] || [ -L "$f" ]; then quiet=; break; fi
    done
  fi
  [ -z "$quiet" ] || exit "$status"
fi
# git's variables must not leak into what aea touches (the commit's index
export AEA_GIT_INDEX_FILE="${GIT_INDEX_FILE:-}" # goes under aea's own name)
unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_PREFIX GIT_NAMESPACE GIT_CEILING_DIRECTORIES
# A decision of aea's (exit 5) stops a commit; so does an aea that could
# not decide (a flood timed it out, a pull broke .aea/) while any mail
# waits: a file at the top of .aea/ no .processed/ marker covers. Else one
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
      for f in .aea/message-*.json; do
        { [ -e "$f" ] || [ -L "$f" ]; } && [ ! -f ".aea/.processed/${f#.aea/}" ] || continue
        echo "aea: commit blocked: aea could not decide (exit $rc) and mail waits in .aea/; run \`aea check\`" >&2
        exit 5
      done
    fi
    echo "aea: the hook could not run aea (exit $rc): mail not checked; run \`aea doctor\`" >&2
    case "${AEA_HOOKS_FAIL_CLOSED:-0}" in 0) ;; *) [ @HOOK@ = pre-commit ] && exit "$rc" ;; esac
    ;;
esac
exit "$status"
