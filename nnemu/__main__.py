"""``python -m nnemu`` and the ``nnemu`` console script: the command line (``nnemu.cli``).

Importing the package has made SIGINT quiet already (``nnemu/__init__.py``), so a Ctrl-C while
the CLI's modules are still being imported ends with ``interrupted`` and exit status 130, not a
traceback; ``main`` makes sure of it when the package could not tell that the command line
imported it (a launcher whose ``__main__`` is not the script's file).
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
