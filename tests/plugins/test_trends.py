"""Human units, the time-to-threshold trend and the SVG sparklines (pure; expected values by hand)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from acidflow_airflow.trends import downsample, human_bytes, human_duration, sparkline_svg, time_to_threshold
from hypothesis import given
from hypothesis import strategies as st

_SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (10 * 1024, "10 KiB"),
        (5 * 1024**2 + 1, "5.0 MiB"),
        (15 * 1024**3, "15 GiB"),
        (3 * 1024**5, "3.0 PiB"),
        (2048 * 1024**5, "2048 PiB"),
    ],
    ids=str,
)
def test_human_bytes_binary_units(size, text):
    assert human_bytes(size) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, ""),
        (-5, "0s"),
        (0, "0s"),
        (59.9, "59s"),
        (60, "1m"),
        (61, "1m 1s"),
        (3600, "1h"),
        (5400, "1h 30m"),
        (86400 + 7200 + 59, "1d 2h"),
        (200000, "2d 7h"),
    ],
    ids=str,
)
def test_human_duration_two_largest_units(seconds, text):
    assert human_duration(seconds) == text


@pytest.mark.parametrize(
    ("points", "threshold", "expected"),
    [
        ([], 10, None),
        ([(0, 5)], 10, None),
        ([(0, 5)], 5, 0.0),
        ([(0, 1), (3600, 2), (7200, 3)], 10, 7 * 3600.0),  # one delta an hour, 3 now: 7 hours to 10
        ([(0, 10), (3600, 12)], 11, 0.0),  # already over
        ([(0, 8), (3600, 8)], 10, None),  # flat
        ([(0, 8), (3600, 7)], 10, None),  # falling
        # A compaction at t=2h dropped 9 -> 1: only the trend since then counts (2 per hour).
        ([(0, 1), (3600, 9), (7200, 1), (10800, 3)], 11, 4 * 3600.0),
        ([(5, 1), (5, 3)], 10, None),  # no time span
    ],
    ids=[
        "empty",
        "one-point",
        "one-point-at",
        "linear",
        "over",
        "flat",
        "falling",
        "after-drop",
        "same-time",
    ],
)
def test_time_to_threshold_linear_trend_since_last_drop(points, threshold, expected):
    assert time_to_threshold(points, threshold) == expected


@given(
    start=st.integers(0, 100),
    rate=st.integers(1, 20),
    count=st.integers(2, 30),
    gap=st.integers(1, 1000),
)
def test_time_to_threshold_exact_for_linear_growth(start, rate, count, gap):
    points = [(i * 3600.0, float(start + rate * i)) for i in range(count)]
    threshold = start + rate * (count - 1) + gap
    assert time_to_threshold(points, threshold) == pytest.approx(gap / rate * 3600.0)


def test_downsample_keeps_peaks_and_bound():
    points = [(float(i), float(i % 7)) for i in range(1000)]
    shown = downsample(points, 100)
    assert len(shown) == 100
    assert max(v for _, v in shown) == 6.0
    assert downsample(points[:5], 100) == points[:5]


def test_sparkline_svg_scales_points_into_the_box():
    svg = sparkline_svg(
        [(0.0, 0.0), (50.0, 5.0), (100.0, 10.0), (200.0, 99.0)],
        0.0,
        100.0,
        width=104,
        height=24,
        label="deltas",
    )
    root = ET.fromstring(svg)
    assert root.tag == f"{_SVG}svg"
    assert (root.get("width"), root.get("height"), root.get("data-points")) == ("104", "24", "3")
    assert root.find(f"{_SVG}title").text == "deltas: 3 samples, 0 to 10"
    # x: 2 + t/100 * 100; y: 24 - 2 - v/10 * 20 (the point at t=200 is outside the window)
    assert root.find(f"{_SVG}polyline").get("points") == "2.0,22.0 52.0,12.0 102.0,2.0"
    assert (root.find(f"{_SVG}circle").get("cx"), root.find(f"{_SVG}circle").get("cy")) == ("102.0", "2.0")


def test_sparkline_svg_empty_series_is_a_baseline_only():
    root = ET.fromstring(sparkline_svg([], 0.0, 10.0, label="<b>"))
    assert root.find(f"{_SVG}polyline") is None
    assert root.find(f"{_SVG}line") is not None
    assert root.find(f"{_SVG}title").text == "<b>: 0 samples, 0 to 0"
