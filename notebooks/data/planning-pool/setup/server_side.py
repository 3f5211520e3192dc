"""What Tomcat saw at each load level: its access log (server.xml's pattern: begin in ms since
the epoch, %D in microseconds, the servlet's pool.wait.us, status, path) cut by levels.csv.

    python3 server_side.py ../levels.csv ../tomcat-access.log[.gz]

Prints per level the requests Tomcat served, the mean time a request spent in Tomcat once a
request thread had taken it (%D: the two sleeps, the wait for a permit and Tomcat's own work),
the mean and 95th percentile of the wait for a permit, and the share of requests that waited
more than 1 ms for one.  The time a request queued for a free request thread is not in %D: it
is the client's response time less %D less the proxy and the network.
"""

import csv
import gzip
import sys


def percentile(values: list[float], p: float) -> float:
    """The p-quantile, linear between order statistics (numpy's default)."""
    ordered = sorted(values)
    position = p * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


levels_path, log_path = sys.argv[1], sys.argv[2]
with open(levels_path, newline="") as f:
    levels = [
        (int(r["users"]), int(r["start_ms"]), int(r["duration_s"])) for r in csv.DictReader(f)
    ]
opener = gzip.open if log_path.endswith(".gz") else open
with opener(log_path, "rt") as f:
    requests = [line.split() for line in f if line.strip()]

print("users  requests  in_tomcat_mean_ms  pool_wait_mean_ms  pool_wait_p95_ms  waited_>1ms")
for users, start_ms, duration_s in levels:
    end_ms = start_ms + 1000 * duration_s
    level = [r for r in requests if start_ms <= int(r[0]) < end_ms]
    in_tomcat = [int(r[1]) / 1000 for r in level]
    pool_wait = [int(r[2]) / 1000 for r in level]
    waited = sum(w > 1.0 for w in pool_wait) / len(level)
    print(
        f"{users:5d}  {len(level):8d}  {sum(in_tomcat) / len(level):17.1f}"
        f"  {sum(pool_wait) / len(level):17.2f}  {percentile(pool_wait, 0.95):16.2f}"
        f"  {100 * waited:10.1f} %"
    )
