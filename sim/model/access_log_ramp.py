"""`clients.ramp` read from an access log: the closed clients replay the log's users per bin.

    [clients]
    kind = "closed"
    think = 7.0
    ramp = {access_log = "access.log.gz", log_format = '%h %l %u %t "%r" %>s %b %D'}

is the same model as the list of `{users, over_s = 0, hold_s = bin_s}` steps that the log's
bins give by the interactive response time law, N = X × (Z + R): X the bin's arrivals per
second, Z the mean of `clients.think`, R the bin's mean response time from the log's `%D`
(`sim.measurements.user_profile` says how they are read, rounded to whole users with the
error carried, and what the conversion assumes).  The table takes the fields of the open
clients' `clients.schedule = {access_log = ...}` (`bin_s`, `scale`, `encoding`); `scale`
multiplies the arrivals, with the log's R (the users that a grown load needs if each request
took as long as it did that day).  `clients.users`, the ramp's peak, is the log's peak unless
given.  After the log's last bin the ramp holds its users (a closed ramp's last step holds),
where the open replay repeats the log.  The table is replaced by the steps when the model
file is read, so that everything downstream (the stability check, both engines' refusal or
support of `clients.ramp`) reads one ramp.
"""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sim.measurements.arrival_profile import LogFormatError
from sim.measurements.user_profile import ResponseProfile, response_profile, users_per_bin
from sim.model.access_log_schedule import log_path, log_spec
from sim.random.distributions import DistributionSpec, as_distribution

# A log that cannot be the ramp leaves, in the ramp's place, a table holding why under this
# key: the ramp's own validator raises it (`refusal`), so that the one line the model file
# gets names `clients.ramp`, not the whole `[clients]` table.
REFUSED = "__refused__"


def refusal(value: Any) -> str | None:
    """Why the log in `value` (the ramp as `closed_clients_from_access_log` left it) was
    refused, or None."""
    return value.get(REFUSED) if isinstance(value, dict) else None


def closed_clients_from_access_log(data: Any, base_dir: Path | None) -> Any:
    """The `[clients]` table of closed clients with a `ramp` table naming a log replaced by
    its steps (and `users` by their peak when not given); `{REFUSED: why}` in its place
    when the log cannot give them."""
    if not isinstance(data, dict):
        return data
    if isinstance(data.get("schedule"), dict) and "ramp" not in data:
        # the open clients' name for the same table: say where closed clients take it
        data = {key: value for key, value in data.items() if key != "schedule"}
        data["ramp"] = {
            REFUSED: "closed clients replay an access log as their ramp: write ramp = "
            "{access_log = ...} instead of schedule = {access_log = ...} (schedule is the open "
            "clients' rate)"
        }
        data.setdefault("users", 1)  # the ramp's line is the one problem
        return data
    table = data.get("ramp")
    if not isinstance(table, dict):
        return data
    data = dict(data)
    given = "users" in data
    data.setdefault("users", 1)  # the peak once the log is read; else the ramp's line is the one
    think_s = _think_s(data)
    if think_s is None:
        data["ramp"] = None  # clients.think's own line names the problem
        return data
    try:
        steps = ramp_from_access_log(table, think_s, data.get("script"), base_dir)
    except ValueError as exc:
        data["ramp"] = {REFUSED: str(exc)}
        return data
    data["ramp"] = steps
    if not given:
        data["users"] = max(step["users"] for step in steps)
    return data


def ramp_from_access_log(
    table: dict[str, Any], think_s: float, script: Any, base_dir: Path | None
) -> list[dict[str, float]]:
    """The `{users, over_s, hold_s}` steps of the log named by `table`, for users whose mean
    think time is `think_s`; a ValueError of one line for anything wrong."""
    if script is not None:
        raise ValueError(
            "a clients.script thinks for a different time after each step, and the users of a "
            "log (N = X × (Z + R)) need one mean think time: drop the script (clients.think), "
            'or replay the log on open clients (kind = "open", schedule = {access_log = ...})'
        )
    spec = log_spec(table)
    path, version = log_path(spec, base_dir)
    try:
        profile = _responses(path, version, spec.log_format, spec.bin_s, spec.encoding)
        users = users_per_bin(profile, think_s, spec.scale)
    except LogFormatError as exc:
        raise ValueError(str(exc)) from None
    if not any(users.users):
        raise ValueError(
            f"{path}: the log's users round to 0 in every bin (N = X × (Z + R) < 0.5 over the "
            "whole log); a longer bin_s, a larger scale, or open clients"
        )
    return [{"users": whole, "over_s": 0.0, "hold_s": users.bin_s} for whole in users.users]


def _think_s(data: dict[str, Any]) -> float | None:
    """Z: the mean of `clients.think` (0 when not given, as the schema's default); None when
    it is no distribution (its own validation says why)."""
    try:
        spec = _distribution().validate_python(data.get("think", 0.0))
    except ValidationError:
        return None
    return float(as_distribution(spec).mean)


@cache
def _distribution() -> TypeAdapter:
    # built when a log ramp is first read, not when the schema is imported
    return TypeAdapter(DistributionSpec)


@lru_cache(maxsize=8)
def _responses(
    path: Path, version: tuple[int, int] | None, log_format: str, bin_s: float, encoding: str
) -> ResponseProfile:
    # a sweep or a search reads the model once per point: a day's log is parsed once per
    # process (`version`, the file's mtime and size, makes an edited log read again); the law
    # is cheap, so a sweep of clients.think reads it once too
    return response_profile(path, log_format, bin_s, encoding)
