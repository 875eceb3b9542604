"""What the HTTP clients (Gamma, OpenRouter) share."""

from __future__ import annotations

import math
from collections.abc import Mapping


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a server asks for: ``retry-after-ms`` or ``Retry-After`` in seconds, None when
    absent, negative, not a number, or in the rare HTTP-date form (the backoff applies then)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None
