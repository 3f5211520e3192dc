"""A process about to run a study's many simulations loads the engines first, once.

`run.engine = "auto"` sends a small run to the reference engine while the process has not
loaded the compiled one (`sim.engines`: numba's start costs about half a second of CPU, what
the reference engine spends on a few tens of thousands of requests).  That is right for one
small `tiersim run`, and wrong for a calibration, a capacity search or a set of parameter
draws: hundreds of small runs, whose first ones would each run on the reference engine, 5 to
40 times slower, in every process, until their sizes add up.  And the first compiled run of a
process loads the loop's machine code from numba's cache (about 0.6 s of CPU).  A study calls
`load_engines` before its first run (the executors do, `sim.studies.executor`): every run of
it then goes where `auto` sends a run in a process that has paid the compiled engine's start
(the numbers are the same on both engines, bit for bit; only the time differs).  Done in the
parent before a process pool's workers fork from it, they inherit it all and start warm.
"""

from __future__ import annotations

import importlib

_loaded = False  # this process has loaded them (a forked worker inherits it)


def load_engines() -> None:
    """Import the run's modules and, where numba is installed, the compiled engine's, and load
    its loop's machine code with a run of a few requests when numba's cache holds it (a loop
    not compiled yet is compiled by the first real run, announced, not here).  Once a
    process."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    importlib.import_module("sim.run.simulate")
    from sim.engines import numba_missing

    if numba_missing() is not None:
        return
    from sim.engines.compiled import kernel

    if kernel.is_warm():
        from sim.engines.compiled.warm import warm

        warm()
