"""A property test whose assertion sits under a condition fails if too few examples reach it.

A property of the form "every PERSISTENT result had ..." passes, vacuously, on every example
that drew no PERSISTENT result; a strategy that stopped drawing them would leave the test
green and checking nothing.  ``Reach`` counts the examples that reached the assertion::

    _PERSISTENT = Reach(at_least=0.2)

    @_PERSISTENT.required
    @settings(max_examples=60, deadline=None)
    @given(plans())
    def test_x(plan: Plan) -> None:
        ...
        _PERSISTENT.example(checked)  # how many assertions this example ran

and the test fails unless at least ``at_least`` of its examples ran one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hypothesis import event


class Reach:
    """The examples of one property test, and how many reached its assertion."""

    def __init__(self, *, at_least: float) -> None:
        self.at_least = at_least
        """The share of examples that must reach the assertion."""
        self.examples = 0
        self.reached = 0

    def example(self, checked: int) -> None:
        """Record one example, which ran ``checked`` assertions."""
        self.examples += 1
        self.reached += checked > 0
        event("assertion reached" if checked else "assertion NOT reached")

    def required(self, test: Callable[..., Any]) -> Callable[..., Any]:
        """``test`` (a ``@given`` test) that then fails if too few examples reached it."""

        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> None:
            self.examples = self.reached = 0
            test(*args, **kwargs)
            assert self.examples > 0
            share = self.reached / self.examples
            assert share >= self.at_least, (
                f"only {self.reached} of {self.examples} examples reached the assertion "
                f"(at least {self.at_least:.0%} must): the strategy no longer draws the case"
            )

        return run
