"""Golden diff tests: each case's trace goes in, the text and JSON statistics come out.

Like Perfetto's diff tests: ``tests/diff/<case_id>/trace.txt`` (or
``trace.html``, or ``tests/data/<case_id>.html`` for a device trace that other
tests read too, as omr1) is parsed and rendered; the output must equal
``expected.txt`` / ``expected.json``.  An optional ``options.txt`` lists
parse options, one a line (``include-incomplete``).  A mismatch prints a unified diff;
``pytest --update-goldens`` rewrites the expected files.  Case ids are those
of ``docs/parser.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu.parser import ParseResult, format_json, format_text, parse_file
from tests.goldens import check_golden

CASES_DIR = Path(__file__).parent
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
CASES = sorted(path.name for path in CASES_DIR.iterdir() if path.is_dir() and path.name[0] != "_")


def _trace(case_dir: Path) -> Path:
    for name in ("trace.txt", "trace.html", "trace.json"):
        if (case_dir / name).exists():
            return case_dir / name
    shared = DATA_DIR / f"{case_dir.name}.html"  # a device trace other tests read too
    if shared.exists():
        return shared
    raise FileNotFoundError(case_dir / "trace.txt")


def _parse(case_dir: Path) -> ParseResult:
    options_path = case_dir / "options.txt"
    options = options_path.read_text(encoding="utf-8").split() if options_path.exists() else []
    unknown = set(options) - {"include-incomplete"}
    assert not unknown, f"unknown options in {options_path}: {unknown}"
    return parse_file(_trace(case_dir), include_incomplete="include-incomplete" in options)


@pytest.mark.parametrize("case_id", CASES)
def test_text_output(case_id: str, update_goldens: bool) -> None:
    """The text table of each diff case equals its golden expected.txt."""
    case_dir = CASES_DIR / case_id
    result = _parse(case_dir)
    check_golden(format_text(result), case_dir / "expected.txt", update_goldens)


@pytest.mark.parametrize("case_id", CASES)
def test_json_output(case_id: str, update_goldens: bool) -> None:
    """The JSON output of each diff case equals its golden expected.json."""
    case_dir = CASES_DIR / case_id
    result = _parse(case_dir)
    check_golden(format_json(result), case_dir / "expected.json", update_goldens)


def test_omr1_expected_is_androids_output() -> None:
    """The omr1 golden is the unmodified output of Android's own parser."""
    android = DATA_DIR / "omr1.txt"  # Android's systrace_parser output, kept apart from goldens
    assert (CASES_DIR / "omr1" / "expected.txt").read_bytes() == android.read_bytes()
