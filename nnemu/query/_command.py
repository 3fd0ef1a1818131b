"""``nnemu query``: load a trace, then run SQL given on the command line or in a shell."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import threading
import urllib.parse
from typing import Any, Final, TextIO

from nnemu._text import counted
from nnemu.errors import ExitCode, Terminated, TraceFormatError
from nnemu.query._load import load_trace
from nnemu.query._loader import placed_bytes
from nnemu.query._output import MODES, Database, write_result
from nnemu.query._schema import SCHEMA_VERSION, register_functions
from nnemu.query._table_functions import QueryDatabase, explain_error, query_errors
from nnemu.trace import refuse_stdin

MAX_WARNINGS: Final = 20
"""Warnings printed per load; the rest are counted in one closing line."""
_SQLITE_MAGIC: Final = b"SQLite format 3\x00"
IN_MEMORY_MAX_BYTES: Final = 64 * 1024 * 1024
"""Without ``--db``, bigger traces load into a temporary database file, not memory."""
APPLICATION_ID: Final = 0x6E6E656D
"""A ``--db`` file's ``PRAGMA application_id`` ("nnem"): the mark of a file nnemu may replace."""
_LOAD_TABLE: Final = "nnemu_load"
"""In a ``--db`` file: what it was loaded from (key, value), to reuse it."""
_WARNING_TABLE: Final = "nnemu_load_warning"
"""In a ``--db`` file: the load's first warnings (line, message), then (NULL, total)."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
"""A lone surrogate: a byte that was not UTF-8, as Python's ``surrogateescape`` keeps it in a
str (U+DC80..U+DCFF), or any other (a caller's str), which no encoder writes."""

PROMPT: Final = "nnemu> "
CONTINUATION: Final = "  ...> "
HELP: Final = """\
Statements end with ';'.  Commands:
  .tables          list tables and views
  .schema [NAME]   show the CREATE statements (of NAME only)
  .mode MODE       print results as table, csv or json
  .help            this text
  .quit            leave (so does end of input)
"""


class _Warnings:
    """Prints ``FILE:LINE: warning: ...`` lines (``FILE: byte N: warning: ...`` for binary
    input, as ``nnemu parse`` says them), the first ``MAX_WARNINGS`` of them."""

    def __init__(self, source: str, err: TextIO) -> None:
        self.source = source
        self.err = err
        self.count = 0
        self.shown: list[tuple[int, str]] = []

    def __call__(self, line_number: int, message: str) -> None:
        self.count += 1
        if self.count <= MAX_WARNINGS:
            self.shown.append((line_number, message))
            offset = placed_bytes(line_number)
            if offset is not None:
                where = f"{self.source}: byte {offset}"
            elif line_number:
                where = f"{self.source}:{line_number}"
            else:
                where = self.source
            self.err.write(f"{where}: warning: {message}\n")

    def close(self) -> None:
        hidden = self.count - MAX_WARNINGS
        if hidden > 0:
            self.err.write(f"{self.source}: warning: {counted(hidden, 'more warning')} not shown\n")


def split_statements(text: str) -> tuple[list[str], str]:
    """Split ``text`` into complete SQL statements and the incomplete rest.

    A ``;`` inside a string, identifier or comment does not end a statement
    (``sqlite3.complete_statement`` decides).
    """
    statements: list[str] = []
    start = 0
    pos = text.find(";")
    while pos != -1:
        candidate = text[start : pos + 1]
        if sqlite3.complete_statement(candidate):
            if candidate.strip(" \t\r\n;"):
                statements.append(candidate.strip())
            start = pos + 1
        pos = text.find(";", pos + 1)
    return statements, text[start:]


class StatementSignals:
    """Ctrl-C (SIGINT) and SIGTERM while the statements run (main thread; the handlers the
    command line set, else none): noted, and the running statement interrupted, which
    SQLite otherwise finishes first (an endless recursive query never).  ``check`` (after
    a statement fails) and the end of the block raise what was noted: KeyboardInterrupt,
    or ``Terminated`` for SIGTERM."""

    def __init__(self, database: QueryDatabase | None) -> None:
        self.database = database
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: object) -> None:
        if self.signum is None:
            self.signum = signum
        if self.database is not None:
            self.database.interrupt()

    def check(self) -> None:
        """Raise the signal noted, if any."""
        if self.signum == signal.SIGTERM:
            raise Terminated
        if self.signum is not None:
            raise KeyboardInterrupt

    def __enter__(self) -> StatementSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                current = signal.getsignal(signum)
                if callable(current):  # Python's KeyboardInterrupt, the CLI's Terminated
                    self._previous[signum] = current
                    signal.signal(signum, self._handle)
        return self

    def __exit__(self, kind: object, *_rest: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        if kind is None:
            self.check()


def not_utf8(text: str) -> str:
    """What is wrong with text read from bytes that are not UTF-8 (Python keeps such a byte as
    a lone surrogate: standard input, the command line); "" when nothing is."""
    bad = _SURROGATE.search(text)
    if bad is None:
        return ""
    code = ord(bad.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"expected UTF-8 text, got byte {code - 0xDC00:#04x}"
    return f"expected text without lone surrogates, got U+{code:04X}"


def run_sql(conn: Database, sql: str, mode: str, out: TextIO) -> None:
    """Run every statement of ``sql``; print the result of the last one.

    Raises:
        sqlite3.Error, apsw.Error: A statement failed (earlier ones have run).
    """
    statements, rest = split_statements(sql)
    if rest.strip():
        statements.append(rest.strip())
    for index, statement in enumerate(statements):
        cursor = conn.execute(statement)
        if index == len(statements) - 1:
            write_result(cursor, mode, out)
        else:
            cursor.fetchall()  # run it to completion


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Shell:
    """The interactive shell: SQL statements ending with ``;`` and dot commands."""

    def __init__(
        self,
        conn: Database,
        stdin: TextIO,
        stdout: TextIO,
        stderr: TextIO,
        mode: str,
        signals: StatementSignals | None = None,
    ) -> None:
        self.conn = conn
        self.signals = signals or StatementSignals(None)
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.mode = mode
        self.errors = 0

    def run(self) -> int:
        """Read statements until ``.quit`` or end of input.

        Returns:
            0, or 2 when input was piped and a statement or command failed.
        """
        interactive = _is_tty(self.stdin)
        buffer = ""
        number = 0
        while True:
            if interactive:
                self.stdout.write(CONTINUATION if buffer.strip() else PROMPT)
                self.stdout.flush()
            line = self.stdin.readline()
            if not line:
                break
            number += 1
            problem = not_utf8(line)
            if problem:  # the statement it is part of is dropped
                self._fail(f"standard input line {number}: {problem}")
                buffer = ""
                continue
            if not buffer.strip() and line.lstrip().startswith("."):
                buffer = ""
                if not self._command(line.strip()):
                    break
                continue
            buffer += line
            statements, buffer = split_statements(buffer)
            for statement in statements:
                self._execute(statement)
        if buffer.strip():
            self._execute(buffer.strip())
        if interactive:
            self.stdout.write("\n")
            return ExitCode.OK
        return ExitCode.BAD_INPUT if self.errors else ExitCode.OK

    def _execute(self, statement: str) -> None:
        try:
            write_result(self.conn.execute(statement), self.mode, self.stdout)
        except query_errors() as err:
            self.signals.check()  # "interrupted" by Ctrl-C or SIGTERM: the command ends
            self.errors += 1
            self.stderr.write(f"query: {explain_error(err)}\n")
        self.stdout.flush()

    def command(self, text: str) -> int:
        """Run one dot command on its own (``nnemu query TRACE .tables``): its exit code,
        2 when it failed."""
        self._command(text.strip())
        return ExitCode.BAD_INPUT if self.errors else ExitCode.OK

    def _command(self, text: str) -> bool:
        """Run a dot command; False means quit."""
        name, _, argument = text.partition(" ")
        argument = argument.strip()
        if name in (".quit", ".exit", ".q"):
            return False
        if name == ".help":
            self.stdout.write(HELP)
        elif name == ".tables":
            for (table,) in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'nnemu_load%' ORDER BY name"
            ):
                self.stdout.write(f"{table}\n")
        elif name == ".schema":
            rows = self.conn.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL"
                " AND type IN ('table', 'view') AND name NOT LIKE 'nnemu_load%'"
                " AND (? = '' OR name = ?) ORDER BY type, name",
                (argument, argument),
            ).fetchall()
            if argument and not rows:
                self._fail(f"no table or view named {argument!r}")
            for (sql,) in rows:
                self.stdout.write(f"{sql.strip()};\n")
        elif name == ".mode":
            if argument in MODES:
                self.mode = argument
            else:
                self._fail(f".mode: expected one of {', '.join(MODES)}, got {argument!r}")
        else:
            self._fail(f"unknown command {name} (try .help)")
        return True

    def _fail(self, message: str) -> None:
        self.errors += 1
        self.stderr.write(f"query: {message}\n")


