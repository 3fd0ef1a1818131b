"""Reading the commands' documents (scenarios, experiments, reports) and writing their text
outputs (reports, saved scenarios)."""

from __future__ import annotations

import os
import stat
from typing import Final

from nnemu.errors import OutputError

MAX_DOCUMENT_BYTES: Final = 4 * 1024 * 1024
"""The largest scenario or experiment file read (4 MiB: the largest shipped is 5 KB)."""
MAX_STREAM_BYTES: Final = 64 * 1024 * 1024
"""What is read from a document that is no regular file (a pipe, ``/dev/zero``) without
another limit, before it is refused."""


class DocumentTooLarge(ValueError):
    """A document past its size limit; the message says the limit."""


def read_document(path: str | os.PathLike[str], limit: int | None = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of the file ``path`` (its line ends made ``\n``, as text mode reads).

    At most ``limit`` bytes are read (None: a regular file whole, anything else
    ``MAX_STREAM_BYTES``), so that ``/dev/zero`` or a huge file ends in a message, not in
    exhausted memory.

    Raises:
        OSError: it cannot be read.
        UnicodeDecodeError: it is not UTF-8.
        DocumentTooLarge: it is larger than the limit.
    """
    with open(path, "rb") as file:
        if limit is None and not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            limit = MAX_STREAM_BYTES
        data = file.read() if limit is None else file.read(limit + 1)
    if limit is not None and len(data) > limit:
        msg = f"larger than {_size(limit)}, the most nnemu reads of such a file"
        raise DocumentTooLarge(msg)
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count % (1024 * 1024) == 0 else f"{count} bytes"


def write_text(path: str, text: str, what: str) -> None:
    """Write ``text`` to ``path`` as UTF-8 with ``\\n`` line ends.

    Raises ``OutputError`` ("<path>: cannot write the <what>: <reason>") when it cannot.
    """
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as exc:
        raise OutputError(path, what, exc.strerror or str(exc)) from exc
