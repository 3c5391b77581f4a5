# shellcheck shell=bash
# Whether a process runs, for the test harnesses that start and stop daemons by hand. Source it.
#
# A zombie has ended. The daemons the harnesses start detach (setsid, a double fork), so init adopts
# them, and the init of some machines (this project's CI among them) reaps only every 2 s or so;
# `kill -0` and pgrep count a zombie as running.

# proc_alive PID: the process runs.
proc_alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # "pid (comm) S ...": comm may hold spaces and parentheses
  [ "${stat%% *}" != Z ]
}

# proc_named_alive NAME: some process named NAME (pgrep -x) runs.
proc_named_alive() {
  local pid
  for pid in $(pgrep -x "$1"); do proc_alive "$pid" && return 0; done
  return 1
}
