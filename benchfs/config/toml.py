"""Reading a TOML config file: every failure a ConfigError naming the file.

The file goes through ``analysis.bounded``: a regular file of at most
``CONFIG_BYTES``, UTF-8, nested at most ``MAX_NESTING`` levels deep.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from analysis.bounded import CONFIG_BYTES, check_nesting, read_bounded_text
from benchfs.errors import ConfigError


def read_config_text(path: Path, what: str = "config file") -> str:
    return read_bounded_text(path, limit=CONFIG_BYTES, what=what, error=ConfigError)


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """TOML text as a dict; ``source`` names it in errors."""
    check_nesting(text, source, ConfigError)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: invalid TOML: {error}") from error
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply to parse") from None
