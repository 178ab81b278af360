"""The daemon contract: one settings model, written and read by this module only.

A daemon is started with a TOML file of ``DaemonSettings`` (``benchfs run``
writes one per daemon with ``write_daemon_config``; people write their own
for ``benchfs daemon --config FILE``). The same model, once its identity is
resolved, gives the engine its arguments (``serve_kwargs``, one per field).
Every key, its default and how a missing identity is filled in (see
docs/RPC.md, "Daemon config"):

- ``node_name``: the file, else ``$BENCHFS_NODE_NAME``, else the host name
  with ``-d<daemon_index>`` appended when ``daemon_index > 0``;
- ``node_id``: the file, else the launcher's rank from the environment
  (``OMPI_COMM_WORLD_RANK``, ``PMI_RANK``, ``PMIX_RANK``, ``SLURM_PROCID``),
  else an error;
- ``data_dir``: ``{node_name}`` and ``{node_id}`` are expanded; absent, it is
  ``$TMPDIR/benchfs-<uid>/{node_name}`` (this user's, created 0700);
- ``trace_dir``: empty (or absent) means no event log.

``--node-id`` and ``--node-name`` on the command line override the file.
Unknown keys and bad values are errors naming the file and the key.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import tomli_w
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from benchfs.cluster.private import user_temp_root
from benchfs.config.model import (
    DEFAULT_BULK_SPIN_US,
    MAX_CHUNK,
    MAX_POOL,
    MAX_SECONDS,
    BulkSpinUs,
    ClusterConfig,
    Durability,
    Transport,
)
from benchfs.config.sizes import parse_size
from benchfs.config.toml import parse_toml, read_config_text
from benchfs.errors import ConfigError
from benchfs_native import LIMITS

RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
NODE_NAME_VARIABLE = "BENCHFS_NODE_NAME"
PLACEHOLDERS = ("node_name", "node_id")
MAX_CONCURRENCY = LIMITS["max_concurrency"]
MAX_NODE_NAME = LIMITS["max_node_name"]
# The config file of each daemon of a run, in the run's config directory.
CONFIG_FILE = "daemon-{node_id}.toml"

Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0)]
Id = Annotated[int, Field(ge=0, le=0xFFFF_FFFF, strict=True)]


def _no_trace_dir(value: Any) -> Any:
    return None if value == "" else value


class DaemonSettings(BaseModel):
    """Everything a daemon is started with; the identity may be left to ``resolve``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node_name: str | None = None
    node_id: Id | None = None
    daemon_index: Id = 0
    # None: {node_name} in this user's temporary directory ($TMPDIR/benchfs-<uid>).
    data_dir: Annotated[str, Field(min_length=1)] | None = None
    registry_dir: Annotated[str, Field(min_length=1)]
    chunk_size: Size = 4 << 20
    buffer_pool_size: Annotated[Size, Field(le=MAX_POOL)] = 256 << 20
    durability: Durability = "none"
    transport: Transport = "auto"
    max_concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY, strict=True)] = 32
    trace_dir: Annotated[str | None, BeforeValidator(_no_trace_dir)] = None
    shutdown_deadline_s: Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)] = 10.0
    buffered: bool = False
    # A channel silent this long with a transfer unfinished as long is freed.
    channel_stall_s: Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)] = 60.0
    # After bulk data, the idle loop spins this long while no thread waits for a CPU.
    bulk_spin_us: BulkSpinUs = DEFAULT_BULK_SPIN_US

    def serve_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``benchfs_native.serve_daemon``: every field, by name."""
        if self.node_name is None or self.node_id is None:
            raise ConfigError("daemon settings: the identity (node_name, node_id) is not resolved")
        return self.model_dump()


def settings_for(
    cluster: ClusterConfig,
    *,
    node_name: str,
    node_id: int,
    daemon_index: int,
    data_dir: str,
    registry_dir: Path,
    trace_dir: Path | None,
) -> DaemonSettings:
    """The settings of one daemon of a run, from the run config's ``[cluster]``."""
    return DaemonSettings(
        node_name=node_name,
        node_id=node_id,
        daemon_index=daemon_index,
        data_dir=data_dir,
        registry_dir=str(registry_dir),
        chunk_size=cluster.chunk_size,
        buffer_pool_size=cluster.buffer_pool_size,
        durability=cluster.durability,
        transport=cluster.transport,
        bulk_spin_us=cluster.bulk_spin_us,
        trace_dir=None if trace_dir is None else str(trace_dir),
        shutdown_deadline_s=float(cluster.deadlines.shutdown_s),
    )


