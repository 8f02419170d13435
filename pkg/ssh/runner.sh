# The runner: the fixed program every script reaches a host through (see
# wrapper.go for the stdin layout). $1 is the random marker. Comment lines
# are stripped before it goes on the command line.
exec 4<&0
m=$1
l=
# Skip whatever precedes the marker: the sudo password line when sudo did not read it.
while IFS= read -r l; do [ "$l" = "$m" ] && break; done
[ "$l" = "$m" ] || { echo "gpukit: protocol error: no start marker on stdin" >&2; exit 125; }
IFS= read -r n || exit 125
a=()
for ((i = 0; i < n; i++)); do IFS= read -r -d "" x || exit 125; a+=("$x"); done
IFS= read -r n || exit 125
# Exactly n bytes, in large reads: in the C locale (read -N counts characters), set for the read
# and then put back as it was (a plain assignment: older bash may not apply a prefix one).
__gpukit_script=
__gpukit_lc=${LC_ALL-}
__gpukit_lc_set=${LC_ALL+1}
LC_ALL=C
IFS= read -r -N "$n" __gpukit_script || { echo "gpukit: protocol error: truncated script on stdin" >&2; exit 125; }
if [ -n "$__gpukit_lc_set" ]; then LC_ALL=$__gpukit_lc; else unset LC_ALL; fi
unset __gpukit_lc __gpukit_lc_set
if ! IFS= read -r l || [ "$l" != "$m" ]; then echo "gpukit: protocol error: truncated script on stdin" >&2; exit 125; fi
# The script runs in a subshell with stdin /dev/null. Its arguments carry secrets (join tokens,
# certificate keys, configurations): they become its positional parameters without any exec, so
# they are never a process's argv, which any user reads in /proc/PID/cmdline. Monitor mode
# while it starts gives it a process group of its own, which the watchdog signals as a whole
# (setsid would cost an exec of setsid and one of bash per script); off again at once, or bash
# reports the job's end on stderr.
set -m
(
  set -- "${a[@]}"
  unset m l n a x i
  eval "$__gpukit_script"
) </dev/null 4<&- &
p=$!
set +m
# The watchdog: stdin ends only when the client is gone; then TERM, and KILL 2 s later.
{
  while IFS= read -r -u 4 _; do :; done
  kill -TERM -- -$p || kill -TERM $p
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do kill -0 -- -$p || exit 0; sleep 0.1; done
  kill -KILL -- -$p
} >/dev/null 2>&1 &
w=$!
wait $p
r=$?
kill $w 2>/dev/null
exit $r
