"""The daemon's TOML config (``benchfs daemon --config FILE``).

Every key of the file, its default and how a missing identity is filled in
(see docs/RPC.md, "Daemon config"):

- ``node_name``: the file, else ``$BENCHFS_NODE_NAME``, else the host name
  with ``-d<daemon_index>`` appended when ``daemon_index > 0``;
- ``node_id``: the file, else the launcher's rank from the environment
  (``OMPI_COMM_WORLD_RANK``, ``PMI_RANK``, ``PMIX_RANK``, ``SLURM_PROCID``),
  else an error;
- ``data_dir``: ``{node_name}`` and ``{node_id}`` are expanded.

``--node-id`` and ``--node-name`` on the command line override the file.
Unknown keys and bad values are errors naming the file and the key.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from benchfs.config.sizes import parse_size
from benchfs.config.toml import parse_toml, read_config_text
from benchfs.errors import ConfigError

RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
NODE_NAME_VARIABLE = "BENCHFS_NODE_NAME"
PLACEHOLDERS = ("node_name", "node_id")
MAX_CHUNK = 1 << 30
MAX_CONCURRENCY = 4096
MAX_NODE_NAME = 200

Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0)]
Id = Annotated[int, Field(ge=0, le=0xFFFF_FFFF, strict=True)]


class DaemonFile(BaseModel):
    """The config file as written; identity fields may be left out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node_name: str | None = None
    node_id: Id | None = None
    daemon_index: Id = 0
    data_dir: str = "/tmp/benchfs-data/{node_name}"
    registry_dir: Annotated[str, Field(min_length=1)]
    chunk_size: Size = 4 << 20
    buffer_pool_size: Size = 256 << 20
    durability: Literal["none", "fsync_on_close", "fsync_each_write"] = "none"
    transport: Literal["auto", "shm", "tcp"] = "auto"
    max_concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY, strict=True)] = 32
    trace_dir: str = ""
    shutdown_deadline_s: Annotated[float, Field(gt=0)] = 10.0
    buffered: bool = False