def settings_toml(settings: DaemonSettings) -> str:
    """The TOML of ``settings``: the keys that were given, the others left to their defaults."""
    values = settings.model_dump(exclude_unset=True)
    if "trace_dir" in values and values["trace_dir"] is None:
        values["trace_dir"] = ""  # TOML has no null
    return tomli_w.dumps({key: value for key, value in values.items() if value is not None})


def write_daemon_config(path: Path, settings: DaemonSettings) -> Path:
    path.write_text(settings_toml(settings), encoding="utf-8")
    return path


def daemon_config_path(config_dir: Path, node_id: int) -> Path:
    """The config file of daemon ``node_id`` in a run's config directory."""
    return config_dir / CONFIG_FILE.format(node_id=node_id)


def load_daemon_config(path: Path) -> DaemonSettings:
    """Read and validate a daemon config file."""
    return parse_daemon_config(read_config_text(path), str(path))


def parse_daemon_config(text: str, source: str) -> DaemonSettings:
    """Validate TOML text; ``source`` names it in errors."""
    data = parse_toml(text, source)
    try:
        return DaemonSettings.model_validate(data)
    except ValidationError as error:
        raise ConfigError("; ".join(_problem(item, source) for item in error.errors())) from None


def _problem(item: Any, source: str) -> str:
    key = ".".join(str(part) for part in item["loc"]) or "(top level)"
    kind = item["type"]
    if kind == "extra_forbidden":
        known = ", ".join(DaemonSettings.model_fields)
        message = f"unknown key (known keys: {known})"
    elif kind == "missing":
        message = "missing: this key has no default"
    else:
        message = str(item["msg"]).removeprefix("Value error, ")
        if kind != "value_error" and "input" in item and not isinstance(item["input"], dict):
            message += f" (got {item['input']!r})"
    return f"{source}: {key}: {message}"


def launcher_rank(env: Mapping[str, str]) -> int | None:
    """This process's rank in a launcher job, None outside one; ValueError
    naming the variable when it holds no rank number."""
    for variable in RANK_VARIABLES:
        value = env.get(variable)
        if value is None:
            continue
        if not value.strip().isdigit():
            raise ValueError(f"${variable} is {value!r}, not a rank number")
        return int(value)
    return None


def resolve_daemon_config(
    settings: DaemonSettings,
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

    resolved_id = node_id if node_id is not None else settings.node_id
    if resolved_id is None:
        resolved_id = _rank_from(env, bad)
    if not 0 <= resolved_id <= 0xFFFF_FFFF:
        raise bad("node_id", f"must be between 0 and {0xFFFF_FFFF}, got {resolved_id}")
    name = node_name if node_name is not None else settings.node_name
    if name is None:
        name = env.get(NODE_NAME_VARIABLE) or None
    if name is None:
        name = (host_name or socket.gethostname()).split(".")[0]
        if settings.daemon_index > 0:
            name = f"{name}-d{settings.daemon_index}"
    _check_node_name(name, bad)
    template = settings.data_dir or str(user_temp_root() / "{node_name}")
    data_dir = _expand(template, {"node_name": name, "node_id": str(resolved_id)}, bad)
    if settings.chunk_size % 512 or settings.chunk_size > MAX_CHUNK:
        raise bad(
            "chunk_size",
            f"must be a multiple of 512 and at most {MAX_CHUNK}, got {settings.chunk_size}",
        )
    if settings.buffer_pool_size < 4096:
        raise bad(
            "buffer_pool_size", f"must be at least 4096 bytes, got {settings.buffer_pool_size}"
        )
    if settings.trace_dir and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", name):
        raise bad(
            "node_name",
            f"{name!r} names the trace file: use 1..64 of [A-Za-z0-9._-] when trace_dir is set",
        )
    return settings.model_copy(
        update={"node_name": name, "node_id": resolved_id, "data_dir": data_dir}
    )


def _rank_from(env: Mapping[str, str], bad: Any) -> int:
    try:
        rank = launcher_rank(env)
    except ValueError as error:
        raise bad("node_id", str(error)) from None
    if rank is None:
        raise bad(
            "node_id",
            "not in the file, not on the command line (--node-id), and no launcher rank in "
            f"the environment ({', '.join(RANK_VARIABLES)})",
        )
    return rank


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
