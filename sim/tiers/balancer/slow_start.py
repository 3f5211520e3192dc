"""The balancer's slow start: a member that joins takes its share by degrees.

HAProxy's `slowstart <time>` (server keyword): a server that comes up runs at full speed only
after this time, its weight growing linearly (for a dynamic weighted algorithm such as
`roundrobin`) from 1 % of its weight to all of it, recomputed at each health check (`inter`,
2 s by default).  An AWS target group's `slow_start.duration_seconds` (30..900 s) and nginx
Plus's `server ... slow_start=` ramp the share linearly as well; Envoy's slow start mode scales
the weight by `max(MinWeightPercent, t / window)`.  Apache's mod_proxy_balancer has none: a
worker that is enabled takes its full `loadfactor` at once (so `slow_start_s = 0`).

Modelled as HAProxy does it: the member's weight is `weight x max(t / slow_start_s, 1 %)`,
`t` the time since it joined, recomputed every `STEP_S` and whole at `slow_start_s`.  Only a
policy that reads the weights at every pick (`Policy.reads_weights_live`: `byrequests`, the
smooth weighted round robin) can ramp; the loader refuses a slow start with any other.
"""

from __future__ import annotations

from sim.kernel.calendar import Wakeup

STEP_S = 2.0  # HAProxy `inter` (the health check's interval, default 2000 ms)
FLOOR = 0.01  # HAProxy: the ramp starts from 1 % of the weight, not from nothing


class SlowStart:
    """Ramps members' entries of a policy's `weights` (a list it reads at each pick)."""

    __slots__ = ("base", "duration_s", "joined_at", "kernel", "step_s", "timers", "weights")

    def __init__(
        self, kernel, weights: list[float], duration_s: float, step_s: float = STEP_S
    ) -> None:
        if duration_s <= 0 or step_s <= 0:
            raise ValueError("a slow start and its step above 0 s")
        self.kernel = kernel
        self.weights = weights  # the policy's own list, changed in place
        self.base = list(weights)  # the configured weights (lbfactor, loadfactor, weight)
        self.duration_s = duration_s
        self.step_s = step_s
        self.joined_at: dict[int, float] = {}
        self.timers: dict[int, Wakeup] = {}

    def begin(self, index: int) -> None:
        """`index` joined now: its weight starts from the floor."""
        self.cancel(index)
        self.joined_at[index] = self.kernel.now
        self._set(index, 0.0)

    def cancel(self, index: int) -> None:
        """`index` left: no more ramp steps, its configured weight back for its next join."""
        timer = self.timers.pop(index, None)
        if timer is not None:
            timer.cancel()
        self.weights[index] = self.base[index]

    def fraction(self, elapsed_s: float) -> float:
        """The share of its weight a member has `elapsed_s` after it joined."""
        if elapsed_s >= self.duration_s:
            return 1.0
        return max(elapsed_s / self.duration_s, FLOOR)

    def _set(self, index: int, elapsed_s: float) -> None:
        # a small tolerance: the last step lands on the duration up to rounding
        if elapsed_s >= self.duration_s - 1e-9:
            self.weights[index] = self.base[index]
            self.timers.pop(index, None)
            return
        self.weights[index] = self.base[index] * self.fraction(elapsed_s)
        step = min(self.step_s, self.duration_s - elapsed_s)
        self.timers[index] = self.kernel.after(step, self._tick, index)

    def _tick(self, index: int) -> None:
        self._set(index, self.kernel.now - self.joined_at[index])
