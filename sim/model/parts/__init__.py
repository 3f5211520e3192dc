"""The stack's parts: typed, frozen values compiled once from the model, one concept each.

The engines and `tiersim solve` read these parts (and the plan, `sim.model.plan`) instead of
the model file's schema: a decision -- is this CPU dedicated, which status a read timeout
answers, which probes a run records and in which order -- is made here once, not again in
each engine.
"""
