"""Randomness: distributions as small objects with analytic moments, and one named stream per
component and purpose (common random numbers).
"""
