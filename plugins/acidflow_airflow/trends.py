"""Trends of the backlog history: human units, time to a threshold, server-side SVG sparklines.

::

    samples of one partition over the window  [(t, value), ...] sorted by t
        time_to_threshold(points, threshold)   -> seconds until the linear trend since the last
                                                  drop (a compaction) reaches threshold; 0 if over;
                                                  None if not growing or fewer than 2 points
        sparkline_svg(points, start, end)      -> an <svg> polyline, scaled to [start, end] x [0, max]
    human_bytes(1536) == "1.5 KiB";  human_duration(5400) == "1h 30m"

Pure: numbers in, strings out; no I/O, no clock. The plots are drawn here, on the server, so the
page needs no chart library (and no CDN): an SVG of numbers only, nothing from the user.
Errors: none; empty input gives an empty plot or None.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["downsample", "human_bytes", "human_duration", "sparkline_svg", "time_to_threshold"]

_UNITS: Final = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_MAX_POINTS: Final = 240


def human_bytes(size: float) -> str:
    """Binary units, one decimal below 10 of a unit.

    >>> human_bytes(0), human_bytes(1023), human_bytes(1536), human_bytes(15 * 1024**3)
    ('0 B', '1023 B', '1.5 KiB', '15 GiB')
    """
    value = float(size)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.1f} {unit}" if abs(value) < 10 else f"{value:.0f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def human_duration(seconds: float | None) -> str:
    """The two largest units of a duration; ``""`` for None.

    >>> human_duration(None), human_duration(42), human_duration(5400), human_duration(200000)
    ('', '42s', '1h 30m', '2d 7h')
    """
    if seconds is None:
        return ""
    total = max(0, int(seconds))
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size or (unit == "s" and not parts):
            parts.append(f"{total // size}{unit}")
            total %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def _since_last_drop(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    # A compaction makes the count fall: the trend that matters is the one since then.
    start = 0
    for index in range(1, len(points)):
        if points[index][1] < points[index - 1][1]:
            start = index
    return list(points[start:])


def time_to_threshold(points: Sequence[tuple[float, float]], threshold: float) -> float | None:
    """Seconds from the last point until the least-squares trend since the last drop reaches ``threshold``.

    Args:
        points: ``(epoch seconds, value)`` sorted by time.
        threshold: the level (for example the critical delta count).

    Returns:
        0.0 when the last value is already at or over the threshold; None when there are fewer
        than two points since the last drop or the trend is flat or falling.

    >>> time_to_threshold([(0, 10), (3600, 20)], 50)
    10800.0
    >>> time_to_threshold([(0, 10), (3600, 5)], 50) is None
    True
    """
    if points and points[-1][1] >= threshold:
        return 0.0
    recent = _since_last_drop(points)
    if len(recent) < 2:
        return None
    count = len(recent)
    mean_t = sum(t for t, _ in recent) / count
    mean_v = sum(v for _, v in recent) / count
    variance = sum((t - mean_t) ** 2 for t, _ in recent)
    if variance == 0:
        return None
    slope = sum((t - mean_t) * (v - mean_v) for t, v in recent) / variance
    if slope <= 0:
        return None
    last_t = recent[-1][0]
    fitted_now = mean_v + slope * (last_t - mean_t)
    return max(0.0, (threshold - fitted_now) / slope)


def downsample(
    points: Sequence[tuple[float, float]], buckets: int = _MAX_POINTS
) -> list[tuple[float, float]]:
    """At most ``buckets`` points: the maximum of each run of consecutive points (peaks stay visible).

    >>> downsample([(0, 1), (1, 5), (2, 2), (3, 3)], 2)
    [(1, 5), (3, 3)]
    """
    if len(points) <= buckets:
        return list(points)
    size = -(-len(points) // buckets)
    return [max(points[i : i + size], key=lambda p: p[1]) for i in range(0, len(points), size)]


def sparkline_svg(
    points: Sequence[tuple[float, float]],
    start: float,
    end: float,
    *,
    width: int = 120,
    height: int = 28,
    label: str = "",
) -> str:
    """An inline SVG sparkline of ``points`` over ``[start, end]`` (y from 0 to the maximum).

    The last point gets a dot; the title (tooltip) gives the range of values. An empty series
    draws a baseline only.
    """
    shown = downsample([p for p in points if start <= p[0] <= end])
    pad = 2.0
    top = max((v for _, v in shown), default=0.0) or 1.0
    span = (end - start) or 1.0

    def x(t: float) -> float:
        return pad + (t - start) / span * (width - 2 * pad)

    def y(v: float) -> float:
        return height - pad - v / top * (height - 2 * pad)

    low = min((v for _, v in shown), default=0.0)
    title = f"{label}: {len(shown)} samples, {low:g} to {top if shown else 0:g}" if label else ""
    parts = [
        f'<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" data-points="{len(shown)}">',
        f"<title>{html.escape(title)}</title>" if title else "",
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#d0d7de"/>',
    ]
    if shown:
        coordinates = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in shown)
        parts.append(f'<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="{coordinates}"/>')
        last_t, last_v = shown[-1]
        parts.append(f'<circle cx="{x(last_t):.1f}" cy="{y(last_v):.1f}" r="2" fill="#0969da"/>')
    parts.append("</svg>")
    return "".join(parts)
