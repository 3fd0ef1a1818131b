"""docs/property-testing.md: its complete example runs, as written there."""

from __future__ import annotations

import pathlib
import re
from typing import Any

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "property-testing.md"


def test_complete_example_of_the_docs_passes() -> None:
    """The first python block of docs/property-testing.md defines a property test that passes."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)
    namespace["test_successful_jobs_meet_their_deadline"]()
