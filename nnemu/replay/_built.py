"""What a replay's build gives: ``BuiltReplay`` with its ``Note``s (derived or assumed, and
the scenario keys each gives a value of), and the preset ``choose_model`` maps a model name to."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from nnemu.scenario import (
    Scenario,
)


@attrs.frozen(kw_only=True)
class ModelChoice:
    """The preset a ``[NN_LA_PO]`` name maps to."""

    preset: str
    """Preset name."""
    dtype: str
    """float32 or quant8."""
    recognised: bool
    """Whether the name said which model it is (else the default was assumed)."""


def choose_model(name: str | None) -> ModelChoice:
    """The preset for a model named ``name`` (``mobilenet_quantized`` -> mobilenet_v1 quant8)."""
    lowered = (name or "").lower()
    dtype = "quant8" if "quant" in lowered else "float32"
    if "mobilenet" in lowered:
        v2 = "v2" in lowered.replace("mobilenet_v2", "v2").replace("mobilenetv2", "v2")
        return ModelChoice(
            preset="mobilenet_v2" if v2 else "mobilenet_v1", dtype=dtype, recognised=True
        )
    if "lstm" in lowered:
        return ModelChoice(preset="lstm", dtype="float32", recognised=True)
    return ModelChoice(preset="mobilenet_v1", dtype=dtype, recognised=False)


@attrs.frozen
class Note:
    """One line of what a replay derived from the trace or assumed."""

    text: str
    """The line: ``apps.camera.priority: medium (no priority in the trace)``."""
    keys: tuple[str, ...]
    """The scenario keys (``--set`` paths) whose values the line gives."""

    def replaced_by(self, overrides: Sequence[str]) -> tuple[list[str], bool]:
        """The ``KEY=VALUE`` overrides that change a value this line gives, and whether they
        replace all of it (each of its keys is set, or a key above it is)."""
        found = []
        whole = dict.fromkeys(self.keys, False)
        for text in overrides:
            key = text.partition("=")[0].strip()
            hit = False
            for mine in self.keys:
                if mine == key or mine.startswith(key + "."):
                    whole[mine] = hit = True
                elif key.startswith(mine + "."):
                    hit = True
            if hit:
                found.append(text)
        return found, bool(found) and all(whole.values())


@attrs.frozen(kw_only=True)
class BuiltReplay:
    """The scenario a replay runs and how it was made."""

    scenario: Scenario
    """The replay scenario (before ``--set`` overrides)."""
    derived: tuple[Note, ...]
    """What was derived from the trace."""
    assumed: tuple[Note, ...]
    """What the trace did not tell and was assumed."""
    loop_period_ms: float
    """Shift between two loops of the trace (``-l N``)."""
    warnings: tuple[str, ...] = ()
    """What the replay had to change from the trace, and why (printed on stderr)."""


def _ms(ns: float) -> float:
    return round(ns / 1e6, 6)


@attrs.define
class _Notes:
    """The text lines a build collects, in the order they are found."""

    derived: list[Note] = attrs.Factory(list)
    """What was derived from the trace."""
    assumed: list[Note] = attrs.Factory(list)
    """What the trace did not tell and was assumed."""
    warnings: list[str] = attrs.Factory(list)
    """What the replay changed from the trace, and why."""

    def derive(self, text: str, *keys: str) -> None:
        """Note ``text``, derived from the trace, giving the values of ``keys``."""
        self.derived.append(Note(text, keys))

    def assume(self, text: str, *keys: str) -> None:
        """Note ``text``, assumed, giving the values of ``keys``."""
        self.assumed.append(Note(text, keys))
