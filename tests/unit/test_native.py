"""The compiled modules: when they are used, when a build is up to date, and the install's fallback."""

from __future__ import annotations

import ast
import io
import re
import sys
import tomllib
import types
from pathlib import Path

import pytest

from nnemu import _build, _native
from nnemu._native import Stamp, Target
from nnemu.cli import main

REPO = Path(__file__).resolve().parents[2]
_GROUP = _native.TARGETS[0]
_SOURCE, _COMPILED = _GROUP.modules[0]


@pytest.fixture(autouse=True)
def _no_pure_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no NNEMU_PURE / NNEMU_BUILD_PURE of the caller's shell."""
    monkeypatch.delenv(_native.PURE_ENV, raising=False)
    monkeypatch.delenv(_build.BUILD_PURE_ENV, raising=False)
    for group in _native.TARGETS:
        if group.legacy_env:
            monkeypatch.delenv(group.legacy_env, raising=False)


def _fake_twin(crc: int) -> types.ModuleType:
    """A stand-in for a compiled module, built from sources with CRC ``crc``."""
    module = types.ModuleType(_COMPILED)
    module.SOURCE_CRC = crc  # type: ignore[attr-defined]
    return module


@pytest.fixture(name="twin")
def _twin(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The first target's compiled module, as if built from today's sources.

    Only that key of ``sys.modules`` is patched: restoring the whole of it would drop the
    modules ``status`` imports meanwhile (another target's), and their reimports would not
    be the objects already in use.
    """
    module = _fake_twin(_native.source_crc(_GROUP))
    monkeypatch.setitem(sys.modules, _COMPILED, module)
    return module


def test_compiled_twin_built_from_current_sources_is_used(twin: types.ModuleType) -> None:
    """A compiled module recording its sources' current CRC-32 is the one ``compiled`` returns."""
    assert _native.compiled(_SOURCE) is twin


def test_compiled_twin_of_edited_sources_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a source of the target is edited (another CRC), its compiled module is not used."""
    monkeypatch.setitem(sys.modules, _COMPILED, _fake_twin(_native.source_crc(_GROUP) ^ 1))
    assert _native.compiled(_SOURCE) is None
    assert dict(_native.status())[_GROUP.name] == "stale"


def test_module_no_target_compiles_runs_its_source() -> None:
    """A module that no target compiles (or no module at all) has no compiled twin."""
    assert _native.compiled("nnemu.stats") is None
    assert _native.compiled("nnemu.no_such_module") is None


@pytest.mark.parametrize(
    ("value", "off"),
    [
        ("1", True),
        ("all", True),
        (_GROUP.name, True),
        (f"someother, {_GROUP.name}", True),
        ("someother", False),
        ("0", False),
        ("", False),
    ],
)
def test_nnemu_pure_turns_targets_off(
    monkeypatch: pytest.MonkeyPatch, twin: types.ModuleType, value: str, off: bool
) -> None:
    """NNEMU_PURE=1, =all or a list naming the target turns its compiled module off; 0, empty or other names do not."""
    monkeypatch.setenv(_native.PURE_ENV, value)
    assert (_native.compiled(_SOURCE) is None) is off
    assert (dict(_native.status())[_GROUP.name] == "off") is off


def test_legacy_parser_variable_still_turns_the_parser_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NNEMU_PURE_PARSER=1, the older spelling, turns the parser's compiled engine off."""
    parser = _native.target("parser")
    assert parser.legacy_env == "NNEMU_PURE_PARSER"
    source, name = parser.modules[0]
    module = _fake_twin(_native.source_crc(parser))
    monkeypatch.setenv("NNEMU_PURE_PARSER", "1")
    monkeypatch.setitem(sys.modules, name, module)
    assert _native.compiled(source) is None
    assert "parser (off: NNEMU_PURE_PARSER)" in _native.describe()


def test_version_says_what_runs_compiled(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nnemu --version`` prints the version, then which targets run compiled and which pure, and why."""
    monkeypatch.setenv(_native.PURE_ENV, "1")
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    off = ", ".join(f"{group.name} (off: NNEMU_PURE)" for group in _native.TARGETS)
    assert re.fullmatch(
        rf"nnemu \S+( \(not installed\))? \(compiled: none; pure Python: {re.escape(off)}\)\n",
        capsys.readouterr().out,
    )


def test_version_note_names_compiled_targets(twin: types.ModuleType) -> None:
    """A target whose compiled module is in use is listed as compiled."""
    note = _native.describe()
    assert note.startswith("compiled: ")
    assert _GROUP.name in note.split(";")[0]


def test_version_note_gives_the_install_fallback_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A target the install left pure Python is 'not built' with the reason its stamp records."""
    stamp = Stamp(crc=1, unbuilt="the build failed: error: command 'gcc' failed")
    _build._record_stamp(tmp_path, _GROUP.name, stamp)
    monkeypatch.setitem(sys.modules, _COMPILED, None)  # None: the import fails
    note = _native.describe(tmp_path)
    assert f"{_GROUP.name} (not built: the build failed: error: command 'gcc' failed)" in note


# --- the stamp file and up_to_date -------------------------------------------------------

_ALPHA = Target(name="alpha", modules=(("nnemu.stats", "nnemu._calpha"),), depends=())
_BETA = Target(
    name="beta",
    modules=(("nnemu.errors", "nnemu._cbeta"), ("nnemu.compare", "nnemu.sub._cbeta2")),
    depends=("_text.py",),
)
"""Two targets over real sources (their CRCs are real); beta is a group of two modules."""


def _fake_build(group: Target, destination: Path) -> list[Path]:
    """What ``build_target`` does, without mypyc: writes each module's extension file."""
    suffix = _native.extension_suffix()
    written = []
    for index, (_, compiled_name) in enumerate(group.modules):
        *package, leaf = compiled_name.split(".")
        folder = destination.joinpath(*package[1:])
        folder.mkdir(parents=True, exist_ok=True)
        names = [leaf + suffix] + ([f"{leaf}__mypyc{suffix}"] if index == 0 else [])
        for name in names:
            (folder / name).write_bytes(b"\x7fELF")
            written.append(folder / name)
    _build._record_stamp(
        destination, group.name, _build._stamp_of(_native.source_crc(group), destination, written)
    )
    return written


def test_fresh_build_is_up_to_date(tmp_path: Path) -> None:
    """A build recorded in the stamp file, with every file present, is up to date."""
    _fake_build(_BETA, tmp_path)
    assert _build.up_to_date(_BETA, tmp_path)
    stamp = _native.read_stamps(tmp_path)["beta"]
    assert stamp.suffix == _native.extension_suffix()
    assert sorted(stamp.files) == sorted(
        [
            f"_cbeta{stamp.suffix}",
            f"_cbeta__mypyc{stamp.suffix}",
            f"sub/_cbeta2{stamp.suffix}",
        ]
    )


def test_build_is_out_of_date_when_sources_files_or_python_differ(tmp_path: Path) -> None:
    """Another CRC, a deleted file, another interpreter's suffix or no stamp all mean a rebuild."""
    assert not _build.up_to_date(_ALPHA, tmp_path)  # nothing built
    files = _fake_build(_ALPHA, tmp_path)
    stamp = _native.read_stamps(tmp_path)["alpha"]
    _build._record_stamp(tmp_path, "alpha", stamp._replace(crc=stamp.crc ^ 1))
    assert not _build.up_to_date(_ALPHA, tmp_path)
    _build._record_stamp(tmp_path, "alpha", stamp._replace(suffix=".cpython-399-other.so"))
    assert not _build.up_to_date(_ALPHA, tmp_path)
    _build._record_stamp(tmp_path, "alpha", stamp)
    assert _build.up_to_date(_ALPHA, tmp_path)
    files[-1].unlink()
    assert not _build.up_to_date(_ALPHA, tmp_path)


def test_older_or_damaged_stamp_files_mean_not_built(tmp_path: Path) -> None:
    """A stamp in the older format (target -> CRC) or unreadable JSON is ignored, not an error."""
    _fake_build(_ALPHA, tmp_path)
    stamp_file = tmp_path / _native.STAMP_FILE
    stamp_file.write_text(f'{{"alpha": {_native.source_crc(_ALPHA)}}}\n', encoding="utf-8")
    assert _native.read_stamps(tmp_path) == {}
    assert not _build.up_to_date(_ALPHA, tmp_path)
    stamp_file.write_text("{not json", encoding="utf-8")
    assert _native.read_stamps(tmp_path) == {}


# --- the package build's fallback ---------------------------------------------------------


class _Builder:
    """Stands for ``build_target``: alpha builds, beta's compile fails as mypyc's would."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, group: Target, destination: Path) -> list[Path]:
        self.calls.append(group.name)
        if group.name == "beta":
            raise RuntimeError(
                "mypyc failed for beta:\nnnemu/_cbeta.py:12: error: Name 'x' is not defined\n"
                "nnemu/_cbeta.py:14: error: another\nerror: command 'gcc' failed"
            )
        return _fake_build(group, destination)


@pytest.fixture(name="builder")
def _builder(monkeypatch: pytest.MonkeyPatch) -> _Builder:
    """Two targets, alpha and beta, and a builder that fails on beta."""
    builder = _Builder()
    monkeypatch.setattr(_build, "TARGETS", (_ALPHA, _BETA))
    monkeypatch.setattr(_build, "build_target", builder)
    monkeypatch.setattr(_build, "probe_toolchain", lambda: None)
    return builder


def test_no_working_compiler_fails_every_target_before_any_compile(
    builder: _Builder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """When the toolchain probe fails, no target is type-checked and compiled: each is left pure with the probe's reason."""

    def no_compiler() -> None:
        raise RuntimeError(
            "no compiled module can be built here:\nerror: command '/bin/false' failed with exit code 1"
        )

    monkeypatch.setattr(_build, "probe_toolchain", no_compiler)
    outcomes = _build.package_build(tmp_path)
    assert builder.calls == []
    assert [(o.name, o.action) for o in outcomes] == [("alpha", "failed"), ("beta", "failed")]
    assert {o.reason for o in outcomes} == {
        "the build failed: error: command '/bin/false' failed with exit code 1"
    }


def test_toolchain_probe_finds_a_broken_c_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe builds a real extension module, so a C compiler that fails is caught by it."""
    pytest.importorskip("mypyc")
    monkeypatch.setenv("CC", "/bin/false")
    with pytest.raises(RuntimeError, match="/bin/false"):
        _build.probe_toolchain()


def test_failed_compile_leaves_the_target_pure_and_says_why(
    builder: _Builder, tmp_path: Path
) -> None:
    """A target that does not compile is reported and stamped, the others are built, nothing is raised."""
    _fake_build(_BETA, tmp_path)  # an older build of beta, now to be replaced
    old_stamp = _native.read_stamps(tmp_path)["beta"]
    _build._record_stamp(tmp_path, "beta", old_stamp._replace(crc=old_stamp.crc ^ 1))
    outcomes = _build.package_build(tmp_path)
    assert [(o.name, o.action) for o in outcomes] == [("alpha", "compiled"), ("beta", "failed")]
    beta = outcomes[1]
    assert beta.reason == "the build failed: nnemu/_cbeta.py:12: error: Name 'x' is not defined"
    assert "error: another" in beta.error
    assert beta.files == ()
    assert not list(tmp_path.rglob("_cbeta*")), "the stale build of beta is removed"
    assert _native.read_stamps(tmp_path)["beta"].unbuilt == beta.reason
    line = _build.summary(outcomes)
    assert "\n" not in line
    assert line.startswith("nnemu: warning: not compiled, pure Python runs instead: beta (")
    assert "compiled: alpha (compiled)" in line


def test_repeated_install_rebuilds_only_what_is_not_up_to_date(
    builder: _Builder, tmp_path: Path
) -> None:
    """A second package build keeps the up-to-date target and tries the failed one again."""
    _build.package_build(tmp_path)
    builder.calls.clear()
    outcomes = _build.package_build(tmp_path)
    assert [(o.name, o.action) for o in outcomes] == [("alpha", "up to date"), ("beta", "failed")]
    assert builder.calls == ["beta"]
    assert outcomes[0].files == tuple(
        tmp_path / name for name in _native.read_stamps(tmp_path)["alpha"].files
    )


def test_wheel_copies_an_up_to_date_build_from_the_source_tree(
    builder: _Builder, tmp_path: Path
) -> None:
    """A wheel's build takes the source tree's up-to-date build instead of compiling again."""
    source, wheel = tmp_path / "src", tmp_path / "wheel"
    _build.package_build(source)
    builder.calls.clear()
    outcomes = _build.package_build(wheel, copy_from=source)
    assert [(o.name, o.action) for o in outcomes] == [("alpha", "copied"), ("beta", "failed")]
    assert builder.calls == ["beta"]
    assert _build.up_to_date(_ALPHA, wheel)
    assert [p.read_bytes() for p in outcomes[0].files] == [b"\x7fELF", b"\x7fELF"]


def test_build_pure_variable_compiles_nothing_and_removes_builds(
    builder: _Builder, tmp_path: Path
) -> None:
    """NNEMU_BUILD_PURE=1 compiles nothing, removes earlier builds and stamps why."""
    _build.package_build(tmp_path)
    outcomes = _build.package_build(tmp_path, environ={"NNEMU_BUILD_PURE": "1"})
    assert [(o.name, o.action) for o in outcomes] == [("alpha", "skipped"), ("beta", "skipped")]
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".so", ".pyd")]
    assert _native.read_stamps(tmp_path)["alpha"].unbuilt == "NNEMU_BUILD_PURE=1 at install"
    assert _build.summary(outcomes) == (
        "nnemu: NNEMU_BUILD_PURE=1 at install: nothing compiled, pure Python runs"
    )


def test_unexpected_error_in_the_build_does_not_fail_the_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Even a bug in the build step (an unexpected exception) leaves pure Python and no exception."""

    def broken(names: object, destination: Path) -> None:
        raise ValueError("unexpected")

    monkeypatch.setattr(_build, "TARGETS", (_ALPHA,))
    monkeypatch.setattr(_build, "build", broken)
    [outcome] = _build.package_build(tmp_path)
    assert (outcome.action, outcome.reason) == ("failed", "the build failed: unexpected")


def test_check_fails_unless_every_target_runs_compiled(
    monkeypatch: pytest.MonkeyPatch, twin: types.ModuleType
) -> None:
    """``python -m nnemu._build --check`` (CI's check) exits 1 when a target runs pure Python."""
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setenv(_native.PURE_ENV, _GROUP.name)
    assert _build.check(out, err) == 1
    assert f"{_GROUP.name}: off\n" in out.getvalue()
    assert err.getvalue().startswith("nnemu: error: not every compiled module is in use (")
    monkeypatch.delenv(_native.PURE_ENV)
    if all(state == "compiled" for _, state in _native.status()):
        assert _build.check(io.StringIO(), io.StringIO()) == 0


def test_build_requirements_cover_the_compiled_modules_imports() -> None:
    """Every third-party package a compiled module imports is in [build-system] requires (mypyc must see its types)."""
    requires = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["build-system"][
        "requires"
    ]
    required = {re.split(r"[<>=!~ \[]", item)[0].lower() for item in requires}
    for group in _native.TARGETS:
        for path in group.sources:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in ("nnemu", "__future__"):
                        continue
                    assert top.lower() in required, f"{path.name} imports {top}"


def _file_of(module: str) -> Path:
    path = _native.module_path(module)
    return path if path.exists() else path.with_suffix("") / "__init__.py"


def _definer(module: str, name: str) -> Path:
    """The file that defines what ``from module import name`` gives, through re-exports."""
    path = _file_of(module)
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nnemu"):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _definer(node.module, alias.name)
    return path


@pytest.mark.parametrize(
    ("group", "source"),
    [(group, source) for group in _native.TARGETS for source, _ in group.modules],
    ids=lambda value: value if isinstance(value, str) else value.name,
)
def test_group_sources_cover_what_its_modules_import_from_nnemu(group: Target, source: str) -> None:
    """What a compiled module imports from nnemu is defined in a file whose edits make it stale.

    mypyc compiles against the imported names' definitions (``Final`` constants are copied in,
    calls assume the signatures), wherever a package re-exports them from.
    The exceptions import ``perfetto`` (not a build requirement) and are looked up at run
    time, on first use: the Perfetto reader's classes (through ``nnemu.trace``) and writer.
    """
    from nnemu import trace

    sources = set(group.sources)
    tree = ast.parse(_native.module_path(source).read_text(encoding="utf-8"))
    imports = [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("nnemu")
        and node.module != "nnemu.tracer._perfetto_writer"
        for alias in node.names
    ]
    assert imports, f"{source} imports from nnemu"
    uncovered = {
        (module, name, path.relative_to(_native.PACKAGE_DIR).as_posix())
        for module, name in imports
        if not (module == "nnemu.trace" and name in trace._PERFETTO_NAMES)
        if (path := _definer(module, name)) not in sources
    }
    assert uncovered == set()


def test_check_ends_quietly_when_its_reader_has_gone() -> None:
    """``python -m nnemu._build --check | head -1``: a closed stdout ends it with 141 and no
    traceback, as nnemu's commands end."""
    import os
    import subprocess

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        done = subprocess.run(
            [sys.executable, "-m", "nnemu._build", "--check"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141
    assert "Traceback" not in done.stderr


def test_a_compiled_module_that_does_not_load_runs_its_source_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A compiled group whose import fails with ValueError (built against a newer librt than the
    one installed) leaves its source running, and ``nnemu --version`` says why."""
    import importlib

    group = _native.target("tracer")
    source, name = group.modules[0]
    message = "API version conflict for librt.strings, expected 4 or newer, found 3 (hint: upgrade librt)"
    real = importlib.import_module

    def failing(module: str, package: str | None = None) -> types.ModuleType:
        if module == name:
            raise ValueError(message)
        return real(module, package)

    monkeypatch.setattr(importlib, "import_module", failing)
    assert _native.compiled(source) is None
    assert dict(_native.status())["tracer"] == f"does not load: {message}"
    assert f"tracer (does not load: {message})" in _native.describe()
