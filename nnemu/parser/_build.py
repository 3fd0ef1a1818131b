"""Compile the parser's state machine (``_engine.py``) to C with mypyc: parsing ~1.4x faster.

    python -m nnemu.parser._build     # the same as ``python -m nnemu._build parser``

Kept for the older command; ``nnemu._build`` builds every compiled module.
"""

from __future__ import annotations

import sys

from nnemu._build import main

if __name__ == "__main__":
    sys.exit(main(["parser"]))
