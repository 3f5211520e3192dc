"""A request attempt as the clients see it: when it was sent and whether anyone still waits."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.kernel.calendar import Wakeup

IN_FLIGHT = 0
ANSWERED = 1
ABANDONED = 2

# reply(request, ok): how every tier hands a request back to its caller.  ok=True: a response;
# ok=False: an error response (a full queue or refused connection inside the stack, 503)
# travelling back up; ok=CONNECTION_REFUSED (None, falsy): the server the client connects to
# had its listen queue full, so the client's SYN was dropped (Linux drops it rather than
# resetting, unless tcp_abort_on_overflow), and the client's kernel will retransmit it.
Reply = Callable[["Request", "bool | None"], None]
CONNECTION_REFUSED = None


class Request:
    __slots__ = (
        "attempt",
        "cause",
        "connection",
        "klass",
        "number",
        "origin",
        "recoverable",
        "sent",
        "state",
        "status",
        "syn_retransmits",
        "timer",
        "user",
        "worker",
    )

    def __init__(self, number: int, sent: float, attempt: int, origin: Any, user: Any) -> None:
        self.number = number
        self.sent = sent  # when the client sent it (its response-time clock starts here)
        self.state = IN_FLIGHT
        self.attempt = attempt  # 0 for the first attempt, k for the k-th retry
        self.origin = origin  # the client population that owns it
        self.timer: Wakeup | None = None  # the client's timeout wake-up, if any
        self.user = user  # the user / session / loop that sent it
        self.syn_retransmits = 0  # SYNs of this attempt retransmitted after a full listen queue
        # the client's persistent connection to the front, if keep-alive
        # the client connection it travels on (`sim.tiers.proxy.client_connections.Connection`),
        # when the front models connections; the kernel knows nothing of the tiers above it
        self.connection: Any = None
        self.worker = None  # the Apache child process serving it (ChildProcesses), if tracked
        self.status: int | None = None  # the HTTP status of an error response, set where it arose
        # why mod_jk's ajp13 worker failed it ("reply_timeout", "connect", "busy"), and whether
        # its lb worker may try it on another member (`sim.tiers.proxy.mod_jk`)
        self.cause: str | None = None
        self.recoverable = True
        self.klass = 0  # index of its request class ([[classes]]); 0: the one implicit class
