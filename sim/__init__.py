"""tiersim: discrete-event simulation of clustered Java web tiers.

The package's face, for notebooks and scripts (docs/api.md):

    import sim
    model = sim.load_model("models/demo.toml", ["clients.users=200"])
    run = sim.simulate(model, replications=3)
    run.to_frame()                     # one row per metric: mean, ci_low, ci_high, unit

    table = sim.import_measurements("jtl", ["users8.jtl"], window_s=10)
    sim.estimate(table)                # service demands (the utilisation law), a DataFrame
    fit = sim.calibrate("experiments/seed004")
    sim.predict("models/x.toml", fit)  # prediction intervals over the fit's parameters
    sim.capacity("models/demo.toml", "p95<1.0", vary="clients.users")
    sim.theory.mmc(8.0, 1.0, 10)       # queueing formulas

Every name is imported on first use, so `import sim` stays cheap (a short `tiersim run` does
not pay for pandas or scipy); `__init__.pyi` names them for type checkers and editors, so
that the package's root imports nothing of the layers below it.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# name on the face -> the module that defines it
_FACE = {
    "load_model": "sim.api.models",
    "parse_model": "sim.api.models",
    "ModelError": "sim.model.load",
    "Model": "sim.model.schema",
    "ArgumentError": "sim.api.arguments",
    "simulate": "sim.api.runs",
    "Simulation": "sim.api.runs",
    "SimulationError": "sim.api.runs",
    "solve": "sim.api.runs",
    "NotProductForm": "sim.analytic.model_solver",
    "import_measurements": "sim.api.measurements",
    "import_database": "sim.api.measurements",
    "read_measurements": "sim.api.measurements",
    "write_measurements": "sim.api.measurements",
    "estimate": "sim.api.measurements",
    "operational_laws": "sim.api.measurements",
    "plan_experiment": "sim.api.measurements",
    "calibrate": "sim.api.studies",
    "CalibrationResult": "sim.api.studies",
    "reproduce": "sim.api.studies",
    "rows_frame": "sim.api.studies",
    "load_calibration": "sim.api.studies",
    "predict": "sim.api.studies",
    "Prediction": "sim.api.studies",
    "capacity": "sim.api.capacity",
    "Capacity": "sim.api.capacity",
    "sweep": "sim.api.studies",
}
# modules on the face -> their module
_MODULES = {"theory": "sim.theory", "lessons": "sim.present.lessons"}

__all__ = [
    "ArgumentError",
    "CalibrationResult",
    "Capacity",
    "Model",
    "ModelError",
    "NotProductForm",
    "Prediction",
    "Simulation",
    "SimulationError",
    "__version__",
    "calibrate",
    "capacity",
    "estimate",
    "import_database",
    "import_measurements",
    "lessons",
    "load_calibration",
    "load_model",
    "operational_laws",
    "parse_model",
    "plan_experiment",
    "predict",
    "read_measurements",
    "reproduce",
    "rows_frame",
    "simulate",
    "solve",
    "sweep",
    "theory",
    "write_measurements",
]


def __getattr__(name: str) -> Any:
    """The face's names, imported on first use (PEP 562)."""
    if name in _FACE:
        value = getattr(import_module(_FACE[name]), name)
    elif name in _MODULES:
        value = import_module(_MODULES[name])
    else:
        raise AttributeError(f"module 'sim' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
