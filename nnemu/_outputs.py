"""One file, one role: the check every command makes before it writes anything.

An output path that names one of the command's inputs (``nnemu run s.yaml --trace s.yaml``,
through a symbolic or a hard link too) or the same file as another output (``--trace x.json
--report x.json``) is refused before the command reads or writes a byte: the first would
destroy the input, the second keep only the output written last.  A directory output (a
sweep's ``--out``, ``run --plots``) clashes with an input or output that lies in it under a
name it writes (``results.jsonl``, ``*.png``).

Files that are not regular (``/dev/null``, ``/dev/stdout``, a pipe) are never compared: two
outputs may both go to ``/dev/null``.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Sequence

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
