"""The text of `tiersim estimate`: the demands, each run's response-time law and response
times with their errors, and the demand's shape, as tables on standard output."""

from __future__ import annotations

import json
import math

import click


def _cell(value: float) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.4g}"


def _ms(value: float) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value * 1000:.4g}"


def share_text(share: float) -> str:
    """A failed share as `sim.present.failures.percent` writes it (that layer lies above this
    one): `0 %`, `0.31 %`, `25.0 %`; `-` when the file does not say."""
    if not math.isfinite(share):
        return "-"
    if share == 0:
        return "0 %"
    value = 100 * share
    return f"{value:.2g} %" if value < 10 else f"{value:.1f} %"


def _failed_note(named: list[tuple[str, float]], answered: str = "the times") -> list[str]:
    """The lines under a table with a `failed` column: what it counts, and the runs whose file
    does not say (`named`: each run with its failed share)."""
    lines = [
        "failed: the share of the run's requests that failed (count.errors + count.timed_out, "
        f"of all that ended); {answered} are of the answered requests only"
    ]
    unsaid = [run for run, share in named if not math.isfinite(share)]
    if unsaid:
        lines.append(
            f"failed '-' ({', '.join(dict.fromkeys(unsaid))}): the file does not say which "
            "requests failed"
        )
    return lines


def _inline(spec: dict) -> str:
    """A spec as a TOML inline table, as a model file holds it."""
    parts = [f"{k} = {json.dumps(v) if isinstance(v, str) else f'{v:g}'}" for k, v in spec.items()]
    return "{ " + ", ".join(parts) + " }"


def print_responses(responses, failed_explained: bool = False) -> None:
    """`failed_explained`: the response-time law's table above said what `failed` counts."""
    from sim.measurements.sampling import min_samples
    from sim.measurements.table import PERCENTILES, RESPONSE

    if not responses:
        return
    click.echo(
        "response times per run (class total, successful samples) [ms], each ± its standard "
        "error (batch means); '± -' where the run has fewer samples than the error needs"
    )
    heads = [c.removeprefix("response.") for c in RESPONSE]
    click.echo(f"  {'run':<20} {'samples':>8} {'failed':>8} " + " ".join(f"{h:>16}" for h in heads))
    why: dict[str, list[str]] = {}  # the reason a run's cells are empty -> the runs
    for level in responses:
        cells = []
        for column in RESPONSE:
            value, error = level.values[column], level.std_errors[column]
            if not math.isfinite(value):
                cells.append("n/a")
                why.setdefault(_no_value(level, column), []).append(level.run)
            else:
                shown = f"{error * 1000:.2g}" if math.isfinite(error) else "-"
                cells.append(f"{_ms(value)} ± {shown}")
        click.echo(
            f"  {level.run:<20} {level.samples:>8} {share_text(level.failed_share):>8} "
            + " ".join(f"{c:>16}" for c in cells)
        )
    for reason, runs in why.items():
        named = ", ".join(dict.fromkeys(runs))
        click.echo(f"  n/a ({named}): {reason}")
    if not failed_explained:
        for line in _failed_note([(level.run, level.failed_share) for level in responses]):
            click.echo(f"  {line}")
    needs = ", ".join(
        [f"mean {min_samples(None)}", *(f"p{p} {min_samples(p)}" for p in PERCENTILES)]
    )
    click.echo(f"  samples an error needs, n >= 20/(1 - p): {needs}")


def _no_value(level, column: str) -> str:
    """Why a run has no value in a response-time column, with what would give one."""
    if level.samples == 0:
        return "no successful sample in the kept windows"
    if level.windows > 1 and column != "response.mean":
        return (
            f"the run is cut into {level.windows} windows, and the percentiles of windows do not "
            "make the run's: import it as one window per run (`tiersim import` without "
            "--window) to see its percentiles"
        )
    return (
        "the table holds none for this run (its load-test file reports no such figure); "
        "import the per-sample file (a JTL, k6's JSON) to get them"
    )


def _with_error(value: float, error: float, scale: float = 1000.0) -> str:
    shown = f"{value * scale:.4g}"
    return f"{shown} ± {error * scale:.2g}" if math.isfinite(error) else shown


def _describe(candidate, least_s: float) -> str:
    errors = candidate.std_errors
    if candidate.shifted:
        offset = f"c = {_with_error(candidate.offset_s, errors['offset_s'])} ms"
        if candidate.offset_s >= least_s - 1e-12:
            offset += " (at the least sample)"
    else:
        offset = "c = 0"
    text = (
        f"{candidate.name}: {offset}, S mean {_with_error(candidate.mean_s, errors['mean_s'])} ms"
    )
    if candidate.family == "hyperexponential":
        text += f", scv {candidate.cv**2:.3g}"
    elif candidate.family != "exponential":
        text += f", cv {_with_error(candidate.cv, errors['cv'], 1.0)}"
    return text


