"""What the timing benchmarks share: arena byte-compiled, as an installed package is.

``pip install`` byte-compiles a package as it installs it, and Python writes the bytecode of
an editable checkout on its first import, so a deployed ``arena`` never compiles its own source
at start-up. With ``PYTHONDONTWRITEBYTECODE`` set (as on some build machines), a checkout is
compiled again by every process: about 0.1 s of each command's start, 100 modules. The
benchmarks that time whole ``arena`` processes byte-compile the package first (into its
``__pycache__`` folders, which git ignores), so they time arena as it is deployed.
"""

from __future__ import annotations

import compileall
from pathlib import Path

import arena


def byte_compile_arena() -> None:
    """Write the bytecode of every module of the arena package (where it is stale)."""
    compileall.compile_dir(str(Path(arena.__file__).parent), quiet=1)
