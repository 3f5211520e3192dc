"""The balancer: the dispatcher, its policies (one object each, owning its parameters) and the
session table of sticky sessions.
"""
