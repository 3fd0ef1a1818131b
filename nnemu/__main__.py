"""``python -m nnemu`` and the ``nnemu`` console script: the command line (``nnemu.cli``).

``main`` makes SIGINT quiet before it imports the CLI (``nnemu._quiet_start``), so a Ctrl-C
while the CLI's modules are still being imported ends with ``interrupted`` and exit status 130,
not a traceback.
"""

from __future__ import annotations

from nnemu import _quiet_start


def main() -> None:
    """The console script: SIGINT quiet, then the CLI's imports and ``console_main``."""
    _quiet_start()
    from nnemu.cli import console_main

    console_main()


if __name__ == "__main__":
    main()
