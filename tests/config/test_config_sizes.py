"""Byte sizes in IOR's spelling."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchfs.config.sizes import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),
        (4096, 4096),
        ("4k", 4096),
        ("4K", 4096),
        ("1m", 1 << 20),
        ("1MiB", 1 << 20),
        ("2g", 2 << 30),
        ("3GiB", 3 << 30),
        ("1t", 1 << 40),
        (" 8 k ", 8192),
    ],
)
def test_parses(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("1MB", "ambiguous size '1MB': write '1m' or '1MiB'"),
        ("4kb", "ambiguous size '4kb': write '4k' or '4KiB'"),
        ("1.5m", "bad size '1.5m'"),
        ("-4k", "bad size"),
        ("4x", "bad size"),
        ("", "bad size"),
        (True, "expected a size"),
        (1.5, "expected a size"),
    ],
)
def test_refuses(value: object, reason: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_size(value)
    assert reason in str(error.value)


@given(st.integers(1, 1 << 50))
def test_format_round_trips(size: int) -> None:
    text = format_size(size)
    assert parse_size(text) == size
    assert len(text) <= len(str(size))


def test_format_examples() -> None:
    assert [format_size(n) for n in (1 << 20, 1536, 4096, 3 << 30)] == ["1m", "1536", "4k", "3g"]
