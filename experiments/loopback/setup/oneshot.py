"""One-shot clients for the loopback test: N threads each send one GET at the same instant and
read until the server closes the connection, or give up at their deadline.

Per client it writes when it connected, when the first byte and the server's close (EOF) came,
the HTTP status, and whether it was served or gave up -- the clients' own view, measured from
the common start.  A client holds its socket `--hold` seconds after EOF before closing it (0:
at once).  With `--httpd-pid-file` it also samples httpd's children every 20 ms and writes each
child's fork time (from /proc, 10-ms resolution) beside the clients' start.

    python3 oneshot.py --port 8095 --path /app/sleep?ms=5000 --clients 100 --deadline 120 \
        --out clients.csv [--hold 5] [--httpd-pid-file httpd.pid --children children.csv]
"""

from __future__ import annotations

import argparse
import csv
import os
import socket
import threading
import time

FIELDS = ("client", "connected_s", "first_byte_s", "eof_s", "status", "outcome")


def one_client(
    number: int,
    args: argparse.Namespace,
    start: threading.Barrier,
    t0: list[float],
    rows: list[dict],
) -> None:
    request = (f"GET {args.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").encode()
    start.wait()
    began = t0[0]
    deadline = began + args.deadline
    row: dict = {"client": number, "connected_s": "", "first_byte_s": "", "eof_s": ""}
    row["status"] = ""
    received = b""
    sock = None
    try:
        sock = socket.create_connection(("127.0.0.1", args.port), timeout=args.deadline)
        row["connected_s"] = f"{time.monotonic() - began:.6f}"
        sock.sendall(request)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            chunk = sock.recv(65536)
            now = time.monotonic()
            if not received and chunk:
                row["first_byte_s"] = f"{now - began:.6f}"
            if not chunk:
                row["eof_s"] = f"{now - began:.6f}"
                break
            received += chunk
        status = received.split(b" ", 2)[1].decode() if received.startswith(b"HTTP/") else ""
        row["status"] = status
        row["outcome"] = "served" if status == "200" else "error"
        if args.hold > 0:
            time.sleep(args.hold)
    except TimeoutError:
        row["outcome"] = "gave_up"
    except OSError as error:
        row["outcome"] = f"error:{error.errno}"
    finally:
        if sock is not None:
            sock.close()
    rows.append(row)


def sample_children(pid_file: str, stop: threading.Event, seen: dict[int, float]) -> None:
    """httpd's children (the parent's child processes) and their fork times (s since boot:
    CLOCK_BOOTTIME, the clock of /proc/PID/stat's starttime)."""
    ticks = os.sysconf("SC_CLK_TCK")
    with open(pid_file) as f:
        parent = int(f.read().strip())
    while not stop.is_set():
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in seen:
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:  # field 4, ppid
                seen[int(name)] = int(fields[19]) / ticks  # field 22, starttime
        stop.wait(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8095)
    parser.add_argument("--path", required=True)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--deadline", type=float, default=120.0)
    parser.add_argument("--hold", type=float, default=0.0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--httpd-pid-file")
    parser.add_argument("--children")
    args = parser.parse_args()

    rows: list[dict] = []
    t0 = [0.0]
    epoch0 = [0.0]
    boot0 = [0.0]

    def at_start() -> None:
        t0[0] = time.monotonic()
        epoch0[0] = time.time()
        boot0[0] = time.clock_gettime(time.CLOCK_BOOTTIME)

    start = threading.Barrier(args.clients, action=at_start)
    stop = threading.Event()
    children: dict[int, float] = {}
    sampler = None
    if args.httpd_pid_file:
        sampler = threading.Thread(
            target=sample_children, args=(args.httpd_pid_file, stop, children), daemon=True
        )
        sampler.start()
        time.sleep(0.1)  # the children forked at the start are seen before the load begins
    threads = [
        threading.Thread(target=one_client, args=(k, args, start, t0, rows))
        for k in range(args.clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    if sampler is not None:
        sampler.join()
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(sorted(rows, key=lambda row: row["client"]))
    print(f"start_epoch_s={epoch0[0]:.6f}")
    if args.children:
        with open(args.children, "w") as f:
            f.write("pid,forked_after_start_s\n")
            for pid, forked in sorted(children.items(), key=lambda item: item[1]):
                f.write(f"{pid},{forked - boot0[0]:.2f}\n")
    served = sum(1 for row in rows if row["outcome"] == "served")
    gave_up = sum(1 for row in rows if row["outcome"] == "gave_up")
    eofs = [float(row["eof_s"]) for row in rows if row["eof_s"]]
    print(f"served={served} gave_up={gave_up} last_eof_s={max(eofs) if eofs else float('nan'):.3f}")


if __name__ == "__main__":
    main()
