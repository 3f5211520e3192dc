"""Summarise `tiersim reproduce NAME --cross-validate --json` outputs (README tables).

    for s in seed000 seed001 seed002 seed003 seed004; do
        tiersim reproduce $s -r 3 --cross-validate --json > cv-$s.json; done
    PYTHONPATH=. python experiments/uncertainty/summarise.py cv-seed00*.json

Prints a Markdown row per figure and per experiment: error, 90 % prediction interval, covered,
and per experiment and overall the coverage and the median half-width relative to the
prediction; figures an operational law rejects are listed, not scored.
"""

from __future__ import annotations

import json
import sys

from sim.studies.crossval import summarise
from sim.studies.rows import Row


def main(paths: list[str]) -> None:
    everything: list[Row] = []
    summaries = []
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


if __name__ == "__main__":
    main(sys.argv[1:])
