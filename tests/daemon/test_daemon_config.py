"""The daemon config file: defaults, identity resolution, errors."""

from __future__ import annotations

import os
import tempfile

import pytest

from benchfs.daemon import parse_daemon_config, resolve_daemon_config
from benchfs.errors import ConfigError

SOURCE = "d.toml"


def _resolve(text: str, **kwargs: object) -> object:
    file = parse_daemon_config(text, SOURCE)
    return resolve_daemon_config(file, SOURCE, **kwargs)  # type: ignore[arg-type]


def test_defaults_and_placeholders() -> None:
    s = resolve_daemon_config(
        parse_daemon_config('node_id = 4\nregistry_dir = "/r"\n', SOURCE),
        SOURCE,
        env={},
        host_name="host7.example.org",
    )
    assert s.node_name == "host7"
    # This user's temporary directory: no other user can take the name first.
    assert s.data_dir == f"{tempfile.gettempdir()}/benchfs-{os.geteuid()}/host7"
    assert s.chunk_size == 4 << 20
    assert s.buffer_pool_size == 256 << 20
    assert s.max_concurrency == 32
    assert s.trace_dir is None
    assert s.durability == "none" and s.transport == "auto"
    assert s.serve_kwargs()["node_id"] == 4


def test_identity_from_environment_and_daemon_index() -> None:
    text = 'registry_dir = "/r"\ndaemon_index = 2\ndata_dir = "/d/{node_id}/{node_name}"\n'
    s = resolve_daemon_config(
        parse_daemon_config(text, SOURCE), SOURCE, env={"PMI_RANK": "9"}, host_name="h"
    )
    assert (s.node_id, s.node_name, s.data_dir) == (9, "h-d2", "/d/9/h-d2")
    s = resolve_daemon_config(
        parse_daemon_config(text, SOURCE),
        SOURCE,
        env={"OMPI_COMM_WORLD_RANK": "1", "BENCHFS_NODE_NAME": "named"},
    )
    assert (s.node_id, s.node_name) == (1, "named")
    s = resolve_daemon_config(
        parse_daemon_config(text, SOURCE),
        SOURCE,
        env={"SLURM_PROCID": "1"},
        node_id=5,
        node_name="cli",
    )
    assert (s.node_id, s.node_name) == (5, "cli")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('registry_dir = "/r"\nnode_id = 0\nchunk_sise = "4m"\n', "chunk_sise"),
        ('registry_dir = "/r"\nnode_id = 0\nchunk_size = "4MB"\n', "chunk_size"),
        ('registry_dir = "/r"\nnode_id = 0\nchunk_size = 1000\n', "chunk_size"),
        ('registry_dir = "/r"\nnode_id = -1\n', "node_id"),
        ('registry_dir = "/r"\nnode_id = true\n', "node_id"),
        ('registry_dir = "/r"\nnode_id = 0\nmax_concurrency = 0\n', "max_concurrency"),
        ('registry_dir = "/r"\nnode_id = 0\ntransport = "ib"\n', "transport"),
        ('registry_dir = "/r"\nnode_id = 0\nshutdown_deadline_s = 0\n', "shutdown_deadline_s"),
        ('registry_dir = "/r"\nnode_id = 0\ndata_dir = "/d/{rank}"\n', "data_dir"),
        ('registry_dir = "/r"\nnode_id = 0\nnode_name = "a/b"\n', "node_name"),
        ("node_id = 0\n", "registry_dir"),
        ('registry_dir = "/r"\n', "node_id"),
    ],
)
def test_errors_name_file_and_key(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        _resolve(text, env={}, host_name="h")
    message = str(info.value)
    assert message.startswith(f"{SOURCE}: {key}"), message


def test_trace_needs_a_file_name_safe_node_name() -> None:
    text = 'registry_dir = "/r"\nnode_id = 0\nnode_name = "a b"\ntrace_dir = "/t"\n'
    with pytest.raises(ConfigError, match="node_name"):
        _resolve(text, env={})


def test_invalid_toml_names_the_file() -> None:
    with pytest.raises(ConfigError, match=r"^d\.toml: invalid TOML"):
        parse_daemon_config("node_id = = 1", SOURCE)
