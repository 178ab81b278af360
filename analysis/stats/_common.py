"""Small helpers shared by the statistics modules."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.errors import MissingDataError

NS_PER_MS = 1e6
NS_PER_S = 1e9
# Percentiles reported everywhere, named as fio and our summaries name them.
PERCENTILES: dict[str, float] = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}


def require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Fail with the missing column names, so a renamed trace field is never silent."""
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise MissingDataError(
            f"{what} needs column(s) {', '.join(missing)}; "
            f"present: {', '.join(map(str, frame.columns))}"
        )


def percentiles(values: npt.ArrayLike, names: Sequence[str]) -> dict[str, float]:
    """Linear-interpolated percentiles (numpy's default) by name; NaN when empty."""
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        return {name: float("nan") for name in names}
    # Sorted first: the same percentiles, faster (analysis.stats.grouped).
    points = np.percentile(np.sort(array), [PERCENTILES[name] for name in names])
    return {name: float(value) for name, value in zip(names, points, strict=True)}


def bucket_shares(
    values: npt.ArrayLike, edges: Sequence[float], labels: Sequence[str]
) -> pd.DataFrame:
    """Count and percentage of values per bucket (edge_i, edge_i+1], closed on the right
    so that a bucket labelled "50-100 ms" holds 100 ms and ">100 ms" means over 100 ms."""
    return index_shares(bucket_index(values, edges), labels)


def bucket_index(values: npt.ArrayLike, edges: Sequence[float]) -> npt.NDArray[np.intp]:
    """The bucket of each value, as ``bucket_shares`` counts them: once for every
    subset of the values a caller shares out."""
    array = np.asarray(values, dtype=np.float64)
    return np.searchsorted(np.asarray(edges[1:-1], dtype=np.float64), array, side="left")


def index_shares(index: npt.NDArray[np.intp], labels: Sequence[str]) -> pd.DataFrame:
    """Count and percentage per bucket of values whose ``bucket_index`` is given."""
    counts = np.bincount(index, minlength=len(labels))
    total = counts.sum()
    share = counts / total * 100.0 if total else np.zeros(len(labels))
    return pd.DataFrame({"bucket": list(labels), "count": counts, "share_pct": share})


class NodeTimeGroups:
    """Rows grouped by (node, time bucket) with integer codes, for bincount speed.

    pandas' groupby hashes float bucket keys; for millions of events a code
    ``node * buckets + bucket`` and ``np.bincount`` are several times faster.
    """

    def __init__(self, node: pd.Series, time_ns: pd.Series, start_ns: int, bucket_s: float):
        categorical = node.astype("category")
        node_codes = categorical.cat.codes.to_numpy(dtype=np.int64)
        offset_s = (time_ns.to_numpy(dtype=np.int64) - start_ns) / NS_PER_S
        bucket = np.floor(offset_s / bucket_s).astype(np.int64)
        self._first = int(bucket.min()) if bucket.size else 0
        bucket -= self._first
        self._buckets = int(bucket.max()) + 1 if bucket.size else 1
        self.codes = node_codes * self._buckets + bucket
        self._size = len(categorical.cat.categories) * self._buckets
        self._categories = categorical.cat.categories
        self._bucket_s = bucket_s
        self.counts = np.bincount(self.codes, minlength=self._size)
        self.present = np.flatnonzero(self.counts)

    def frame(self) -> pd.DataFrame:
        """``node`` and ``t_start_s`` of every group that has rows."""
        node_index, bucket_index = np.divmod(self.present, self._buckets)
        return pd.DataFrame(
            {
                "node": self._categories[node_index],
                "t_start_s": (bucket_index + self._first) * self._bucket_s,
            }
        )

    def count(self) -> npt.NDArray[np.int64]:
        return self.counts[self.present]

    def sum(self, values: npt.NDArray[np.generic]) -> npt.NDArray[np.float64]:
        sums = np.bincount(self.codes, weights=values, minlength=self._size)
        return np.asarray(sums[self.present], dtype=np.float64)

    def mean(self, values: npt.NDArray[np.generic]) -> npt.NDArray[np.float64]:
        return np.asarray(self.sum(values) / self.count(), dtype=np.float64)

    def max(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        result = np.full(self._size, -np.inf)
        np.maximum.at(result, self.codes, values)
        return result[self.present]


def group_positions(column: pd.Series) -> dict[Any, npt.NDArray[np.intp]]:
    """Row positions of each value that occurs, in category (or sorted) order.

    The same as ``groupby(column, observed=True).indices`` for one key, from
    the integer codes: one stable radix sort instead of pandas' recoding.
    """
    codes, labels = category_codes(column)
    return {labels[code]: rows for code, rows in _code_positions(codes, len(labels)).items()}


def pair_positions(
    first: pd.Series, second: pd.Series
) -> dict[tuple[Any, Any], npt.NDArray[np.intp]]:
    """Row positions of each (first, second) value pair that occurs, ordered as
    ``group_positions`` orders each: one sort for every pair instead of a mask each."""
    codes_a, labels_a = category_codes(first)
    codes_b, labels_b = category_codes(second)
    combined = np.where((codes_a >= 0) & (codes_b >= 0), codes_a * len(labels_b) + codes_b, -1)
    found = _code_positions(combined, len(labels_a) * len(labels_b))
    return {
        (labels_a[code // len(labels_b)], labels_b[code % len(labels_b)]): rows
        for code, rows in found.items()
    }


def _code_positions(codes: npt.NDArray[np.int64], size: int) -> dict[int, npt.NDArray[np.intp]]:
    """Row positions of each code in 0..size-1 that occurs (-1: none), rows in order."""
    valid = codes >= 0  # -1 marks a missing value
    chosen = codes if bool(valid.all()) else codes[valid]
    # Codes in the narrowest type: numpy's stable sort of 8- and 16-bit integers is a radix sort.
    narrow = chosen.astype(np.min_scalar_type(max(size - 1, 0)), copy=False)
    order = np.argsort(narrow, kind="stable")
    if chosen is not codes:
        order = np.flatnonzero(valid)[order]
    counts = np.bincount(chosen, minlength=size)
    ends = np.cumsum(counts)
    return {
        code: order[ends[code] - counts[code] : ends[code]]
        for code in np.flatnonzero(counts).tolist()
    }


def category_codes(column: pd.Series) -> tuple[npt.NDArray[np.int64], list[Any]]:
    """Integer codes (-1 for missing) and the labels they index, categorical or not."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype(np.int64), list(column.cat.categories)
    unique, codes = np.unique(column.to_numpy(), return_inverse=True)
    return codes.astype(np.int64), list(unique)


def sums_by_pair(
    first: pd.Series, second: pd.Series, weights: npt.ArrayLike | None = None
) -> pd.DataFrame:
    """Counts (or sums of ``weights``) per (first, second) value pair as a table:
    one row per observed ``first`` value, one column per observed ``second``."""
    return Pairs(first, second).sums(weights)


class Pairs:
    """Rows coded by their (first, second) value pair once, for several sums per pair."""

    def __init__(self, first: pd.Series, second: pd.Series):
        codes_a, self._labels_a = category_codes(first)
        codes_b, self._labels_b = category_codes(second)
        self._combined = codes_a * len(self._labels_b) + codes_b
        self._shape = (len(self._labels_a), len(self._labels_b))
        self._counts = np.bincount(self._combined, minlength=self._shape[0] * self._shape[1])
        seen = self._counts.reshape(self._shape) > 0
        self._rows, self._columns = seen.any(axis=1), seen.any(axis=0)
        self._names = (first.name, second.name)

    def sums(self, weights: npt.ArrayLike | None = None) -> pd.DataFrame:
        """Counts (or sums of ``weights``), one row per observed first value, one
        column per observed second value."""
        totals = (
            self._counts
            if weights is None
            else np.bincount(self._combined, weights=weights, minlength=self._counts.size)
        ).reshape(self._shape)
        rows, columns = self._rows, self._columns
        return pd.DataFrame(
            totals[rows][:, columns],
            index=pd.Index([self._labels_a[i] for i in np.flatnonzero(rows)], name=self._names[0]),
            columns=pd.Index(
                [self._labels_b[i] for i in np.flatnonzero(columns)], name=self._names[1]
            ),
        )
