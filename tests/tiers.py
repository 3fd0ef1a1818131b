"""A property test searched in two tiers: narrowly in the default run, widely in the slow tier.

The README's test command (the default run) keeps to about two minutes on two cores; the slow
tier, which CI runs too (``pytest -m slow``), searches the same property with all its
examples.  In place of ``@settings(max_examples=60, deadline=None)`` and ``@given(...)``::

    @tiered(scenarios(durations=True), quick=20, wide=60)
    def test_codes(scenario: Scenario) -> None:
        ...

makes two tests of the one property and strategy: ``test_codes``, drawing ``quick`` examples
in the default run, and ``test_codes_wide``, drawing ``wide`` and marked slow (added to the
module beside it).  Marks and ``@example``s put on the function below ``@tiered`` hold for both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

Test = Callable[..., None]


def tiered(
    *args: Any,
    quick: int,
    wide: int,
    derandomize: bool = False,
    suppress_health_check: Sequence[HealthCheck] = (),
    **kwargs: Any,
) -> Callable[[Test], Test]:
    """``@given(*args, **kwargs)`` twice: with ``quick`` examples, and with ``wide`` in the slow tier."""
    assert 0 < quick < wide

    def search(test: Test, examples: int) -> Test:
        return settings(
            max_examples=examples,
            deadline=None,
            derandomize=derandomize,
            suppress_health_check=suppress_health_check,
        )(given(*args, **kwargs)(test))

    def decorate(test: Test) -> Test:
        test.__globals__[f"{test.__name__}_wide"] = pytest.mark.slow(search(test, wide))
        return search(test, quick)

    return decorate
