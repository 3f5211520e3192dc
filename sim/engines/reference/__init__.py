"""The reference engine: the stack's components (`sim.tiers`) on the SimPy calendar
(`sim.kernel`), assembled from the plan, every hook connected in one place, run to a trace."""
