"""The results directory of a run and its manifest (docs/ARCHITECTURE.md, "Processes and
what passes between them"; the file names are ``analysis.layout``)."""

from benchfs.results.atomic import write_bytes_atomic, write_json_atomic, write_text_atomic
from benchfs.results.manifest import (
    DATA_VERSION,
    MANIFEST_NAME,
    ExcludedHost,
    HostEntry,
    HostsRecord,
    Manifest,
    RanksRecord,
    SweepRecord,
    captured_environment,
    finish_manifest,
    load_manifest,
    native_build_info,
    new_manifest,
    write_manifest,
)
from benchfs.results.rundir import create_run_dir

__all__ = [
    "DATA_VERSION",
    "MANIFEST_NAME",
    "ExcludedHost",
    "HostEntry",
    "HostsRecord",
    "Manifest",
    "RanksRecord",
    "SweepRecord",
    "captured_environment",
    "create_run_dir",
    "finish_manifest",
    "load_manifest",
    "native_build_info",
    "new_manifest",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_manifest",
    "write_text_atomic",
]
