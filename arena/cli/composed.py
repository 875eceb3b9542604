"""Commands that take their options as one value: a frozen dataclass whose fields are typer
options (each with its annotation, flags, help and default) is both the table of the options
and the value the command receives.

:func:`with_options` shows typer the signature the command line is built from (the context,
then every option and argument in the order given), and calls the command with the context,
one instance of the dataclass, and the command's own parameters. Options several commands
share are written once, and no command's Python signature grows with its option list.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

import typer

Value = TypeVar("Value")
KEYWORD = inspect.Parameter.KEYWORD_ONLY


def with_options(
    options: type[Value], *layout: str
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate ``command(ctx, value, **own)``: ``layout`` names, in ``--help`` order, the
    fields of ``options`` the command offers and its own parameters (every one of them).
    Fields left out keep their dataclass default. No ``layout``: every field in the order the
    dataclass declares them, then the command's own parameters."""
    hints = get_type_hints(options, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(options)}  # type: ignore[arg-type]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own_hints = get_type_hints(command, include_extras=True)
        ctx, _value, *own = inspect.signature(command).parameters.values()
        own_params = {p.name: p for p in own}
        order = layout or (*fields, *own_params)
        missing = set(own_params) - set(order)
        unknown = set(order) - set(own_params) - set(fields)
        if missing or unknown:
            raise TypeError(
                f"{command.__name__}: layout misses {sorted(missing)}, "
                f"names unknown {sorted(unknown)}"
            )
        params = [ctx.replace(annotation=typer.Context)]
        for name in order:
            if name in fields:
                default, annotation = fields[name].default, hints[name]
                if default is dataclasses.MISSING:
                    default = inspect.Parameter.empty
                params.append(
                    inspect.Parameter(name, KEYWORD, default=default, annotation=annotation)
                )
            else:
                params.append(own_params[name].replace(kind=KEYWORD, annotation=own_hints[name]))

        @functools.wraps(command)
        def run(ctx: typer.Context, **given: Any) -> None:
            value = options(**{name: given.pop(name) for name in list(given) if name in fields})
            command(ctx, value, **given)

        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate
