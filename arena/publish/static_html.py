"""One dashboard page made static: every same-site link made relative, what needs a server left out.

The dashboard's pages link by absolute path (``/families/x``) and fetch their charts from the
JSON API. :func:`make_static` rewrites one rendered page for a copy with no server:

- an ``href`` or ``src`` the copy holds becomes a relative path from the page's own file;
- a link to anything else (a market, ``/status``, the API, another host) becomes its text, and
  a navigation entry to it is left out;
- a ``<form>``, and any element the templates mark ``data-live`` (it needs the server: the
  countdown, the chart's ranges), is left out;
- a chart (``[data-chart]``) gets its curves inline, in a ``<script type="application/json">``
  block that ``app.js`` reads instead of fetching ``data-src``.

The page is cut into tags with one regular expression, which is exact for what the dashboard
renders (Jinja autoescapes every ``<`` of text, and no script or style element holds code in
a page) and an order of magnitude faster than :class:`html.parser.HTMLParser` on pages full of
prompt text. What is not rewritten keeps its bytes.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape, unescape
from urllib.parse import urljoin, urlsplit

# Elements without an end tag: they never open a subtree being left out.
VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
RAW_TEXT = frozenset({"script", "style"})  # their content is not markup
URL_ATTRIBUTES = ("href", "src")
TOKEN = re.compile(
    r"<!--.*?-->|<![^>]*>|<(/?)([a-zA-Z][\w:-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>", re.S
)
ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")

Attributes = list[tuple[str, str | None]]
Resolve = Callable[[str], "str | None"]
"""The copy's file for a same-site URL (path and query), or None when the copy has no such file."""
Curves = Callable[[dict[str, str]], str]
"""The JSON of a chart's curves, from its ``data-`` attributes."""


@dataclass
class StaticPage:
    """A page rewritten: its HTML, and the same-site URLs it links to that the copy holds."""

    html: str
    links: list[str] = field(default_factory=list)


def relative(target: str, page: str) -> str:
    """``target`` (a file of the copy) as a link from the file ``page``."""
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def make_static(text: str, url: str, page: str, resolve: Resolve, curves: Curves) -> StaticPage:
    """The page rendered at ``url``, written as the copy's file ``page``."""
    rewriter = _Rewriter(url, page, resolve, curves)
    position = 0
    while (tag := TOKEN.search(text, position)) is not None:
        rewriter.data(text[position : tag.start()])
        position = tag.end()
        name = tag.group(2)
        if name is None:  # a comment or the doctype
            rewriter.data(tag.group(0))
        elif tag.group(1):
            rewriter.end(name.lower())
        else:
            inside = tag.group(3)
            attrs: Attributes = [
                (a.group(1).lower(), _value(a)) for a in ATTRIBUTE.finditer(inside)
            ]
            rewriter.start(name.lower(), attrs, tag.group(0), inside.rstrip().endswith("/"))
            if name.lower() in RAW_TEXT:
                close = re.compile(f"</{name}", re.I).search(text, position)
                end = len(text) if close is None else close.start()
                rewriter.data(text[position:end])
                position = end
    rewriter.data(text[position:])
    return StaticPage("".join(rewriter.out), rewriter.links)


def _value(attribute: re.Match[str]) -> str | None:
    quoted = next((v for v in attribute.groups()[1:] if v is not None), None)
    return None if quoted is None else unescape(quoted)