def _check_db_path(path: str, trace: str) -> None:
    """Refuse a ``--db`` path that is the trace or an existing file that is not SQLite.

    Raises:
        ValueError: It is one of those.
        OSError: It cannot be read.
    """
    if not os.path.exists(path):
        return
    if os.path.samefile(path, trace):
        msg = "is the trace itself"
        raise ValueError(msg)
    with open(path, "rb") as existing:
        head = existing.read(len(_SQLITE_MAGIC))
    if head and head != _SQLITE_MAGIC:
        msg = "exists and is not an SQLite database; not replacing it"
        raise ValueError(msg)
    if head and not _written_by_nnemu(path):
        msg = "is an SQLite database nnemu did not write; not replacing it"
        raise ValueError(msg)


def _written_by_nnemu(path: str) -> bool:
    """Whether the SQLite file ``path`` is one ``nnemu query --db`` wrote: its application id
    is ``APPLICATION_ID`` (or, written before the id, it has the load table)."""
    try:
        conn = sqlite3.connect(
            f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro", uri=True
        )
    except sqlite3.Error:
        return False
    try:
        if conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID:
            return True
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_LOAD_TABLE,)
        )
        return found.fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _trace_key(trace: str) -> dict[str, str | int]:
    """What a ``--db`` file must have been loaded from to be reused: the trace's real path,
    size and modification time, and the query schema's version.

    Raises:
        OSError: The trace cannot be read.
    """
    status = os.stat(trace)
    return {
        "trace": os.path.realpath(trace),
        "size": status.st_size,
        "mtime_ns": status.st_mtime_ns,
        "schema_version": SCHEMA_VERSION,
    }


