"""The package's face as type checkers and editors see it; `__init__.py` imports each name on
first use (docs/api.md).  Every name is the defining module's own object, so its signature here
is the real one (tests/api/test_face.py checks it); no module `__getattr__`, so a misspelt
`sim.simulte` is a type error, not an `Any`."""

from sim import theory as theory
from sim.analytic.model_solver import NotProductForm as NotProductForm
from sim.api.arguments import ArgumentError as ArgumentError
from sim.api.capacity import Capacity as Capacity
from sim.api.capacity import capacity as capacity
from sim.api.measurements import estimate as estimate
from sim.api.measurements import import_database as import_database
from sim.api.measurements import import_measurements as import_measurements
from sim.api.measurements import operational_laws as operational_laws
from sim.api.measurements import plan_experiment as plan_experiment
from sim.api.measurements import read_measurements as read_measurements
from sim.api.measurements import write_measurements as write_measurements
from sim.api.models import load_model as load_model
from sim.api.models import parse_model as parse_model
from sim.api.runs import Simulation as Simulation
from sim.api.runs import SimulationError as SimulationError
from sim.api.runs import simulate as simulate
from sim.api.runs import solve as solve
from sim.api.studies import CalibrationResult as CalibrationResult
from sim.api.studies import Prediction as Prediction
from sim.api.studies import calibrate as calibrate
from sim.api.studies import load_calibration as load_calibration
from sim.api.studies import predict as predict
from sim.api.studies import reproduce as reproduce
from sim.api.studies import rows_frame as rows_frame
from sim.api.studies import sweep as sweep
from sim.model.load import ModelError as ModelError
from sim.model.schema import Model as Model
from sim.present import lessons as lessons

__version__: str
__all__: list[str]
