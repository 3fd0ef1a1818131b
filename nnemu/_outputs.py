"""One file, one role: the check every command makes before it writes anything.

An output path that names one of the command's inputs (``nnemu run s.yaml --trace s.yaml``,
through a symbolic or a hard link too) or the same file as another output (``--trace x.json
--report x.json``) is refused before the command reads or writes a byte: the first would
destroy the input, the second keep only the output written last.  A directory output (a
sweep's ``--out``, ``run --plots``) clashes with an input or output that lies in it under a
name it writes (``results.jsonl``, ``*.png``).

Files that are not regular (``/dev/null``, ``/dev/stdout``, a pipe) are never compared: two
outputs may both go to ``/dev/null``.

Each output path is also checked to be writable (``output_problem``; ``refuse_outputs`` prints
what was found), as the command line does before every command that writes.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Sequence
from typing import TextIO

import attrs


@attrs.frozen
class Role:
    """A path a command reads (``option`` "" for a positional input) or writes."""

    path: str | None
    """As the user gave it; None when the option was not given."""
    what: str
    """What the file holds: "scenario", "trace", "report", ..."""
    option: str = ""
    """The option that names it (``--trace``); "" for an input."""
    writes: tuple[str, ...] = ()
    """For a directory output: the globs of the names it writes in it; else ()."""

    @property
    def is_input(self) -> bool:
        return not self.option


def _identity(path: str) -> tuple[object, ...] | None:
    """What makes two paths one file: (device, inode) of a regular file, the resolved path
    of one not there yet, None for a device, pipe or directory (never compared)."""
    try:
        status = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    if not stat.S_ISREG(status.st_mode):
        return None
    return ("file", status.st_dev, status.st_ino)


def _whose(role: Role) -> str:
    """The other role of a clash, as a message names it."""
    if role.is_input:
        return f"the {role.what} this command reads; not overwriting it"
    return f"where {role.option} writes the {role.what}; give each output its own file"


def _same_directory(path: str, directory: str) -> bool:
    parent = os.path.dirname(os.path.abspath(path))
    try:
        return os.path.samefile(parent, directory)
    except OSError:
        return os.path.realpath(parent) == os.path.realpath(directory)


def clash_problems(roles: Sequence[Role]) -> list[str]:
    """Why the outputs among ``roles`` cannot be written: each that is an input or another
    output, one line each ("PATH: cannot write the WHAT: it is ..."); [] when none is."""
    files = [
        (role, role.path, _identity(role.path)) for role in roles if role.path and not role.writes
    ]
    problems: list[str] = []
    for index, (role, path, key) in enumerate(files):
        if role.is_input or key is None:
            continue
        # Inputs first (whatever their order), then the outputs before this one.
        earlier = [other for other in files if other[0].is_input]
        earlier += [other for other in files[:index] if not other[0].is_input]
        same = next((other for other, _, other_key in earlier if other_key == key), None)
        if same is not None:
            problems.append(
                f"{path}: cannot write the {role.what}: it is {same.path}, {_whose(same)}"
            )
    for directory in roles:
        if not (directory.path and directory.writes):
            continue
        for role, path, key in files:
            name = os.path.basename(path)
            if key is None or not any(fnmatch.fnmatchcase(name, glob) for glob in directory.writes):
                continue
            if _same_directory(path, directory.path):
                problems.append(
                    f"{directory.path}: cannot write the {directory.what}: it would replace "
                    f"{name} in it, {_whose(role)}"
                )
    return problems


def output_problem(option: str, path: str | None, what: str, *, directory: bool = False) -> str:
    """Why ``path`` cannot take the output of ``option`` ("" when it can), checked before a run.

    The check writes as the output will (permission bits say nothing for root, or on /proc or a
    read-only mount): a file or directory it has to create for that is removed again at once,
    and one already there is opened to write without being changed.
    """
    if path is None:
        return ""
    if not path.strip():
        return f"{option}: expected a path to write the {what} to, got {path!r}"
    if directory:
        reason = _directory_problem(path)
    elif os.path.isdir(path):
        reason = "is a directory"
    else:
        parent = os.path.dirname(os.path.abspath(path))
        reason = f"no such directory {parent}" if not os.path.isdir(parent) else _file_problem(path)
    return f"{path}: cannot write the {what}: {reason}" if reason else ""


def _write_problem(exc: OSError) -> str:
    """The reason an output could not be written, as the pre-run checks say it."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    return exc.strerror or str(exc)


def _file_problem(path: str) -> str:
    """Why the file ``path`` (its directory exists) cannot be written ("" when it can)."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return _existing_file_problem(path)
    except OSError as exc:
        return _write_problem(exc)
    os.close(handle)
    os.unlink(path)
    return ""


def _existing_file_problem(path: str) -> str:
    """Why ``path``, which exists, cannot be written: a regular file is opened to write (not
    truncated); a pipe or device only asks for permission (opening it could block or act)."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "" if os.access(path, os.W_OK) else "permission denied"
        handle = os.open(path, os.O_WRONLY)
    except OSError as exc:
        return _write_problem(exc)
    os.close(handle)
    return ""


def _directory_problem(path: str) -> str:
    """Why the directory ``path`` (created with its parents when missing) cannot take files."""
    existing = os.path.abspath(path)
    missing = ""
    while not os.path.exists(existing):
        existing, missing = os.path.dirname(existing), existing
    if not os.path.isdir(existing):
        return f"{existing} is not a directory"
    try:
        if missing:
            os.mkdir(missing)  # the first directory that the output will create
            os.rmdir(missing)
        else:
            probe = os.path.join(existing, f".nnemu-write-check-{os.getpid()}")
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(probe)
    except OSError as exc:
        return _write_problem(exc)
    return ""


def refuse_outputs(err: TextIO, *problems: str) -> bool:
    """Print the problems with output paths found before a run; True if there were any."""
    found = [problem for problem in problems if problem]
    err.write("".join(f"{problem}\n" for problem in found))
    return bool(found)


def executions_output_problem(path: str | None) -> str:
    """What is wrong with ``--executions PATH`` before a run ("" if nothing)."""
    if path is None:
        return ""
    from nnemu.executions import executions_problem

    return output_problem("--executions", path, "executions") or executions_problem(path)
