#!/bin/sh
# aea-hook: @HOOK@
# aea-hook-version: @VERSION@
# Written by `aea hooks install`; `aea hooks uninstall` removes it and puts
# back the hook that was here before, kept meanwhile as @HOOK@.aea-orig.
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
  # Start aea only if some message has no processed marker: on most
  # commits there is nothing to report, and a process start costs more
  # than these tests.
  waiting=
  for f in .aea/message-*.json; do
    [ -e "$f" ] || break
    [ -e ".aea/.processed/${f#.aea/}" ] || { waiting=1; break; }
  done
  [ -n "$waiting" ] || exit "$status"
fi
# aea only reads this repository's .aea/; git's variables must not leak
# into anything it might touch elsewhere. The foreign hook above had them.
unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_PREFIX GIT_NAMESPACE GIT_CEILING_DIRECTORIES
# exec saves a process when there is no other status to report.
[ "$status" -eq 0 ] && exec "$aea" hooks run @HOOK@
"$aea" hooks run @HOOK@
exit "$status"
