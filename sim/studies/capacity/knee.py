"""The knee of a load curve: where the response time starts to rise steeply.

Definition used (the geometric core of Kneedle, Satopää et al. 2011): scale both axes of the
curve to [0, 1], draw the chord from its first to its last point, and take the point farthest
from the chord.  On a hockey stick it is the corner; on a response-time curve of a queue it
is the load beyond which each extra unit of load costs more response time than the average.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def knee(xs: Sequence[float], ys: Sequence[float]) -> int | None:
    """Index of the knee of the curve (points sorted by x), or None with fewer than 3 points."""
    points = sorted((x, y) for x, y in zip(xs, ys) if not (math.isnan(x) or math.isnan(y)))
    if len(points) < 3:
        return None
    x0, x1 = points[0][0], points[-1][0]
    y_low, y_high = min(p[1] for p in points), max(p[1] for p in points)
    if x1 == x0 or y_high == y_low:
        return None
    scaled = [((x - x0) / (x1 - x0), (y - y_low) / (y_high - y_low)) for x, y in points]
    (ax, ay), (bx, by) = scaled[0], scaled[-1]
    length = math.hypot(bx - ax, by - ay)
    distances = [abs((by - ay) * x - (bx - ax) * y + bx * ay - by * ax) / length for x, y in scaled]
    best = max(range(1, len(points) - 1), key=distances.__getitem__)
    chosen = points[best]
    return next(i for i, (x, y) in enumerate(zip(xs, ys)) if (x, y) == chosen)
