"""Every command shown in docs/tutorial.md and README.md runs and prints what the text says.

The tutorial's commands live in fenced blocks marked ``console``: a line ``$ CMD`` is a
command, the lines after it (up to the next ``$`` line or the end of the block) are its
expected output: the command's real output (stdout, then stderr), line for line (trailing
blanks aside), except where a line ``...`` stands for output left out (any number of
lines): a block without ``...`` is the whole output, one ending in ``...`` its first
lines. A line ending in ``...`` stands for an output line that starts with what comes
before it (a line ending in a wall-clock time: ``1 passed in ...``). A command must exit 0 unless the command line or a line of its output section says
``# exit N``. A fenced block whose info string has ``file=NAME`` (``yaml file=my.yaml``)
is written to ``NAME`` at that point of the document, as a reader would save it; a
``diff file=NAME`` block is an edit the reader makes to ``NAME``: its ``-`` lines, which
must appear there together, are replaced by its ``+`` lines.

Commands run in document order in a temporary directory where ``scenarios``, ``tests``
and ``examples`` are links to the repository's, so the tutorial's relative paths work and
its output files land in the temporary directory. ``nnemu ...`` runs in-process through
``nnemu.cli.main`` (the console script's own entry point, without a Python start-up per
command); ``python ...`` and ``pytest ...`` run as subprocesses with this interpreter.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from nnemu.cli import main as nnemu_main

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "tutorial.md"
README = REPO / "README.md"
LINKED = ("scenarios", "tests", "examples")

_FENCE = re.compile(r"^(`{3,})(.*)$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")


@attrs.define
class Command:
    """One ``$`` line of a console block and the output shown under it."""

    line: int
    """Line of the command in its Markdown file (1-based)."""
    text: str
    """The command as written after ``$ ``, without a trailing ``# exit N``."""
    expected: list[str] = attrs.field(factory=list)
    """Output lines the document shows."""
    exit_code: int = 0
    """The exit code the document expects."""


@attrs.frozen
class WriteFile:
    """A fenced block the reader saves as a file."""

    line: int
    """Line of the block's opening fence."""
    name: str
    """File name, relative to the working directory."""
    content: str
    """The block's text."""


@attrs.frozen
class EditFile:
    """A ``diff`` block: an edit the reader makes to a file saved earlier."""

    line: int
    """Line of the block's opening fence."""
    name: str
    """File name, relative to the working directory."""
    old: str
    """The ``-`` lines (without the sign), which the file must contain together."""
    new: str
    """The ``+`` lines that replace them."""

    def apply(self, text: str) -> str:
        """``text`` with the edit made; ValueError when the old lines are not in it once."""
        if text.count(self.old) != 1:
            msg = f"line {self.line}: the '-' lines of the edit are not in {self.name} exactly once"
            raise ValueError(msg)
        return text.replace(self.old, self.new)


Step = Command | WriteFile | EditFile


def extract_steps(markdown: str) -> list[Step]:
    """The console commands and file blocks of a Markdown document, in order."""
    steps: list[Step] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info = match.group(1), match.group(2).strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        words = info.split()
        names = [word.removeprefix("file=") for word in words if word.startswith("file=")]
        if names and words[0] == "diff":
            old = "".join(line[1:] + "\n" for line in body if line.startswith("-"))
            new = "".join(line[1:] + "\n" for line in body if line.startswith("+"))
            steps.append(EditFile(start + 1, names[0], old, new))
        elif names:
            steps.append(WriteFile(start + 1, names[0], "\n".join(body) + "\n"))
        elif words and words[0] == "console":
            steps.extend(_console_commands(body, start + 2))
    return steps


