#!/bin/sh
# aea-hook: @HOOK@
# aea-hook-version: @VERSION@
# Written by `aea hooks install`; `aea hooks uninstall` removes it and puts
# back the hook kept meanwhile as @HOOK@.aea-orig.
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
# git's variables must not leak into anything aea touches elsewhere.
unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_PREFIX GIT_NAMESPACE GIT_CEILING_DIRECTORIES
# A decision of aea's (exit 5) stops a commit; so does an aea that did not
# decide in time (a flood?) while urgent mail waits. Garbage or a crash says
# one line and git goes on, unless AEA_HOOKS_FAIL_CLOSED=1. No stdin.
bound=
if command -v timeout >/dev/null 2>&1; then
  bound="timeout -k 2 ${AEA_HOOK_TIMEOUT:-10}"
fi
rc=0
$bound "$aea" hooks run @HOOK@ </dev/null || rc=$?
case "$rc" in
  0) ;;
  5) [ @HOOK@ = pre-commit ] && exit 5 ;;
  *)
    if [ @HOOK@ = pre-commit ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } &&
      find .aea -maxdepth 1 -type f -name 'message-*.json' -size -2048k -exec \
        grep -l -E '"priority"[[:space:]]*:[[:space:]]*"urgent"' {} + 2>/dev/null | grep -q .; then
      echo "aea: commit blocked: aea did not decide in time and urgent mail waits; run \`aea check\`" >&2
      exit 5
    fi
    echo "aea: the hook could not run aea (exit $rc): mail not checked; run \`aea doctor\`" >&2
    case "${AEA_HOOKS_FAIL_CLOSED:-0}" in 0) ;; *) [ @HOOK@ = pre-commit ] && exit "$rc" ;; esac
    ;;
esac
exit "$status"
