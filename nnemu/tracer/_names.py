"""The one rule for app and device names: what every trace format writes and reads back.

An app's name is its process's name and starts its threads' names; a device's name ends
its driver service's process name. Those names go into every trace format: the ftrace
``TASK-PID`` column and systrace's ``ps`` dump (``.txt``, ``.html``), Chrome JSON metadata
and Perfetto descriptors. A name is refused (at scenario load, and for specs built in
code) when one of its characters cannot make that trip unchanged:

* whitespace and every other separator (a ``ps`` row and an ftrace row split on blanks);
* control characters, NUL and format characters such as zero-width spaces (a reader
  takes a file holding them for binary, or cleans them to spaces), unassigned code
  points, surrogates and private-use characters;
* ``.`` (names appear in report paths and ``--set`` keys), ``/`` (a process's main thread
  is named after the name's last path component) and ``<`` (``</script>`` or ``<!--``
  would end or unbalance the HTML trace's data block).

``safe_name`` turns any text (a process name read from a trace) into a name the rule
accepts; ``thread_name`` is the one truncation every writer uses.
"""

from __future__ import annotations

import itertools
import unicodedata
from typing import Final

TASK_COMM_LEN: Final = 15
"""The characters of a thread's name Linux keeps (``TASK_COMM_LEN`` 16 with its NUL)."""

_REFUSED_PUNCTUATION: Final = "./<"
_REFUSED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
NAME_RULE: Final = (
    "without whitespace, control or invisible characters, '.', '/' or '<' "
    "(characters a trace format cannot carry)"
)
"""What a name is expected to be, as the messages say it."""


def _refused(char: str) -> bool:
    return (
        char in _REFUSED_PUNCTUATION
        or char.isspace()
        or unicodedata.category(char) in _REFUSED_CATEGORIES
    )


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an app or device name (``expected ..., got ...``), else None."""
    if not name:
        return "expected a non-empty name"
    bad = next((char for char in name if _refused(char)), None)
    if bad is None:
        return None
    return f"expected a name {NAME_RULE}, got {name!r} (holding {bad!r})"


def safe_name(text: str) -> str:
    """``text`` as a name the rule accepts: each run of refused characters becomes ``_``
    (leading and trailing ones dropped)."""
    runs = itertools.groupby(text.strip(), key=_refused)
    return "".join("_" if refused else "".join(chars) for refused, chars in runs).strip("_")


def thread_name(name: str) -> str:
    """The name a thread called ``name`` has in a trace: its first 15 characters, as Linux
    keeps them (``TASK_COMM_LEN``) and the ftrace ``TASK`` column shows them."""
    return name[:TASK_COMM_LEN]
