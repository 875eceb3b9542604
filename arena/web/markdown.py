"""Markdown to HTML for the methodology page. Raw HTML in the source is escaped, not passed
through, and links may not use ``javascript:`` (markdown-it's defaults)."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markupsafe import Markup

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def render_markdown(text: str) -> Markup:
    return Markup(_MD.render(text))
