"""``--set KEY=VALUE``: changes to a scenario, validated like the YAML.

``nnemu run --set``, ``nnemu replay --set`` (what-ifs on a replayed trace) and the varied
keys of ``nnemu sweep`` all go through ``apply_overrides``.

A key is a dotted scenario path where list entries are named: ``apps.<app>.priority``,
``devices.<dev>.performance.quant8.exec_time``, ``models.<model>.dtype``, or a top-level
key (``seed``, ``ipc.latency_us``).  The value is read as a YAML scalar or flow
collection (``high``, ``0.05``, ``[npu]``).  The edited document is loaded again with
``load_scenario_text``, so every rule of the scenario format applies; its problems are
reported against the ``--set`` key that caused them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import attrs
import yaml

from nnemu.errors import NnemuError, ScenarioError
from nnemu.scenario import Scenario, dump_scenario, load_scenario_text

_NAMED_LISTS: Final = {"apps": "an app", "devices": "a device", "models": "a model"}
_INDEXED: Final = re.compile(r"\b(apps|devices|models)\[(\d+)\]")


class OverrideError(NnemuError):
    """One or more ``--set`` assignments cannot be applied; one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _parse_value(raw: str) -> Any:
    try:
        return yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as err:
        msg = f"expected a YAML value, got {raw!r}"
        raise ValueError(msg) from err


def apply_overrides(scenario: Scenario, assignments: Sequence[str]) -> Scenario:
    """``scenario`` with each ``KEY=VALUE`` of ``assignments`` applied, validated.

    Raises:
        OverrideError: every problem of every assignment, as ``--set <key>: <message>``: those
            of the assignments' form (no ``=``, an unknown app, ...) first, then what the
            scenario's rules refuse in the others.
    """
    if not assignments:
        return scenario
    data: dict[str, Any] = yaml.safe_load(dump_scenario(scenario))
    problems: list[str] = []
    # Assignments written into ``data``: validated together even when others were refused,
    # so that every problem of every assignment is reported at once.
    applied = 0
    for text in assignments:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"--set {text}: expected KEY=VALUE")
            continue
        try:
            value = _parse_value(raw)
        except ValueError as err:
            problems.append(f"--set {key}: {err}")
            continue
        parts = key.split(".")
        target: dict[str, Any] = data
        rest = parts
        if parts[0] in _NAMED_LISTS:
            kind = _NAMED_LISTS[parts[0]]
            entries = data.get(parts[0]) or []
            if len(parts) < 3 or not all(parts[1:]):
                problems.append(
                    f"--set {key}: expected {parts[0]}.<{parts[0][:-1]}>.<key>, e.g. "
                    f"{parts[0]}.{entries[0]['name'] if entries else 'name'}.<key>"
                )
                continue
            found = [entry for entry in entries if entry.get("name") == parts[1]]
            if not found:
                names = ", ".join(str(entry.get("name")) for entry in entries) or "none"
                problems.append(
                    f"--set {'.'.join(parts[:2])}: expected the name of {kind} "
                    f"({names}), got {parts[1]!r}"
                )
                continue
            target, rest = found[0], parts[2:]
        if not all(rest):
            problems.append(f"--set {key}: empty key in the path")
            continue
        node: Any = target
        for index, part in enumerate(rest[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                where = ".".join(parts[: len(parts) - len(rest) + index + 1])
                problems.append(f"--set {key}: {where} is not a mapping")
                break
            node = child
        else:
            node[rest[-1]] = value
            applied += 1
    if not applied:
        # Every assignment was refused above: the scenario itself is unchanged and valid.
        raise OverrideError(problems)
    try:
        changed = load_scenario_text(yaml.safe_dump(data, sort_keys=False), "--set")
    except ScenarioError as err:

        def named(match: re.Match[str]) -> str:
            entries = data.get(match.group(1)) or []
            index = int(match.group(2))
            name = entries[index].get("name") if index < len(entries) else None
            return f"{match.group(1)}.{name}" if name is not None else match.group(0)

        raise OverrideError(
            problems
            + [
                f"--set {_INDEXED.sub(named, problem.key_path) or '(scenario)'}: {problem.message}"
                for problem in err.problems
            ]
        ) from err
    if problems:
        raise OverrideError(problems)
    return attrs.evolve(changed, source=scenario.source)