def _open_cached(db: str, key: dict[str, str | int]) -> sqlite3.Connection | None:
    """The ``--db`` database when it was loaded from the same trace by this schema, else None."""
    if not os.path.isfile(db):
        return None
    try:
        conn = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(db))}?mode=rw", uri=True)
    except sqlite3.Error:
        return None
    try:
        stored = dict(conn.execute(f"SELECT key, value FROM {_LOAD_TABLE}").fetchall())
    except sqlite3.Error:
        conn.close()
        return None
    if stored != key:
        conn.close()
        return None
    register_functions(conn)
    return conn


def _record_load(conn: sqlite3.Connection, key: dict[str, str | int], warnings: _Warnings) -> None:
    """Store the load's key and warnings in the database (for ``_open_cached``)."""
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"CREATE TABLE {_LOAD_TABLE} (key TEXT PRIMARY KEY, value)")
    conn.executemany(f"INSERT INTO {_LOAD_TABLE} VALUES (?, ?)", key.items())
    conn.execute(f"CREATE TABLE {_WARNING_TABLE} (line INTEGER, message TEXT)")
    conn.executemany(f"INSERT INTO {_WARNING_TABLE} VALUES (?, ?)", warnings.shown)
    conn.execute(f"INSERT INTO {_WARNING_TABLE} VALUES (NULL, ?)", (str(warnings.count),))
    conn.commit()


def _replay_warnings(conn: sqlite3.Connection, warnings: _Warnings) -> None:
    """Print the warnings of the load that made the cached database, as that load did."""
    total = 0
    for line, message in conn.execute(f"SELECT line, message FROM {_WARNING_TABLE} ORDER BY rowid"):
        if line is None:
            total = int(message)
        else:
            warnings(line, message)
    warnings.count = max(warnings.count, total)