def print_shape(shape, csv_path) -> None:
    best = shape.best
    click.echo(
        f"shape of the demand from {shape.source}: {shape.samples} successful samples, "
        f"resolution {_ms(shape.resolution_s)} ms, least {_ms(shape.minimum_s)} ms, mean "
        f"{_ms(shape.mean_s)} ms, cv {shape.cv:.3g}, variance inflation {shape.inflation:.3g}"
    )
    click.echo(
        "  R = c + S: c every request pays alike (network, proxy, constant work), S varies; "
        "ranked by AIC"
    )
    click.echo(
        f"  best: {_describe(best, shape.minimum_s)}; KS distance {best.ks_distance:.3f} "
        f"(limit {shape.ks_limit:.3f})"
    )
    click.echo(
        f"  model file: offset = {_inline(best.offset_spec())}, demand = {_inline(best.spec())}"
    )
    for alternative in shape.alternatives:
        click.echo(
            f"  nearly as good (delta AIC {alternative.delta_aic:.2g}): "
            f"{_describe(alternative, shape.minimum_s)}"
        )
    if not shape.alternatives:
        click.echo("  nearly as good (delta AIC <= 2): none")
    if not shape.fits:
        source = csv_path or "FILE.csv (write it with --shape-csv FILE.csv)"
        click.echo(
            "  no family is within the KS limit: use the samples themselves, demand = "
            f'{{ dist = "empirical", csv = "{source}", column = "demand_s" }}'
        )
    click.echo(
        f"  {'candidate':<26} {'c [ms]':>8} {'mean [ms]':>10} {'cv':>7} {'delta AIC':>10} {'KS':>7}"
    )
    for c in shape.candidates:
        click.echo(
            f"  {c.name:<26} {_ms(c.offset_s) or '0':>8} {_ms(c.mean_s):>10} {c.cv:>7.3g} "
            f"{c.delta_aic:>10.1f} {c.ks_distance:>7.3f}"
        )


def print_demands(results, level: float) -> None:
    for result in results:
        click.echo(
            f"{result.host}: {result.method}; {result.windows} window(s), residual sd "
            f"{_cell(result.residual_std)}, condition number {_cell(result.condition_number)}"
        )
        click.echo(
            f"  {'class':<20} {'demand [s]':>11} {'std error':>11} "
            f"{f'{level:.0%} low':>11} {f'{level:.0%} high':>11}"
        )
        for demand in result.demands:
            flag = "  (at 0: bound)" if demand.at_bound else ""
            click.echo(
                f"  {demand.name:<20} {_cell(demand.demand_s):>11} {_cell(demand.std_error_s):>11} "
                f"{_cell(demand.low_s):>11} {_cell(demand.high_s):>11}{flag}"
            )


def print_laws(laws, table_file: str, results) -> None:
    """Each run's users, throughput, response time and the think time the response-time law
    gives, Z = N/X - R."""
    if not results:
        click.echo(
            f"{table_file}: no <host>.cpu.utilization column (import with --utilisation FILE for "
            "the utilisation law); the lowest load's response time bounds the demand from above"
        )
    click.echo("response-time law per run (class total): think time Z = N/X - R")
    click.echo(
        f"  {'run':<20} {'users N':>8} {'X [1/s]':>10} {'R [s]':>10} {'Z [s]':>10} {'requests':>9}"
        f" {'failed':>8}"
    )
    for law in laws:
        click.echo(
            f"  {law.run:<20} {_cell(law.users):>8} {_cell(law.throughput):>10} "
            f"{_cell(law.response_mean_s):>10} {_cell(law.think_s):>10} {law.completed:>9} "
            f"{share_text(law.failed_share):>8}"
        )
    for line in _failed_note([(law.run, law.failed_share) for law in laws], "X, R and requests"):
        click.echo(f"  {line}")
    failing = [law for law in laws if law.failed_share > 0 and math.isfinite(law.think_s)]
    if failing:
        named = ", ".join(f"{law.run} {share_text(law.failed_share)}" for law in failing)
        click.echo(
            f"  Z reads high where requests failed ({named}): the users also spent the failed "
            "requests and the think after them, which neither X nor R holds (about f·N/X too "
            "high for a failed share f); take Z from a run without failures"
        )
