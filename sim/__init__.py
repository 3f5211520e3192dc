"""tiersim: discrete-event simulation of clustered Java web tiers."""

__version__ = "0.1.0"
