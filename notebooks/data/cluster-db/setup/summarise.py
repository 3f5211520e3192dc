"""Summarise the cluster-db test per cluster size K and load level, from the files run.sh wrote.

    python3 setup/summarise.py [DATA_DIR] [-o summary.csv]      (DATA_DIR defaults to .)

Reads DATA_DIR/k<K>/levels.csv (the kept attempt of each level), k<K>/users<N>.jtl,
k<K>/pg/users<N>.{before,after}.*.csv and k<K>/access-node<I>.log.gz, and prints two
Markdown tables and the capacity at each K.  Python's standard library only.

Client side (the JTL), over the samples that start at least WARMUP_S after the level's first
sample:
- throughput: successful samples / (last start - window start), requests per second;
- mean, p95: of the successful samples' `elapsed` (JMeter's ms); p95 is the nearest-rank
  95th percentile (the smallest elapsed with at least 95 % of the samples at or below it);
- errors: the share of samples in the window with success != true.

Database side (pg_stat_statements, pg_stat_wal, pg_stat_database: after - before the level,
so the whole level including its warm-up; run.sh takes them just before JMeter starts and just
after it ends):
- UPDATE mean: total_exec_time / calls of `UPDATE hot ...` -- the statement that waits for
  the row lock, so its time is the lock's queue plus the update itself;
- pg_sleep mean: the work under the lock; read mean: the SELECT outside it;
- flush mean: pg_stat_wal wal_sync_time / wal_sync (track_wal_io_timing), one WAL flush;
- UPDATEs/s: the UPDATE's calls over the level's length (one per request that reached it).
Server side (each node's access log, the requests that started within the level): the mean
time waiting for a pooled connection (db.borrow.us), the mean COMMIT as the servlet saw it
(db.commit.us: the flush and its round trip) and the mean time in Tomcat (%D: from the request's
parsing to its answer, the time it held its request thread; not its queue for a thread).

The capacity for p95 < SLO_MS (300 ms, chosen before the test): the largest number of users
whose p95 meets it, by linear interpolation of p95 in the users between the last measured level
that meets it (with at most ERROR_BUDGET of errors) and the first that does not.
"""

import csv
import glob
import gzip
import os
import sys

WARMUP_S = 2.0
SLO_MS = 300.0
ERROR_BUDGET = 0.01


