"""``arena publish DIR``: write or update the verifiable dataset (arena.publish)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from arena.cli.common import (
    VIEW_FORMATS,
    AtOption,
    ViewFormatOption,
    clock_for,
    console,
    one_of,
    state,
)


def publish(
    ctx: typer.Context,
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The dataset directory (created if missing).")
    ],
    at: AtOption = None,
    fmt: ViewFormatOption = "table",
) -> None:
    """Write or update the verifiable dataset: tables, record chain, commitments, leaderboard,
    analysis, incident log, dataset card (README.md), static site and manifest.

    Only files whose bytes changed are replaced; each publish that changes something is a new
    version, and every version's manifest is kept in DIR/manifests/. The public half of
    ARENA_SIGNING_KEY is published as public_key.pem. Check the result with `arena verify DIR`.
    """
    fmt = one_of("--format", fmt, VIEW_FORMATS)
    from arena.publish.dataset import publish_dataset
    from arena.publish.parts import dataset_parts
    from arena.record.signing import signing_key_from_env

    app_state = state(ctx)
    report = publish_dataset(
        app_state.reader(),
        directory,
        clock_for(at).now(),
        signing_key=signing_key_from_env(),
        parts=dataset_parts(app_state.settings),
    )
    if fmt == "json":
        print(json.dumps(report.to_dict(), indent=2))
        return
    console.print(
        f"published {directory}: version {report.version}, {len(report.changed)} files "
        f"changed, {len(report.unchanged)} unchanged; chain of {report.records} records"
    )


def register(app: typer.Typer) -> None:
    app.command("publish")(publish)
