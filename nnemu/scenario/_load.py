"""YAML text -> validated frozen ``Scenario``: the loader's entry points.

The YAML is composed, not constructed, so every value keeps its position
(``_yaml.py``, which also refuses alias bombs); the nodes are then checked against
the attrs classes of ``_model.py`` (their type hints and declared bounds are the
schema, ``_schema.py``) by the schema walk (``_walk.py``) and each section's rules
(``_rules.py``), collecting every problem before raising one ``ScenarioError``.
``_dump.py`` goes back to YAML.
"""

from __future__ import annotations

import os

import attrs

from nnemu._files import DocumentTooLarge, read_document
from nnemu.errors import ScenarioError
from nnemu.scenario._model import Scenario
from nnemu.scenario._rules import _Checker
from nnemu.scenario._yaml import compose_text, file_problem


def load_scenario_text(text: str, source: str = "<string>") -> Scenario:
    """Load and validate a scenario from YAML text.

    Args:
        text: the YAML document.
        source: file name used in problem positions and stored in ``Scenario.source``.

    Raises:
        ScenarioError: every problem found, sorted by position.
    """
    root = compose_text(text, source)
    checker = _Checker(source)
    scenario = checker.document(root)
    if checker.problems or scenario is None:
        raise ScenarioError(list(dict.fromkeys(checker.problems)))
    return attrs.evolve(scenario, source=source)


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Load and validate a scenario file; ``Scenario.source`` is ``path`` as given.

    Raises:
        ScenarioError: the file cannot be read, or every problem found in it.
    """
    source = os.fsdecode(path)
    try:
        text = read_document(path)
    except DocumentTooLarge as err:
        raise ScenarioError([file_problem(source, str(err))]) from err
    except UnicodeDecodeError as err:
        message = (
            f"expected UTF-8 text, got byte {err.object[err.start]:#04x} at offset {err.start}"
        )
        raise ScenarioError([file_problem(source, message)]) from err
    except OSError as err:
        message = f"cannot read the file: {err.strerror or err}"
        raise ScenarioError([file_problem(source, message)]) from err
    return load_scenario_text(text, source)
