"""``TraceProcessor``: Perfetto's Python API shape over nnemu's query tables.

Perfetto users write ``TraceProcessor(trace=path).query(sql).as_pandas_dataframe()``; this
offers the same calls on the tables ``nnemu query`` loads (docs/python-api.md): ``query``
runs one or more statements and returns the last one's rows, which iterate as rows with
attribute access (``row.name``), or convert to a pandas ``DataFrame`` (pandas installed) or
a pyarrow ``Table`` (pyarrow installed).
"""

from __future__ import annotations

import keyword
import os
from collections import namedtuple
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

from nnemu.query._command import split_statements
from nnemu.query._loader import Warn
from nnemu.query._table_functions import QueryDatabase


def _field_names(columns: Sequence[str]) -> list[str]:
    """Attribute names for ``columns``: a repeat gets ``_2``, ``_3``...; a name that is not an
    identifier gets ``_`` in place of each other character (``count(*)`` -> ``count___``)."""
    names: list[str] = []
    for column in columns:
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in column) or "_"
        if name[0].isdigit() or keyword.iskeyword(name) or name.startswith("_"):
            name = f"c_{name}"
        base, count = name, 1
        while name in names:
            count += 1
            name = f"{base}_{count}"
        names.append(name)
    return names


class QueryResult:
    """The rows of a query: iterate them (``row.name``, or by position), or convert them."""

    def __init__(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.column_names: tuple[str, ...] = tuple(columns)
        """The columns' names, as SQL gives them (in order)."""
        self._row: Any = namedtuple("Row", _field_names(columns))  # type: ignore[misc]
        self._rows = rows

    def __iter__(self) -> Iterator[Any]:
        """Each row as a named tuple: ``row.name`` (the column's name, made an identifier)."""
        make = self._row._make
        return (make(row) for row in self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def as_pandas_dataframe(self) -> Any:
        """The rows as a ``pandas.DataFrame`` with the columns' names (needs pandas).

        Raises:
            ImportError: pandas is not installed (``pip install 'nnemu[pandas]'``).
        """
        try:
            import pandas
        except ImportError as exc:
            raise ImportError(
                "as_pandas_dataframe needs pandas: pip install 'nnemu[pandas]'"
            ) from exc
        return pandas.DataFrame.from_records(list(self._rows), columns=list(self.column_names))

    def as_arrow(self) -> Any:
        """The rows as a ``pyarrow.Table`` with the columns' names (needs pyarrow).

        Raises:
            ImportError: pyarrow is not installed (``pip install 'nnemu[sweep]'``).
        """
        try:
            import pyarrow
        except ImportError as exc:
            raise ImportError("as_arrow needs pyarrow: pip install 'nnemu[sweep]'") from exc
        columns = [[row[i] for row in self._rows] for i in range(len(self.column_names))]
        return pyarrow.Table.from_arrays(
            [pyarrow.array(values) for values in columns], names=list(self.column_names)
        )


class TraceProcessor:
    """A trace loaded into nnemu's query tables, queried as with Perfetto's ``TraceProcessor``.

    ``TraceProcessor(trace=path)`` loads the trace (any format ``nnemu query`` reads) into
    memory; ``query(sql)`` runs SQL over it; ``close()`` (or the ``with`` block's end) frees it.
    """

    def __init__(self, trace: str | os.PathLike[str], *, warn: Warn | None = None) -> None:
        """Load ``trace``.

        Args:
            trace: A systrace ``.html``, ftrace text, Chrome JSON or Perfetto protobuf trace.
            warn: Receives (line number, message) per recoverable problem; dropped if None.

        Raises:
            TraceFormatError: Nothing to load.
            OSError: The file cannot be read.
        """
        from nnemu.query import open_trace

        self._db = QueryDatabase(open_trace(os.fspath(trace), warn=warn))
        self._closed = False

    def query(self, sql: str) -> QueryResult:
        """Run the statements of ``sql`` in order; the rows of the last one.

        Raises:
            sqlite3.Error: A statement failed (``apsw.Error`` once a statement has called
                one of Perfetto's table functions, such as ``ancestor_slice``).
            ValueError: The processor is closed.
        """
        if self._closed:
            raise ValueError("query on a closed TraceProcessor")
        statements, rest = split_statements(sql)
        if rest.strip():
            statements.append(rest.strip())
        columns: list[str] = []
        rows: list[Sequence[Any]] = []
        for statement in statements:
            cursor = self._db.execute(statement)
            description = cursor.description
            columns = [str(column[0]) for column in description] if description else []
            rows = list(cursor.fetchall())
        return QueryResult(columns, rows)

    def close(self) -> None:
        """Free the loaded trace (closing twice is allowed)."""
        if not self._closed:
            self._closed = True
            self._db.close()

    def __enter__(self) -> TraceProcessor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
