"""Run one load level's command and say what the host did meanwhile.

    python3 level.py PIDFILE OUTFILE -- COMMAND...

Runs COMMAND (JMeter) with its standard output in OUTFILE and prints one CSV fragment:

    loadavg1_before,loadavg1_after,cpu_some_pct,host_busy_pct,stack_busy_pct,others_busy_pct

- loadavg1: the 1-minute load average (/proc/loadavg) just before and just after;
- cpu_some_pct: the share of the time some runnable task waited for a CPU
  (/proc/pressure/cpu, "some" total, over the level's wall time);
- host_busy_pct: the CPUs' busy share, all processes (/proc/stat: all but idle and iowait);
- stack_busy_pct: the part of it used by the test itself: COMMAND (its resource usage) and
  every process under the process ids listed in PIDFILE (Tomcat nodes, Apache, the postmaster)
  with their descendants (/proc/PID/stat utime + stime);
- others_busy_pct: host_busy_pct - stack_busy_pct, what other work on the shared host used.

All percentages are of the whole host (every CPU).  A level where others_busy_pct exceeds 25
(other work took more than half of one of the two cores on average) counts as disturbed; run.sh
repeats it once.
"""

import os
import subprocess
import sys
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def host_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat's cpu line."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    # guest time is already inside user, so only the first eight fields count
    total = sum(fields[:8])
    return total - idle, total


def cpu_some_us() -> int:
    with open("/proc/pressure/cpu") as pressure:
        for line in pressure:
            if line.startswith("some"):
                return int(line.rsplit("total=", 1)[1])
    raise SystemExit("level.py: /proc/pressure/cpu has no 'some' line")


def loadavg1() -> float:
    with open("/proc/loadavg") as load:
        return float(load.read().split()[0])


def process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, utime + stime jiffies) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue  # the process ended while the table was read
        # the command name may hold spaces: the fields after it start past the last ')'
        after = text.rsplit(")", 1)[1].split()
        table[int(entry)] = (int(after[1]), int(after[11]) + int(after[12]))
    return table


def stack_jiffies(roots: set[int]) -> dict[int, int]:
    """utime + stime of every process under roots (roots included)."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = {}, [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        found[pid] = table[pid][1]
        todo.extend(children.get(pid, []))
    return found


def main() -> None:
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        raise SystemExit("usage: python3 level.py PIDFILE OUTFILE -- COMMAND...")
    with open(sys.argv[1]) as pids:
        roots = {int(p) for p in pids.read().split()}
    load_before, some_before = loadavg1(), cpu_some_us()
    busy_before, total_before = host_jiffies()
    stack_before = stack_jiffies(roots)
    wall_before = time.monotonic()
    with open(sys.argv[2], "w") as out:
        proc = subprocess.Popen(sys.argv[4:], stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
    wall_s = time.monotonic() - wall_before
    stack_after = stack_jiffies(roots)
    busy_after, total_after = host_jiffies()
    some_after, load_after = cpu_some_us(), loadavg1()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"level.py: {sys.argv[4]} exited with {status}")
    # processes born during the level count whole; those that ended during it are lost
    stack = sum(t - stack_before.get(pid, 0) for pid, t in stack_after.items())
    command_s = usage.ru_utime + usage.ru_stime
    host_pct = 100.0 * (busy_after - busy_before) / (total_after - total_before)
    stack_pct = (
        100.0 * (stack / CLOCK_TICKS + command_s) * CLOCK_TICKS / (total_after - total_before)
    )
    some_pct = 100.0 * (some_after - some_before) / (wall_s * 1e6)
    print(
        f"{load_before:.2f},{load_after:.2f},{some_pct:.1f},{host_pct:.1f},"
        f"{stack_pct:.1f},{host_pct - stack_pct:.1f}"
    )


if __name__ == "__main__":
    main()
