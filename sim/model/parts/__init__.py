"""The stack's parts: typed, frozen values compiled once from the model, one concept each.

The engines and `tiersim solve` read these parts (and the plan, `sim.model.plan`) instead of
the model file's schema: a decision -- is this CPU dedicated, which status a read timeout
answers, which probes a run records and in which order -- is made here once, not again in
each engine.

Every module of this folder is imported here, so a part that registers itself with its
holder (a mechanism around the database's call, `database.AROUND_CALL`) is one file.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
