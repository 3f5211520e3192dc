"""A request attempt as the clients see it: when it was sent and whether anyone still waits."""
from __future__ import annotations

from typing import Any, Callable

IN_FLIGHT = 0
ANSWERED = 1
ABANDONED = 2

# reply(request, ok): how every tier hands a request back to its caller.  ok=False means an
# error response (refused connection, full queue, 503) travelling back up the stack.
Reply = Callable[["Request", bool], None]


class Request:
    __slots__ = ("number", "sent", "state", "attempt", "origin", "timer", "user")

    def __init__(self, number: int, sent: float, attempt: int, origin: Any, user: Any) -> None:
        self.number = number
        self.sent = sent  # when the client sent it (its response-time clock starts here)
        self.state = IN_FLIGHT
        self.attempt = attempt  # 0 for the first attempt, k for the k-th retry
        self.origin = origin  # the client population that owns it
        self.timer = None  # the client's timeout wake-up, if any
        self.user = user  # the user / session / loop that sent it