def jtl_figures(path: str) -> dict[str, float]:
    with open(path, newline="") as jtl:
        rows = [
            (int(r["timeStamp"]), int(r["elapsed"]), r["success"] == "true")
            for r in csv.DictReader(jtl)
        ]
    if not rows:
        raise SystemExit(f"{path}: no samples")
    first = min(t for t, _, _ in rows)
    start = first + WARMUP_S * 1000
    window = [r for r in rows if r[0] >= start]
    ok = sorted(e for _, e, s in window if s)
    length_s = (max(t for t, _, _ in window) - start) / 1000
    rank = -(-95 * len(ok) // 100)  # ceil(0.95 n)
    return {
        "samples": len(window),
        "throughput": len(ok) / length_s,
        "mean_ms": sum(ok) / len(ok),
        "p95_ms": float(ok[rank - 1]),
        "errors": 1 - len(ok) / len(window),
    }


def read_one(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def statement_delta(pg: str, users: str, starts: str) -> tuple[float, float]:
    """(calls, total_exec_time in ms) over the level of the statement whose text starts with
    `starts`."""

    def find(when: str) -> tuple[float, float]:
        for row in read_one(f"{pg}/users{users}.{when}.pg_stat_statements.csv"):
            if row["query"].startswith(starts):
                return float(row["calls"]), float(row["total_exec_time"])
        return 0.0, 0.0

    calls0, total0 = find("before")
    calls1, total1 = find("after")
    if calls1 <= calls0:
        raise SystemExit(f"{pg}/users{users}.after.pg_stat_statements.csv: no '{starts}' call")
    return calls1 - calls0, total1 - total0


def statement_mean_ms(pg: str, users: str, starts: str) -> float:
    calls, total_ms = statement_delta(pg, users, starts)
    return total_ms / calls


def statement_calls(pg: str, users: str, starts: str) -> float:
    return statement_delta(pg, users, starts)[0]


def delta(pg: str, users: str, view: str, field: str) -> float:
    before = read_one(f"{pg}/users{users}.before.{view}.csv")[0]
    after = read_one(f"{pg}/users{users}.after.{view}.csv")[0]
    return float(after[field]) - float(before[field])


def access_means_ms(kdir: str, start_ms: int, length_s: int) -> tuple[float, float, float]:
    """Mean %D, db.borrow.us and db.commit.us (as ms) of the requests started in the level."""
    tomcat, borrow, commit, n = 0, 0, 0, 0
    for path in sorted(glob.glob(f"{kdir}/access-node*.log.gz")):
        with gzip.open(path, "rt") as log:
            for line in log:
                f = line.split()
                if f[5] == "200" and start_ms <= int(f[0]) < start_ms + length_s * 1000:
                    tomcat, borrow, commit = (
                        tomcat + int(f[1]),
                        borrow + int(f[2]),
                        commit + int(f[4]),
                    )
                    n += 1
    if not n:
        return float("nan"), float("nan"), float("nan")
    return tomcat / n / 1000, borrow / n / 1000, commit / n / 1000


def capacity(levels: list[dict[str, float]]) -> str:
    below = None
    for level in sorted(levels, key=lambda r: r["users"]):
        if level["p95_ms"] < SLO_MS and level["errors"] <= ERROR_BUDGET:
            below = level
            continue
        if below is None:
            return f"below {level['users']:.0f} users (the lightest level misses it)"
        u0, p0, u1, p1 = below["users"], below["p95_ms"], level["users"], level["p95_ms"]
        if level["errors"] > ERROR_BUDGET or p1 <= p0:
            return f"between {u0:.0f} and {u1:.0f} users"
        users = u0 + (u1 - u0) * (SLO_MS - p0) / (p1 - p0)
        return f"{users:.1f} users (between the levels {u0:.0f} and {u1:.0f})"
    return f"above {below['users']:.0f} users (the heaviest level meets it)"


def main() -> None:
    try:
        summarise(sys.argv[1:])
    except OSError as e:
        raise SystemExit(f"{e.filename}: {e.strerror}; expected the files run.sh writes") from None
    except (KeyError, ValueError, IndexError) as e:
        raise SystemExit(
            f"summarise.py: unexpected content ({e!r}); expected run.sh's files"
        ) from None


def summarise(args: list[str]) -> None:
    out = None
    if "-o" in args:
        at = args.index("-o")
        out = args[at + 1]
        del args[at : at + 2]
    data = args[0] if args else "."
    kdirs = sorted(glob.glob(os.path.join(data, "k[0-9]")))
    if not kdirs:
        raise SystemExit(f"{data}: no k<K>/ folder; expected the folder run.sh writes into")
    table = []
    for kdir in kdirs:
        for row in read_one(f"{kdir}/levels.csv"):
            if row["kept"] != "1":
                continue
            users, pg = row["users"], f"{kdir}/pg"
            figures = jtl_figures(f"{kdir}/users{users}.jtl")
            length_s = int(row["duration_s"])
            tomcat_ms, borrow_ms, commit_ms = access_means_ms(kdir, int(row["start_ms"]), length_s)
            table.append(
                {
                    "nodes": int(row["nodes"]),
                    "users": int(users),
                    **figures,
                    "update_ms": statement_mean_ms(pg, users, "UPDATE hot"),
                    "sleep_ms": statement_mean_ms(pg, users, "SELECT pg_sleep"),
                    "read_ms": statement_mean_ms(pg, users, "SELECT balance"),
                    "flush_ms": delta(pg, users, "pg_stat_wal", "wal_sync_time")
                    / delta(pg, users, "pg_stat_wal", "wal_sync"),
                    "updates_per_s": statement_calls(pg, users, "UPDATE hot") / length_s,
                    "in_tomcat_ms": tomcat_ms,
                    "borrow_ms": borrow_ms,
                    "servlet_commit_ms": commit_ms,
                    "attempt": int(row["attempt"]),
                    "others_busy_pct": float(row["others_busy_pct"]),
                    "cpu_some_pct": float(row["cpu_some_pct"]),
                    "loadavg1": float(row["loadavg1_before"]),
                }
            )
    print(
        "| K | users | samples | X [1/s] | mean [ms] | p95 [ms] | errors | others' CPU | "
        "CPU pressure | load avg |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in table:
        again = " (repeat)" if r["attempt"] > 1 else ""
        print(
            f"| {r['nodes']} | {r['users']}{again} | {r['samples']} | {r['throughput']:.1f} | "
            f"{r['mean_ms']:.1f} | {r['p95_ms']:.0f} | {100 * r['errors']:.2f} % | "
            f"{r['others_busy_pct']:.0f} % | {r['cpu_some_pct']:.0f} % | {r['loadavg1']:.2f} |"
        )
    print()
    print(
        "| K | users | UPDATE mean [ms] | pg_sleep mean [ms] | read mean [ms] | WAL flush mean "
        "[ms] | COMMIT in servlet [ms] | borrow wait [ms] | in Tomcat [ms] | UPDATEs/s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in table:
        print(
            f"| {r['nodes']} | {r['users']} | {r['update_ms']:.2f} | {r['sleep_ms']:.2f} | "
            f"{r['read_ms']:.3f} | {r['flush_ms']:.2f} | {r['servlet_commit_ms']:.2f} | "
            f"{r['borrow_ms']:.2f} | {r['in_tomcat_ms']:.1f} | {r['updates_per_s']:.1f} |"
        )
    print()
    for k in sorted({r["nodes"] for r in table}):
        print(
            f"K = {k}: capacity for p95 < {SLO_MS:.0f} ms: "
            f"{capacity([r for r in table if r['nodes'] == k])}"
        )
    if out:
        with open(out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(table[0]))
            writer.writeheader()
            for r in table:
                writer.writerow(
                    {k: f"{v:.4g}" if isinstance(v, float) else v for k, v in r.items()}
                )


if __name__ == "__main__":
    main()
