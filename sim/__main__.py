"""`python -m sim ARGS` is `tiersim ARGS` (useful from a source checkout or a worktree)."""

from sim.cli import entry

entry()
