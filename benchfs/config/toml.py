"""Reading a TOML config file: every failure a ConfigError naming the file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from benchfs.errors import ConfigError


def read_config_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {error.start}): a config file is UTF-8 TOML"
        ) from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """TOML text as a dict; ``source`` names it in errors."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: invalid TOML: {error}") from error