def _load(trace: str, db: str | None, warnings: _Warnings, stderr: TextIO) -> sqlite3.Connection:
    """Load ``trace`` into memory (a temporary file past ``IN_MEMORY_MAX_BYTES``), or into
    the ``--db`` file (reused when it holds this trace).

    A ``--db`` file is written under a temporary name beside it and renamed when complete,
    so an interrupted load leaves the older file (or none).

    Raises:
        OSError, TraceFormatError: The trace cannot be loaded (or is ``-``).
        _DbError: The ``--db`` file cannot be written.
    """
    refuse_stdin(trace)  # before its size is read: '-' is not "no such file"
    if db is None:
        # SQLite's private temporary database ("") lives on disk behind a bounded page
        # cache and is deleted on close: a big trace loads without growing the process.
        big = os.path.getsize(trace) > IN_MEMORY_MAX_BYTES
        conn = sqlite3.connect("" if big else ":memory:")
        try:
            load_trace(trace, conn, warnings, progress=stderr)
        except BaseException:
            conn.close()
            raise
        return conn
    key = _trace_key(trace)
    try:
        _check_db_path(db, trace)
    except (OSError, ValueError) as err:
        raise _DbError(err) from err
    cached = _open_cached(db, key)
    if cached is not None:
        _replay_warnings(cached, warnings)
        return cached
    partial = f"{db}.loading-{os.getpid()}"
    try:
        try:
            conn = sqlite3.connect(partial)
        except sqlite3.Error as err:
            raise _DbError(err) from err
        try:
            load_trace(trace, conn, warnings, progress=stderr)
            _record_load(conn, key, warnings)
        finally:
            conn.close()
        try:
            os.replace(partial, db)
        except OSError as err:
            raise _DbError(err) from err
    except sqlite3.Error as err:
        raise _DbError(err) from err
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(partial)
    conn = sqlite3.connect(db)
    register_functions(conn)
    return conn


class _DbError(Exception):
    """The ``--db`` file cannot be written (or is not one nnemu may replace)."""

    def __init__(self, cause: OSError | ValueError | sqlite3.Error) -> None:
        super().__init__(cause)
        self.cause = cause

    def __str__(self) -> str:
        cause = self.cause
        return str(cause.strerror if isinstance(cause, OSError) and cause.strerror else cause)


def run_query_command(
    trace: str,
    sql: str | None,
    *,
    as_csv: bool,
    as_json: bool,
    db: str | None,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Run ``nnemu query``: load ``trace``, then run ``sql`` (SQL, or one of the shell's
    dot commands) or the shell.

    Returns:
        0 on success; 2 when the trace cannot be loaded, the database cannot be
        written or a statement fails (``query: <sqlite message>`` on stderr).
    """
    if as_csv and as_json:
        stderr.write("query: --csv and --json cannot be used together\n")
        return ExitCode.BAD_INPUT
    mode = "csv" if as_csv else "json" if as_json else "table"
    warnings = _Warnings(trace, stderr)
    try:
        try:
            conn = _load(trace, db, warnings, stderr)
        finally:
            warnings.close()
    except OSError as err:
        stderr.write(f"{trace}: error: cannot read the trace: {err.strerror or err}\n")
        return ExitCode.BAD_INPUT
    except TraceFormatError as err:
        stderr.write(f"{err.where}: error: {err.message}\n")
        return ExitCode.BAD_INPUT
    except _DbError as err:
        stderr.write(f"query: --db {db}: {err}\n")
        return ExitCode.BAD_INPUT
    # The first statement calling a table function moves the database to apsw.
    database = QueryDatabase(conn)
    try:
        with StatementSignals(database) as signals:
            if sql is None:
                return Shell(database, stdin, stdout, stderr, mode, signals).run()
            problem = not_utf8(sql)
            if problem:
                stderr.write(f"query: the SQL argument: {problem}\n")
                return ExitCode.BAD_INPUT
            if sql.lstrip().startswith("."):
                return Shell(database, stdin, stdout, stderr, mode, signals).command(sql)
            try:
                run_sql(database, sql, mode, stdout)
            except query_errors() as err:
                signals.check()
                stderr.write(f"query: {explain_error(err)}\n")
                return ExitCode.BAD_INPUT
            return ExitCode.OK
    finally:
        database.close()
        conn.close()
