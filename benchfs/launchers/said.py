"""What a launcher said when it could not start a process, in one line.

mpirun, mpiexec and srun print the agent's own reason first (``ssh: Could
not resolve hostname fast0: ...``) and then pages of help between dashed
lines; the first line is the one that names the cause.
"""

from __future__ import annotations


def launcher_reason(text: str) -> str:
    """The line of a launcher's output that says why: the first line outside
    Open MPI's and MPICH's dashed help blocks (ssh's own message comes
    first), else the first line inside one."""
    outside: list[str] = []
    inside: list[str] = []
    in_block = False
    for raw in text.splitlines():
        line = raw.strip()
        if is_rule(line):
            in_block = not in_block
            continue
        if line:
            (inside if in_block else outside).append(line)
    return (outside or inside or [""])[0]


def is_rule(line: str) -> bool:
    """A dashed line that opens or closes a block of Open MPI's or MPICH's help text."""
    return len(line) >= 10 and set(line.strip()) <= {"-", "="}
