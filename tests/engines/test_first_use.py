"""The compiled loop's first compilation is announced and never silent for long."""

from __future__ import annotations

import io
import time

from sim.engines.compiled import first_use


def test_a_compilation_is_announced_with_a_line_every_tick(monkeypatch):
    monkeypatch.setattr(first_use, "cached", lambda: False)
    monkeypatch.setattr(first_use, "_announced", False)
    monkeypatch.setattr(first_use, "TICK_S", 0.05)
    out = io.StringIO()
    with first_use.announced(out):
        # a "compilation" that lasts until three ticks have been written (or 10 s: then the
        # ticker is broken), so that a busy machine cannot make the test flaky
        deadline = time.monotonic() + 10.0
        while out.getvalue().count("still compiling") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("tiersim: compiling the compiled engine's loop")
    ticks = [line for line in lines if "still compiling" in line]
    assert len(ticks) >= 3, lines
    assert lines[-1].startswith("tiersim: compiled in")


def test_a_cached_loop_and_a_second_use_say_nothing(monkeypatch):
    monkeypatch.setattr(first_use, "_announced", False)
    monkeypatch.setattr(first_use, "cached", lambda: True)
    out = io.StringIO()
    with first_use.announced(out):
        pass
    monkeypatch.setattr(first_use, "cached", lambda: False)
    with first_use.announced(out):  # the process has used the loop once already
        pass
    assert out.getvalue() == ""


def test_the_cache_check_reads_numba_s_index():
    # the suite's own runs have compiled the loop: its index holds the entry
    from sim.engines.compiled.engine import run_trace  # noqa: F401 - imports the kernel
    from sim.engines.compiled.warm import warm

    warm()
    assert first_use.cached()


def test_a_stamp_that_does_not_match_the_source_is_not_warm(monkeypatch):
    """numba's index of the loop holds entries for the package's stamp as it was when they
    were compiled: a package edited since (another stamp) is not warm."""
    from sim.engines.compiled import kernel
    from sim.engines.compiled.warm import warm

    warm()
    assert kernel.is_warm()
    index = kernel.run_events._cache._cache_file
    monkeypatch.setattr(index, "_source_stamp", b"an edited package")
    assert not kernel.is_warm()


def test_a_lesson_says_when_its_first_simulation_compiles_the_engine(monkeypatch):
    """The first lesson's pause is numba compiling the engine: say so, with this machine's
    estimate, unless numba's
    cache holds the loop for the kernel as it is (`kernel.is_warm`)."""
    from sim.engines.compiled import kernel
    from sim.present import lessons

    monkeypatch.setattr(kernel, "is_warm", lambda: False)
    notice = lessons.engine_notice()
    assert lessons.COMPILING in notice
    assert "about a minute" not in notice  # an estimate for this machine, not a promise
    assert "of CPU" in notice or "minutes of one core" in notice
    monkeypatch.setattr(kernel, "is_warm", lambda: True)
    assert lessons.engine_notice() == ""
