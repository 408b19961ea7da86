"""The Hilbert curve that liquid clustering orders rows by (Delta's ``HilbertClustering``:
``hilbert_index(numBits, range_partition_id(col, numRanges)...)`` for two or more columns).

Each row's coordinates are its columns' range ids (``bits`` bits each). The Hilbert index is
Delta's ``HilbertIndex``, bit for bit: the state machine of its ``GeneratorTable`` (after
Hamilton's compact Hilbert indices: Gray-code rows, each with a rotation-and-reflection
matrix), walked from the most significant bit of every coordinate down, ``n`` bits of the
index per level (``HilbertCompactStateList.translateNPointToDKey``). Consecutive indices are
neighbouring cells, so contiguous runs of rows cover compact boxes of the column space.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

__all__ = ["hilbert_order"]

#: Delta's ``HilbertStates``: 2 to 9 dimensions
MAX_DIMENSIONS = 9

_Matrix = tuple[int, int]  # Delta's HilbertMatrix(n, x2, dy)


def _rotate_left(n: int, i: int, shift: int) -> int:
    return ((i << shift) | (i >> (n - shift))) & ((1 << n) - 1)


def _rotate_right(n: int, i: int, shift: int) -> int:
    return ((i >> shift) | (i << (n - shift))) & ((1 << n) - 1)


def _transform(n: int, m: _Matrix, e: int) -> int:
    return _rotate_left(n, e ^ m[0], m[1])


def _multiply(n: int, a: _Matrix, b: _Matrix) -> _Matrix:
    return (_rotate_right(n, a[0], b[1]) ^ b[0], (a[1] + b[1]) % n)


def _x2_gray_codes(n: int) -> list[int]:
    """Delta's ``getX2GrayCodes``."""
    if n == 1:
        return [0, 1, 0, 1]
    mask = 1 << (n - 1)
    base = _x2_gray_codes(n - 1)
    base[-1] = base[-2] + mask
    result = [0] * (len(base) * 2)
    for i, b in enumerate(base):
        result[i] = b
        result[len(result) - 1 - i] = b ^ mask
    return result


def _generator(n: int) -> list[tuple[int, _Matrix]]:
    """Delta's ``getStateGenerator``: per row ``y``, its Gray code ``x1`` and matrix."""
    x2s = _x2_gray_codes(n)
    rows = []
    for i in range(1 << n):
        x21, x22 = x2s[i << 1], x2s[(i << 1) + 1]
        dy = x21 ^ x22
        rows.append((i ^ (i >> 1), (x21, n - 1 - ((dy & -dy).bit_length() - 1))))
    return rows


@functools.lru_cache(maxsize=MAX_DIMENSIONS)
def _state_table(n: int) -> tuple[Any, Any]:
    """Delta's ``generateStateList().getNPointToDKeyStateMap``: for each state and ``n``-bit
    point, the ``n`` index bits and the next state (two arrays ``[state, point]``)."""
    import numpy as np

    rows = _generator(n)
    size = 1 << n
    ids: dict[_Matrix, int] = {(0, 0): 0}
    matrices: list[_Matrix] = [(0, 0)]

    def state_of(m: _Matrix) -> int:
        if m not in ids:
            ids[m] = len(matrices)
            matrices.append(m)
        return ids[m]

    initial = [state_of(m) for _, m in rows]  # the state after row y of the initial state
    y_of_x1 = {x1: y for y, (x1, _) in enumerate(rows)}
    table: dict[int, list[tuple[int, int]]] = {0: [(y, initial[y]) for y in (y_of_x1[x] for x in range(size))]}
    k = 1
    while k < len(matrices):
        current = matrices[k]
        entries = [(0, 0)] * size
        for i in range(size):
            y = y_of_x1[_transform(n, current, i)]
            entries[i] = (y, state_of(_multiply(n, matrices[initial[y]], current)))
        table[k] = entries
        k += 1
    keys = np.array([[y for y, _ in table[s]] for s in range(len(matrices))], dtype=np.int64)
    states = np.array([[t for _, t in table[s]] for s in range(len(matrices))], dtype=np.int64)
    return keys, states


def hilbert_order(coords: Sequence[Any], bits: int) -> Any:
    """Row positions sorted by Delta's Hilbert index of ``coords`` (one array of unsigned ints
    below ``2**bits`` per dimension, 2 to 9 dimensions); ties keep their order."""
    import numpy as np

    n = len(coords)
    if not 2 <= n <= MAX_DIMENSIONS:
        raise ValueError(f"a Hilbert curve needs 2 to {MAX_DIMENSIONS} dimensions, got {n}")
    keys, states = _state_table(n)
    x = [np.asarray(c).astype(np.int64) for c in coords]
    state = np.zeros(len(x[0]), dtype=np.int64)
    levels = []
    for level in range(bits - 1, -1, -1):
        point = np.zeros_like(state)
        for axis in x:
            point = (point << 1) | ((axis >> level) & 1)
        levels.append(keys[state, point])
        state = states[state, point]
    if n * bits < 64:  # Delta's HilbertLongIndex: one long
        index = np.zeros_like(state)
        for h in levels:
            index = (index << n) | h
        return np.argsort(index, kind="stable")
    return np.lexsort(levels[::-1])  # Delta's HilbertByteArrayIndex: the levels, most significant first