class _Rewriter:
    def __init__(self, url: str, page: str, resolve: Resolve, curves: Curves) -> None:
        self.url = url
        self.page = page
        self.resolve = resolve
        self.curves = curves
        self.out: list[str] = []
        self.links: list[str] = []
        self.skipping = 0  # depth inside an element left out
        self.dead_link = False  # inside a link written as a span
        self.nav = 0
        self.charts = 0
        self.targets: dict[str, str | None] = {}

    # -- where a URL points in the copy ------------------------------------------------
    def target(self, value: str) -> str | None:
        """``value`` as a link from this page's file, or None when the copy lacks it."""
        if value.startswith("#"):
            return value
        if value not in self.targets:  # a page links the same few places many times
            self.targets[value] = self.find(value)
        return self.targets[value]

    def find(self, value: str) -> str | None:
        parts = urlsplit(urljoin(self.url, value))
        if parts.scheme or parts.netloc:
            return None  # another host (urljoin keeps a relative base without one)
        local = parts.path + (f"?{parts.query}" if parts.query else "")
        file = self.resolve(local)
        if file is None:
            return None
        if file.endswith(".html"):
            self.links.append(local)  # once per page: found once
        return relative(file, self.page) + (f"#{parts.fragment}" if parts.fragment else "")

    # -- the tokens ---------------------------------------------------------------------
    def start(self, tag: str, attrs: Attributes, raw: str, closed: bool) -> None:
        """A start tag (``closed``: written ``<tag/>``, an SVG shape)."""
        opens = tag not in VOID and not closed
        if self.skipping:
            self.skipping += opens
            return
        names = dict(attrs)
        if tag == "form" or "data-live" in names:
            self.skipping = int(opens)
        elif tag == "a" and names.get("href") is not None:
            self.anchor(attrs, names["href"] or "")
        elif "data-chart" in names:
            self.chart(tag, attrs, names)
        else:
            self.nav += tag == "nav"
            kept = self.moved(tag, attrs)
            end = " />" if closed else ">"
            self.out.append(raw if kept is None else f"<{tag}{_attributes(kept)}{end}")

    def end(self, tag: str) -> None:
        if self.skipping:
            self.skipping -= 1
            return
        if tag == "a" and self.dead_link:
            self.dead_link = False
            self.out.append("</span>")
            return
        self.nav -= tag == "nav"
        self.out.append(f"</{tag}>")

    def data(self, text: str) -> None:
        if text and not self.skipping:
            self.out.append(text)

    # -- the rewritten elements -----------------------------------------------------------
    def moved(self, tag: str, attrs: Attributes) -> Attributes | None:
        """``attrs`` with each URL made relative, or None when none changed. A stylesheet, a
        script or an image the copy lacks is a bug in the copy: it raises."""
        changed = False
        kept: Attributes = []
        for name, value in attrs:
            if name in URL_ATTRIBUTES and value is not None:
                moved = self.target(value)
                if moved is None:
                    raise ValueError(f"{self.url}: <{tag} {name}={value!r}> is not in the copy")
                changed = changed or moved != value
                value = moved
            kept.append((name, value))
        return kept if changed else None

    def anchor(self, attrs: Attributes, href: str) -> None:
        moved = self.target(href)
        if moved is not None:
            kept = [(n, moved if n == "href" else v) for n, v in attrs]
            self.out.append(f"<a{_attributes(kept)}>")
        elif self.nav:
            self.skipping = 1  # a menu entry to a page the copy has not: left out
        else:
            self.dead_link = True  # a link to a page the copy has not: its text
            kept = [(n, v) for n, v in attrs if n in ("class", "title", "id")]
            self.out.append(f"<span{_attributes(kept)}>")

    def chart(self, tag: str, attrs: Attributes, names: dict[str, str | None]) -> None:
        self.charts += 1
        block = f"curves-{self.charts}"
        data = {n[5:]: v or "" for n, v in names.items() if n.startswith("data-")}
        payload = self.curves(data).replace("<", "\\u003c").replace(">", "\\u003e")
        self.out.append(f'<script type="application/json" id="{block}">{payload}</script>\n')
        kept = [(n, v) for n, v in attrs if n != "data-src"] + [("data-inline", block)]
        self.out.append(f"<{tag}{_attributes(kept)}>")


def _attributes(attrs: Attributes) -> str:
    return "".join(f" {n}" if v is None else f' {n}="{escape(v, quote=True)}"' for n, v in attrs)
