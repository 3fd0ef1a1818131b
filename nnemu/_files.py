"""Writing the commands' text outputs (reports, saved scenarios)."""

from __future__ import annotations

from nnemu.errors import OutputError


def write_text(path: str, text: str, what: str) -> None:
    """Write ``text`` to ``path`` as UTF-8 with ``\\n`` line ends.

    Raises ``OutputError`` ("<path>: cannot write the <what>: <reason>") when it cannot.
    """
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as exc:
        raise OutputError(path, what, exc.strerror or str(exc)) from exc
