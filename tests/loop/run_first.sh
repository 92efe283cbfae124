#!/usr/bin/env bash
# run_first.sh CMD [ARGS...] — runs CMD (a calibration, a timed execution)
# ahead of the other processes on the machine, so that their load takes
# little of the cores from the timed work.
#
# Linux shares the cores first between autogroups (setsid starts a new one
# when kernel.sched_autogroup_enabled is 1), then between the processes of a
# group by their nice value: a nice value alone does not win against another
# autogroup's processes.  So CMD runs under setsid, in an autogroup of its
# own that gets the highest weight (/proc/self/autogroup -20), at nice -20 as
# well (for kernels without autogroups).  Raising a priority needs
# CAP_SYS_NICE; without it CMD runs at the usual priority, and the timed
# numbers still do not count the time another process held the core
# (calibrate and execute time on-CPU work with the thread CPU clock,
# docs/calibration.md "Load").
#
# CMD runs in another process group, where the test runner's timeout does
# not reach: a signal that ends this script is passed on to CMD's group, and
# CMD gets at most PX_RUN_FIRST_LIMIT_S seconds (default 600).
set -u
[ $# -ge 1 ] || { echo "usage: run_first.sh CMD [ARGS...]" >&2; exit 2; }
setsid bash -c '
  echo -20 2>/dev/null >/proc/self/autogroup
  renice -n -20 -p $$ >/dev/null 2>&1
  exec timeout -k 10 "${PX_RUN_FIRST_LIMIT_S:-600}" "$@"' run_first "$@" &
group=$!
trap 'kill -TERM -- "-$group" 2>/dev/null; wait "$group"; exit 143' TERM INT HUP
wait "$group"
