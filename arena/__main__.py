"""The ``arena`` command (``python -m arena``, and the console script): the CLI, loaded with
the garbage collector paused (:func:`arena.startup.loading_for_good`). Commands that load more
on the way (:func:`arena.cli.common.runtime`) load it the same way.
"""

from __future__ import annotations

from arena.startup import loading_for_good


def run() -> None:
    with loading_for_good():
        from arena.cli import main
    main()


if __name__ == "__main__":
    run()
