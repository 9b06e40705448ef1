"""How fast a figure moves, and when it will reach a threshold: a least-squares line
through the recent samples, not a guess from two of them."""

from __future__ import annotations

from collections.abc import Sequence

Point = tuple[float, float]


def slope(points: Sequence[Point]) -> float | None:
    """Units per second of the least-squares line through ``(seconds, value)`` points;
    None with fewer than two points or no time between them.

    >>> slope([(0, 540.0), (1, 530.0), (2, 519.0), (3, 511.0)])
    -9.8
    >>> slope([(5, 1.0)]) is None, slope([(5, 1.0), (5, 2.0)]) is None
    (True, True)
    """
    if len(points) < 2:
        return None
    count = len(points)
    mean_t = sum(t for t, _ in points) / count
    mean_v = sum(v for _, v in points) / count
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread <= 0:
        return None
    return round(sum((t - mean_t) * (v - mean_v) for t, v in points) / spread, 9)


def seconds_until(points: Sequence[Point], threshold: float) -> float | None:
    """Seconds from the last point until the fitted line reaches ``threshold``, counted
    from the last measured value; None when the line does not move toward it.

    >>> seconds_until([(0, 540.0), (1, 530.0), (2, 519.0), (3, 511.0)], 230.0)
    28.67...
    >>> seconds_until([(0, 1.0), (1, 2.0)], 0.0) is None
    True
    >>> seconds_until([(0, 1.0), (1, 2.0)], 2.0)
    0.0
    """
    rate = slope(points)
    if rate is None:
        return None
    gap = threshold - points[-1][1]
    if gap == 0:
        return 0.0
    if rate == 0 or (gap > 0) != (rate > 0):
        return None
    return gap / rate
