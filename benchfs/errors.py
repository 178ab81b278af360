"""One exception tree for everything BenchFS reports to a user.

The CLI prints ``str(error)`` as one line and exits non-zero; a traceback is
shown only with ``--verbose``. Messages name the input that was wrong (file
and line, config key, node).
"""


class BenchfsError(Exception):
    """Base of every error BenchFS raises on purpose."""

    exit_code = 2


class ConfigError(BenchfsError):
    """A configuration file or option is invalid."""


class HostfileError(BenchfsError):
    """A hostfile or node list cannot be parsed."""


class LaunchError(BenchfsError):
    """A process could not be started, or died, on a node."""


class ToolError(BenchfsError):
    """An external tool (fio, iostat, mpirun) is missing or failed."""


class EngineError(BenchfsError, OSError):
    """The native engine failed; carries the errno of the failure."""


class HistoryError(BenchfsError):
    """The results database cannot be opened, read or written; names the file or URL."""
