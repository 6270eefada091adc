"""Argument types of the ``acidflow`` commands: a value checked on the command line, or a usage error.

::

    --max 0          acidflow compact: error: argument --max: invalid value '0': expected a positive
                     integer <= 9223372036854775807 (a 64-bit long)

Each factory takes what the value is (``"lease ID"``) for the message; argparse turns the
``ArgumentTypeError`` into one line and exit code 2 (``app``).
Not here: checks that need the metastore or the filesystem.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["LONG_MAX", "non_negative_number", "positive_long", "positive_seconds", "whole_number"]

LONG_MAX: Final = 2**63 - 1


def positive_long(what: str) -> Callable[[str], int]:
    """A type accepting 1 ..= ``LONG_MAX`` (Hive's IDs are Java longs)."""

    def parse(text: str) -> int:
        if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= LONG_MAX:
            raise argparse.ArgumentTypeError(
                f"invalid {what} {text!r}: expected a positive integer <= {LONG_MAX} (a 64-bit long)"
            )
        return int(text)

    return parse


def whole_number(what: str) -> Callable[[str], int]:
    """A type accepting 0 ..= ``LONG_MAX``."""

    def parse(text: str) -> int:
        if not text.isascii() or not text.isdigit() or int(text) > LONG_MAX:
            raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: expected a whole number >= 0")
        return int(text)

    return parse


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def positive_seconds(what: str, *, finite: bool = True) -> Callable[[str], float]:
    """A type accepting a number of seconds > 0 (and finite unless ``finite=False``)."""

    def parse(text: str) -> float:
        value = _number(text)
        if not value > 0 or (finite and value == float("inf")):
            raise argparse.ArgumentTypeError(
                f"invalid {what} {text!r}: expected a positive number of seconds"
            )
        return float(text)

    return parse


def non_negative_number(what: str) -> Callable[[str], float]:
    """A type accepting a finite number >= 0."""

    def parse(text: str) -> float:
        if not 0 <= _number(text) < float("inf"):
            raise argparse.ArgumentTypeError(
                f"invalid {what} {text!r}: expected a finite non-negative number"
            )
        return float(text)

    return parse
