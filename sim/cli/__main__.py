"""`python -m sim.cli`: the same as the `tiersim` command."""

from sim.cli import entry

entry()
