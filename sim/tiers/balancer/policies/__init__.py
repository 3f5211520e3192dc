"""Balancer policies, each a small class behind one interface (`base.Policy`), by the names
their users know them by (the model file's `balancer.policy`).

Every module of this folder is imported here, and each `Policy` subclass registers itself
under its `policy_names`: a new policy is one class in one file (see CONTRIBUTING.md)."""

from __future__ import annotations

import importlib
import pkgutil

from sim.tiers.balancer.policies.base import REGISTRY, Policy

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

# the order of the reference table (`tiersim schema`); policies added later follow
_ORDER = [
    "round_robin",
    "random",
    "least_outstanding",
    "lighttpd_round_robin",
    "sqf",
    "static",
    "byrequests",
    "bytraffic",
    "bybusyness",
    "mod_jk_request",
    "mod_jk_session",
    "mod_jk_traffic",
    "mod_jk_busyness",
    "carp",
    "consistent_hash",
    "power_of_d",
    "p2c_peak_ewma",
    "join_idle_queue",
    "jboss_round_robin",
    "jboss_random_robin",
    "jboss_first_available",
    "jboss_first_available_identical_all_proxies",
]


def _ordered() -> list[str]:
    return [n for n in _ORDER if n in REGISTRY] + [n for n in REGISTRY if n not in _ORDER]


class _Registry(dict):
    """model-file name -> (class, the per-policy balancer parameters it reads), read live from
    the registry so that a policy defined after import (a plug-in, a test) is known too."""

    def _sync(self) -> None:
        if len(self) != len(REGISTRY):
            self.clear()
            self.update({n: (REGISTRY[n], REGISTRY[n].parameters) for n in _ordered()})


POLICIES = _Registry()


def policies() -> dict[str, tuple[type[Policy], tuple[str, ...]]]:
    POLICIES._sync()
    return POLICIES


def make_policy(name: str, weights, names, rng, **params) -> Policy:
    return REGISTRY[name](weights, names, rng, **params)


def policy_class(name: str) -> type[Policy]:
    return REGISTRY[name]


POLICIES._sync()
