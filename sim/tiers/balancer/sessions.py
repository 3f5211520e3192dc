"""HTTP sessions as the balancer sees them: created by the member that served a client's
first request, named `<id>.<jvmRoute>` so that the route suffix (Tomcat `jvmRoute`, mod_jk
and mod_proxy_balancer `route`) brings the client back to that member.

A session lives in one member's memory.  A request of the session that lands elsewhere -
failover after a crash or an error state, or no stickiness at all - finds no session there:
the session is lost (the user is logged out, the cart is empty) and a new one is created on
the new member, unless a replica exists there.  Replication is another mechanism; it plugs
in through `replicated(user, from_member, to_member) -> bool` (None: no replication).
A crash also loses the sessions of the member that crashed, even if the client comes back
to it after the restart: each member's crash count (`epoch`) is stored with the route.
"""

from __future__ import annotations

from collections.abc import Callable


class SessionTable:
    __slots__ = ("created", "lost", "replicated", "routes")

    def __init__(self, replicated: Callable[[object, int, int], bool] | None = None) -> None:
        self.routes: dict = {}  # user -> (member, its crash count when the session was made)
        self.created = 0
        self.lost = 0
        self.replicated = replicated

    def route(self, user) -> int | None:
        """The member named by the session id's route suffix, if the user has a session."""
        entry = self.routes.get(user)
        return None if entry is None else entry[0]

    def arrive(self, user, member: int, epoch: int) -> None:
        """A request of `user` was sent to `member` (whose crash count is `epoch`)."""
        entry = self.routes.get(user)
        if entry == (member, epoch):
            return
        if entry is not None:
            home, _home_epoch = entry
            replica = self.replicated is not None and self.replicated(user, home, member)
            if not replica:
                self.lost += 1
                self.created += 1
        else:
            self.created += 1
        self.routes[user] = (member, epoch)

    def forget(self, user) -> None:
        """The session ended (the user left)."""
        self.routes.pop(user, None)
