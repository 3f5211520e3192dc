"""Summarise `tiersim reproduce NAME --cross-validate --json` outputs (README tables).

    for s in seed000 seed001 seed002 seed003 seed004; do
        tiersim reproduce $s -r 3 --cross-validate --json > cv-$s.json; done
    PYTHONPATH=. python experiments/uncertainty/summarise.py cv-seed00*.json

Prints a Markdown row per figure and per experiment: error, 90 % prediction interval, covered,
and per experiment and overall the coverage and the median half-width relative to the
prediction; figures an operational law rejects are listed, not scored.

Then the widening each experiment's figures say its intervals need for 90 % coverage, and the
check of that number out of sample: each experiment's intervals widened by the factor the
*other* experiments' figures give (split-conformal calibration across experiments, Vovk et al.
2005; Barber et al. 2021), and how many of its figures that holds.
"""

from __future__ import annotations

import json
import statistics
import sys

from sim.studies.crossval import distance, half_width, summarise, widening
from sim.studies.rows import Row


def main(paths: list[str]) -> None:
    everything: list[Row] = []
    summaries = []
    by_experiment: dict[str, list[Row]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            rows = [Row(**{**r, "overrides": tuple(r["overrides"])}) for r in json.load(handle)]
        # a figure the source does not give (seed003's per-backend counts without keep-alive)
        rows = [r for r in rows if r.published is not None]
        everything += rows
        print(f"\n### {rows[0].experiment}\n")
        print("| figure | published | predicted | 90 % PI | error | in | most sensitive to |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            inside = "excl." if r.excluded else ("yes" if r.covered else "**no**")
            print(
                f"| {r.figure} | {r.published:g} | {r.simulated:.4g} | "
                f"[{r.pi_low:.4g}, {r.pi_high:.4g}] | {r.rel_error:+.1%} | {inside} | "
                f"{r.most_sensitive or ''} |"
            )
        summaries.append((rows[0].experiment, summarise(rows)))
        by_experiment[rows[0].experiment] = [
            r for r in rows if r.covered is not None and not r.excluded
        ]
    summaries.append(("all", summarise(everything)))
    print(
        "\n| experiment | scored | inside 90 % PI | coverage | median half-width | median abs error | excluded |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, s in summaries:
        print(
            f"| {name} | {s['figures']} | {s['covered']} | {s['coverage']:.0%} | "
            f"±{s['median_half_width']:.1%} | {s['median_abs_error']:.1%} | {len(s['excluded'])} |"
        )
    across_experiments(by_experiment)


def across_experiments(by_experiment: dict[str, list[Row]]) -> None:
    """Each experiment's figures against intervals widened by the other experiments' factor."""
    print(
        "\n| experiment | widening its own figures need | widening from the others | "
        "inside, widened | median half-width, widened |"
    )
    print("|---|---|---|---|---|")
    inside = total = 0
    widths = []
    for name, rows in by_experiment.items():
        own = widening([distance(r) for r in rows])
        others = widening([distance(r) for o, rs in by_experiment.items() if o != name for r in rs])
        held = sum(distance(r) <= others for r in rows)
        inside, total = inside + held, total + len(rows)
        widths += [half_width(r, others) for r in rows]
        print(
            f"| {name} | x{own:.2f} | x{others:.2f} | {held} of {len(rows)} | "
            f"±{statistics.median(half_width(r, others) for r in rows):.1%} |"
        )
    print(
        f"| all | | | {inside} of {total} ({inside / total:.0%}) | ±{statistics.median(widths):.1%} |"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
