"""Find the answer object in a model's text, tolerating how models actually answer.

openrouter-api.md, "Content quirks": JSON mode is ignored by some providers, so answers arrive
wrapped in code fences, with prose before or after, with several objects (a draft, then the
answer), trailing commas, single quotes or comments. Strategy, cheapest first:

1. the whole text as JSON;
2. every strictly valid JSON object in the text (``json.JSONDecoder.raw_decode`` at each ``{``);
3. every outermost *complete* ``{...}`` span that is not one of those, with trailing commas
   removed exactly, else repaired by the ``json-repair`` package.

Of all objects found, the one ending last that carries ``action`` wins (a draft followed by the
final answer), else the one ending last. A truncated answer (an object whose braces never
close) is never completed by guesswork: it is reported as cut off.
"""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair

from arena.errors import MalformedResponse

_CLOSER_AHEAD = re.compile(r"\s*[}\]]")


def extract_json_object(text: str | None) -> dict[str, Any]:
    """The answer object in a model's text; raises MalformedResponse when there is none."""
    if text is None or not text.strip():
        raise MalformedResponse("the response is empty; answer with one JSON object")
    try:
        whole = json.loads(text.strip())
    except (ValueError, RecursionError):  # nested past the parser: not an answer either
        whole = None
    if isinstance(whole, dict):
        return whole
    found = _strict_objects(text)
    strict_starts = {start for start, _, _ in found}
    for start, end in _balanced_spans(text):
        if start not in strict_starts and (obj := _repaired(text[start : end + 1])) is not None:
            found.append((start, end + 1, obj))
    if not found:
        if "{" in text:
            raise MalformedResponse(
                "no complete JSON object found in the response (is it cut off?); "
                "answer with one JSON object"
            )
        raise MalformedResponse("no JSON object found in the response; answer with one")
    found.sort(key=lambda item: (item[1], -item[0]))  # by end; at a tie, the outer object
    with_action = [obj for _, _, obj in found if "action" in obj]
    return (with_action or [obj for _, _, obj in found])[-1]


def _strict_objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """(start, end, object) of every valid JSON object not inside an earlier one, in order."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, dict[str, Any]]] = []
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except (ValueError, RecursionError):
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            found.append((index, end, value))
        index = text.find("{", end)
    return found


def _balanced_spans(text: str) -> list[tuple[int, int]]:
    """(start, index of the closing brace) of the outermost ``{...}`` spans that balance.

    Double-quoted strings are respected.

    One pass with a stack: a ``{`` that never closes (a stray brace in prose, a truncated
    object) does not hide the complete objects after or inside it.
    """
    stack: list[int] = []
    pairs: list[tuple[int, int]] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"' and stack:
            in_string = True
        elif char == "{":
            stack.append(index)
        elif char == "}" and stack:
            pairs.append((stack.pop(), index))
    outermost: list[tuple[int, int]] = []
    for start, end in sorted(pairs):
        if outermost and start < outermost[-1][1]:
            continue  # nested inside an earlier complete span
        outermost.append((start, end))
    return outermost


def _repaired(span: str) -> dict[str, Any] | None:
    """The object in a complete span: trailing commas dropped exactly, else json-repair."""
    try:
        value = json.loads(_without_trailing_commas(span))
    except (ValueError, RecursionError):
        try:
            value = json_repair.loads(span)
        except Exception:  # the repair library's failure modes are not ours to enumerate
            return None
    return value if isinstance(value, dict) and value else None


def _without_trailing_commas(span: str) -> str:
    """Drop each comma (outside strings) that is followed only by whitespace and ``}``/``]``."""
    out: list[str] = []
    in_string = escaped = False
    for index, char in enumerate(span):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "," and _CLOSER_AHEAD.match(span, index + 1):
            continue
        out.append(char)
    return "".join(out)