def _console_commands(body: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    for offset, text in enumerate(body):
        if text.startswith("$ "):
            command = text[2:].strip()
            code = 0
            if exit_match := _EXIT.search(command):
                code = int(exit_match.group(1))
                command = command[: exit_match.start()].rstrip()
            commands.append(Command(first_line + offset, command, exit_code=code))
        elif commands:
            if exit_match := _EXIT.fullmatch(text.strip()):
                commands[-1].exit_code = int(exit_match.group(1))
            else:
                commands[-1].expected.append(text)
        elif text.strip():
            msg = f"line {first_line + offset}: console block output before any $ command"
            raise ValueError(msg)
    return commands


def run_command(command: str, cwd: Path) -> tuple[int, str]:
    """Run one documented command in ``cwd``; return its exit code and its output."""
    argv = shlex.split(command)
    if argv[0] == "nnemu":
        out, err = io.StringIO(), io.StringIO()
        previous = Path.cwd()
        os.chdir(cwd)
        try:
            code = nnemu_main(argv[1:], out=out, err=err)
        except SystemExit as exc:  # argparse errors
            code = exc.code if isinstance(exc.code, int) else 2
        finally:
            os.chdir(previous)
        return code, out.getvalue() + err.getvalue()
    if argv[0] == "python":
        argv = [sys.executable, *argv[1:]]
    elif argv[0] == "pytest":
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]]
    else:
        pytest.fail(f"documented commands start with nnemu, python or pytest, not: {command}")
    proc = subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "80", "PYTHONHASHSEED": "0"},
    )
    return proc.returncode, proc.stdout + proc.stderr


ELISION = "..."
"""A shown line that stands for output left out."""


def missing_lines(expected: list[str], output: str) -> list[str]:
    """What of the shown block ``output`` does not print, in order: [] when it matches.

    The block's runs of lines between ``...`` elisions must be runs of the output's lines, in
    order; the first starts the output unless the block starts with ``...``, the last ends it
    unless the block ends with ``...``. Trailing blanks, and blank lines ending either, aside.
    """
    actual = [line.rstrip() for line in output.rstrip().splitlines()]
    shown = [line.rstrip() for line in "\n".join(expected).rstrip().splitlines()]
    runs: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == ELISION:
            runs.append([])
        else:
            runs[-1].append(line)

    def same(got: list[str], want: list[str]) -> bool:
        return len(got) == len(want) and all(
            g.startswith(w[: -len(ELISION)]) if w.endswith(ELISION) else g == w
            for g, w in zip(got, want, strict=True)
        )

    at = 0
    for index, run in enumerate(runs):
        first, last = index == 0, index == len(runs) - 1
        if first and last:
            found = 0 if same(actual, run) else -1
        elif first:
            found = 0 if same(actual[: len(run)], run) else -1
        elif last:
            tail = len(actual) - len(run)
            found = tail if tail >= at and same(actual[tail:], run) else -1
        else:
            places = range(at, len(actual) - len(run) + 1)
            found = next((i for i in places if same(actual[i : i + len(run)], run)), -1)
        if found < 0:
            return [*run] or ["(nothing more)"]
        at = found + len(run)
    return []


def check_steps(steps: list[Step], workdir: Path, source: str) -> list[str]:
    """Write the files and run the commands; describe every command that went wrong."""
    problems = []
    for step in steps:
        if isinstance(step, WriteFile):
            (workdir / step.name).write_text(step.content)
            continue
        if isinstance(step, EditFile):
            path = workdir / step.name
            path.write_text(step.apply(path.read_text()))
            continue
        code, output = run_command(step.text, workdir)
        where = f"{source}:{step.line}: $ {step.text}"
        if code != step.exit_code:
            problems.append(f"{where}\n  exit code {code}, expected {step.exit_code}\n{output}")
            continue
        if missing := missing_lines(step.expected, output):
            shown = "\n".join(f"    {line}" for line in missing)
            problems.append(f"{where}\n  lines not in the output:\n{shown}\n  output:\n{output}")
    return problems


@pytest.fixture(name="workdir")
def _workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory that sees the repository's scenarios, tests and examples."""
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    monkeypatch.setenv("COLUMNS", "80")
    return tmp_path


def test_tutorial_commands_run_and_print_what_it_shows(workdir: Path) -> None:
    """Each console command of docs/tutorial.md exits as shown and prints the lines shown."""
    steps = extract_steps(TUTORIAL.read_text())
    commands = [step for step in steps if isinstance(step, Command)]
    assert len(commands) >= 20, "the tutorial should be walked through by its commands"
    problems = check_steps(steps, workdir, "docs/tutorial.md")
    assert not problems, "\n\n".join(problems)


def readme_commands(markdown: str) -> list[str]:
    """The runnable commands of README.md's ``sh`` blocks (two commands and tour).

    ``pip install`` needs the network and an environment to change, and ``pytest`` is
    this very test suite, so those parts of a ``&&`` chain are left out.
    """
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith(("pip ", "pytest")):
                    continue
                commands.append(part)
    return commands


def test_readme_commands_run(workdir: Path) -> None:
    """The commands of README.md's two-command section and short tour exit 0 (``--plot``
    left out without matplotlib: the optional ``plots`` extra, which ``test`` does not bring)."""
    commands = readme_commands(README.read_text())
    assert any(c.startswith("nnemu run scenarios/quickstart.yaml") for c in commands)
    assert any(c.startswith("nnemu parse") for c in commands)
    if importlib.util.find_spec("matplotlib") is None:
        commands = [command.replace(" --plot", "") for command in commands]
    steps: list[Step] = [Command(0, command, [ELISION]) for command in commands]
    problems = check_steps(steps, workdir, "README.md")
    assert not problems, "\n\n".join(problems)


def test_extract_steps_reads_commands_outputs_exit_codes_and_files() -> None:
    """The extractor finds commands, their shown output, ``# exit N`` and file blocks."""
    doc = "\n".join(
        [
            "text",
            "```yaml file=s.yaml",
            "name: x",
            "```",
            "```console",
            "$ nnemu run s.yaml",
            "scenario x",
            "...",
            "$ nnemu run bad.yaml  # exit 2",
            "$ nnemu parse t.html",
            "# exit 2",
            "```",
            "```sh",
            "$ not a console block",
            "```",
            "```diff file=s.yaml",
            "-name: x",
            "+name: y",
            "```",
        ]
    )
    steps = extract_steps(doc)
    assert steps[0] == WriteFile(2, "s.yaml", "name: x\n")
    assert steps[1:] == [
        Command(6, "nnemu run s.yaml", ["scenario x", "..."], 0),
        Command(9, "nnemu run bad.yaml", [], 2),
        Command(10, "nnemu parse t.html", [], 2),
        EditFile(16, "s.yaml", "name: x\n", "name: y\n"),
    ]
    assert missing_lines(["scenario x  seed 7", "..."], "scenario x  seed 7\nmore\n") == []
    assert missing_lines(["scenario x"], "scenario x  seed 7\n") == ["scenario x"]
    assert missing_lines(["a", "...", "c", "...", "e"], "a\nb\nc\nd\ne\n") == []
    assert missing_lines(["a", "...", "e"], "a\nb\nc\nd\ne\nf\n") == ["e"]
    assert missing_lines(["a", "c"], "a\nb\nc\n") == ["a", "c"]
    assert missing_lines([], "output\n") == ["(nothing more)"]
    assert missing_lines(["1 passed in ..."], "1 passed in 4.47s\n") == []
    assert missing_lines(["1 passed in ..."], "1 failed in 4.47s\n") == ["1 passed in ..."]


def test_edit_blocks_replace_their_lines_once_or_fail() -> None:
    """A diff block's edit replaces its '-' lines, and refuses a file that lacks them."""
    edit = EditFile(3, "t.py", "    threads: 1\n", "    threads: 2\n")
    assert edit.apply("apps:\n    threads: 1\nx\n") == "apps:\n    threads: 2\nx\n"
    with pytest.raises(ValueError, match=r"line 3: .* not in t\.py exactly once"):
        edit.apply("apps:\n    threads: 3\n")


pytestmark = pytest.mark.slow
"""Every command of the tutorial and the README run as shown (pytest runs among them).  In the slow tier (pytest -m slow; CI runs it)."""