@dataclass(frozen=True)
class DaemonSettings:
    """A daemon's settings with its identity resolved: what it is served with."""

    source: str
    node_name: str
    node_id: int
    daemon_index: int
    data_dir: str
    registry_dir: str
    chunk_size: int
    buffer_pool_size: int
    durability: str
    transport: str
    max_concurrency: int
    trace_dir: str | None
    shutdown_deadline_s: float
    buffered: bool = False

    def serve_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``benchfs_native.serve_daemon``."""
        return {
            "node_name": self.node_name,
            "node_id": self.node_id,
            "daemon_index": self.daemon_index,
            "data_dir": self.data_dir,
            "registry_dir": self.registry_dir,
            "chunk_size": self.chunk_size,
            "buffer_pool_size": self.buffer_pool_size,
            "durability": self.durability,
            "transport": self.transport,
            "max_concurrency": self.max_concurrency,
            "trace_dir": self.trace_dir,
            "shutdown_deadline_s": self.shutdown_deadline_s,
            "buffered": self.buffered,
        }


def load_daemon_config(path: Path) -> DaemonFile:
    """Read and validate a daemon config file."""
    return parse_daemon_config(read_config_text(path), str(path))


def parse_daemon_config(text: str, source: str) -> DaemonFile:
    """Validate TOML text; ``source`` names it in errors."""
    data = parse_toml(text, source)
    try:
        return DaemonFile.model_validate(data)
    except ValidationError as error:
        raise ConfigError("; ".join(_problem(item, source) for item in error.errors())) from None


def _problem(item: Any, source: str) -> str:
    key = ".".join(str(part) for part in item["loc"]) or "(top level)"
    kind = item["type"]
    if kind == "extra_forbidden":
        known = ", ".join(DaemonFile.model_fields)
        message = f"unknown key (known keys: {known})"
    elif kind == "missing":
        message = "missing: this key has no default"
    else:
        message = str(item["msg"]).removeprefix("Value error, ")
        if kind != "value_error" and "input" in item and not isinstance(item["input"], dict):
            message += f" (got {item['input']!r})"
    return f"{source}: {key}: {message}"


def resolve_daemon_config(
    file: DaemonFile,
    source: str,
    *,
    node_id: int | None = None,
    node_name: str | None = None,
    env: Mapping[str, str] | None = None,
    host_name: str | None = None,
) -> DaemonSettings:
    """Fill in the identity (command line, file, environment, host) and
    expand ``data_dir``; errors name ``source`` and the key."""
    env = os.environ if env is None else env

    def bad(key: str, message: str) -> ConfigError:
        return ConfigError(f"{source}: {key}: {message}")

    resolved_id = node_id if node_id is not None else file.node_id
    if resolved_id is None:
        resolved_id = _rank_from(env, source)
    if not 0 <= resolved_id <= 0xFFFF_FFFF:
        raise bad("node_id", f"must be between 0 and {0xFFFF_FFFF}, got {resolved_id}")
    name = node_name if node_name is not None else file.node_name
    if name is None:
        name = env.get(NODE_NAME_VARIABLE) or None
    if name is None:
        name = (host_name or socket.gethostname()).split(".")[0]
        if file.daemon_index > 0:
            name = f"{name}-d{file.daemon_index}"
    _check_node_name(name, bad)
    data_dir = _expand(file.data_dir, {"node_name": name, "node_id": str(resolved_id)}, bad)
    if file.chunk_size % 512 or file.chunk_size > MAX_CHUNK:
        raise bad(
            "chunk_size",
            f"must be a multiple of 512 and at most {MAX_CHUNK}, got {file.chunk_size}",
        )
    if file.buffer_pool_size < 4096:
        raise bad("buffer_pool_size", f"must be at least 4096 bytes, got {file.buffer_pool_size}")
    if file.trace_dir and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", name):
        raise bad(
            "node_name",
            f"{name!r} names the trace file: use 1..64 of [A-Za-z0-9._-] when trace_dir is set",
        )
    return DaemonSettings(
        source=source,
        node_name=name,
        node_id=resolved_id,
        daemon_index=file.daemon_index,
        data_dir=data_dir,
        registry_dir=file.registry_dir,
        chunk_size=file.chunk_size,
        buffer_pool_size=file.buffer_pool_size,
        durability=file.durability,
        transport=file.transport,
        max_concurrency=file.max_concurrency,
        trace_dir=file.trace_dir or None,
        shutdown_deadline_s=file.shutdown_deadline_s,
        buffered=file.buffered,
    )


def _rank_from(env: Mapping[str, str], source: str) -> int:
    for variable in RANK_VARIABLES:
        value = env.get(variable)
        if value is None:
            continue
        if not value.strip().isdigit():
            raise ConfigError(f"{source}: node_id: ${variable} is {value!r}, not a rank number")
        return int(value)
    raise ConfigError(
        f"{source}: node_id: not in the file, not on the command line (--node-id), and no "
        f"launcher rank in the environment ({', '.join(RANK_VARIABLES)})"
    )


def _check_node_name(name: str, bad: Any) -> None:
    if not name:
        raise bad("node_name", "is empty")
    if len(name.encode()) > MAX_NODE_NAME:
        raise bad("node_name", f"is longer than {MAX_NODE_NAME} bytes")
    if name.startswith("."):
        raise bad("node_name", f"{name!r} starts with '.'")
    if "/" in name or any(ord(c) < 32 or c == "\x7f" for c in name):
        raise bad("node_name", f"{name!r} contains '/' or a control character")


_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _expand(template: str, values: Mapping[str, str], bad: Any) -> str:
    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            known = ", ".join(f"{{{k}}}" for k in PLACEHOLDERS)
            raise bad("data_dir", f"unknown placeholder {{{key}}} (known: {known})")
        return values[key]

    expanded = _PLACEHOLDER.sub(one, template)
    if not expanded:
        raise bad("data_dir", "is empty")
    return expanded
