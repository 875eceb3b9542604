"""The ``arena`` command (``python -m arena``, and the console script): the CLI, loaded with
the garbage collector paused.

Loading the CLI and its libraries makes objects that live as long as the process and no
garbage: a collection while they load only walks them (0.1 s of every command's start), and
once frozen (``gc.freeze``) later collections skip them. Commands that load more on the way
(:func:`arena.cli.common.runtime`) freeze that too.
"""

from __future__ import annotations

import gc


def run() -> None:
    gc.disable()
    try:
        from arena.cli import main
    finally:
        gc.freeze()
        gc.enable()
    main()


if __name__ == "__main__":
    run()
