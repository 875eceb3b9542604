"""The prompt templates, read from disk: the files the pure renderer
(:mod:`arena.domain.prompting`) is handed.

``$ARENA_PROMPTS_DIR/<version>/{system,user,repair}.txt`` when the variable is set, else the
templates shipped in the package (``arena/resources/prompts``), found through
``importlib.resources`` so a wheel install works from any directory.
"""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path

from arena.domain.prompting import TEMPLATE_NAMES, PromptTemplates, prompt_version_for
from arena.errors import ConfigError

PROMPTS_DIR_ENV = "ARENA_PROMPTS_DIR"
_VERSION_PATTERN = re.compile(r"^v[0-9][0-9a-z._-]{0,30}$")


def prompts_dir() -> Path:
    """``$ARENA_PROMPTS_DIR``, else the templates shipped in the package (``arena/resources``)."""
    configured = os.environ.get(PROMPTS_DIR_ENV, "").strip()
    if configured:
        return Path(configured)
    return Path(str(resources.files("arena") / "resources" / "prompts"))


def load_templates(version: str) -> PromptTemplates:
    """The templates of one prompt version; a :class:`ConfigError` when one is missing."""
    if not _VERSION_PATTERN.match(version):
        raise ConfigError(f"prompt version {version!r} is not a valid version name")
    base = prompts_dir()
    sources = {}
    for name in TEMPLATE_NAMES:
        path = base / version / name
        if not path.is_file():
            raise ConfigError(
                f"prompt template {path} is missing (prompt version {version}; "
                f"set {PROMPTS_DIR_ENV} to the prompts directory)"
            )
        sources[name] = path.read_text(encoding="utf-8")
    system, user, repair = (sources[name] for name in TEMPLATE_NAMES)
    return PromptTemplates(version, system, user, repair)


def templates_for(methodology: str, pricing: str = "gamma") -> PromptTemplates:
    """The current templates of a methodology version and pricing mode."""
    return load_templates(prompt_version_for(methodology, pricing))
