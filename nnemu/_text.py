"""Small pieces of the text the commands print, shared so that they read alike."""

from __future__ import annotations


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless it is 1: ``counted(1, "run")`` is ``1 run``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def seed_span(first: int, count: int) -> str:
    """The seeds of ``count`` replications from ``first``: ``seed 7`` or ``seeds 7..9``."""
    return f"seed {first}" if count == 1 else f"seeds {first}..{first + count - 1}"
