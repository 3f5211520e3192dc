"""Model files: the schema (`schema`), loading with overrides and readable errors (`load`)."""

from sim.model.load import ModelError, load_model, parse_model
from sim.model.schema import Model

__all__ = ["Model", "ModelError", "load_model", "parse_model"]
