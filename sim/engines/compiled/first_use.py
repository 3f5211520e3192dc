"""The compiled loop's first use after installing: numba compiles it to machine code once (a
minute or more on two cores) and caches it beside the source; every later process loads it in
a few hundredths of a second, after numba's own start (about half a second).  A compilation is
never silent: it is announced on standard error with how long it takes, and a line every 5 s
says it is still going (a notebook, a CI log and a terminal all show standard error).
`sim.engines.compiled.warm` compiles it ahead of use: the README's set-up (`make demo`,
`make test`) runs it, so a lesson or a calibration never pauses on it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

TICK_S = 5.0  # a line this often while compiling: never 10 s without one, even late by a busy core


def cached() -> bool:
    """The loop's machine code is in numba's cache for the kernel's source as it is now (an
    edited or newly installed kernel is not: `sim.engines.compiled.kernel.is_warm`)."""
    from sim.engines.compiled.kernel import is_warm

    return is_warm()


_announced = False


@contextmanager
def announced(stream=None) -> Iterator[None]:
    """Around the loop's first call in a process: when numba must compile it, say so at once
    and every TICK_S seconds until it is done."""
    global _announced
    if _announced or cached():
        _announced = True
        yield
        return
    _announced = True
    out = stream if stream is not None else sys.stderr
    from sim.engines.compile_estimate import estimate

    expected = estimate()  # this machine's speed and load; None without a load average
    started = time.perf_counter()
    print(
        "tiersim: compiling the compiled engine's loop, once after installing "
        f"({expected.phrase() if expected else 'minutes of one core'}; "
        "later runs load it from the cache)",
        file=out,
        flush=True,
    )
    done = threading.Event()

    def tick() -> None:
        while not done.wait(TICK_S):
            elapsed = time.perf_counter() - started
            line = expected.progress(elapsed) if expected else f"still compiling ({elapsed:.0f} s)"
            print(f"tiersim: {line}", file=out, flush=True)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        print(
            f"tiersim: compiled in {time.perf_counter() - started:.0f} s (cached for later runs)",
            file=out,
            flush=True,
        )
