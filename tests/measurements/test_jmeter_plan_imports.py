"""`tiersim plan --jmx` reads a test plan without scipy.stats (1-2.5 s of CPU to import): only a
Gaussian or Poisson Random Timer's law needs it (`sim.measurements.formats.jmeter_timers`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_PLAN = ROOT / "tests" / "fixtures" / "measurements" / "jmeter" / "plan.jmx"


def test_a_plan_of_constant_timers_is_read_without_scipy_stats():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from sim.measurements.formats import jmeter_plan\n"
            f"path = {str(FIXTURE_PLAN)!r}\n"
            "static, search = jmeter_plan.read(path).groups\n"
            "print(static.think(path).spec, 'scipy.stats' in sys.modules)\n",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    assert out.strip() == "{'dist': 'deterministic', 'value': 0.25} False"
