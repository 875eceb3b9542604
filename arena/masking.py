"""What a log line or a screen may show of a credential: nothing.

Every URL arena logs or prints (the start-up configuration line, "cannot connect to ...", the
dashboard's readiness) passes through :func:`mask_url`. Kept free of heavy imports: the
command line's error paths use it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

SECRET_PARAMETER = re.compile(r"pass|pwd|token|key|secret|credential", re.IGNORECASE)
"""A URL query parameter whose name contains one of these words holds a credential
(``password``, ``sslpassword``, ``api_key``, ``access_token``, ``client_secret``...)."""
MASK = "***"


def mask_url(url: str) -> str:
    """``url`` safe to show or log: the password of its userinfo (``user:PASSWORD@host``) and
    the value of every query parameter named like a credential (:data:`SECRET_PARAMETER`)
    replaced by ``***``; the rest kept as written. The one masking of URLs: every URL arena
    logs or prints passes through it.

    It errs on the side of hiding: the password runs to the *last* ``@`` (SQLAlchemy's parser
    stops at the first; an unencoded ``@`` in a password must not leak its tail)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    userinfo = _USERINFO.match(rest)
    if userinfo:
        rest = f"{userinfo['user']}:{MASK}@{rest[userinfo.end() :]}"
    head, mark, query = rest.partition("?")
    if mark:
        query = "&".join(_mask_parameter(item) for item in query.split("&"))
    return f"{scheme}{sep}{head}{mark}{query}"


_USERINFO = re.compile(r"(?P<user>[^:/?#@]*):.*@", re.DOTALL)


def _mask_parameter(item: str) -> str:
    name, equals, _value = item.partition("=")
    if equals and SECRET_PARAMETER.search(unquote(name)):
        return f"{name}={MASK}"
    return item


def masked_urls(data: Any) -> Any:
    """``data`` (plain JSON data) with every string that looks like a URL passed through
    :func:`mask_url`."""
    if isinstance(data, dict):
        return {key: masked_urls(value) for key, value in data.items()}
    if isinstance(data, list):
        return [masked_urls(value) for value in data]
    if isinstance(data, str) and "://" in data:
        return mask_url(data)
    return data


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def masked_text(text: str) -> str:
    """``text`` (an error message, a log line) with every URL in it passed through
    :func:`mask_url`: what a published record may show of an outside error."""
    return _URL_IN_TEXT.sub(lambda match: mask_url(match.group(0)), text)
