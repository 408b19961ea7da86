"""The Hilbert curve that liquid clustering orders rows by (Delta's ``HilbertClustering``:
``hilbert_index(numBits, range_partition_id(col, numRanges)...)`` for two or more columns).

Each row's coordinates are its columns' range ids (``bits`` bits each); the Hilbert index is
computed with John Skilling's transpose algorithm ("Programming the Hilbert curve", AIP
Conf. Proc. 707, 2004), vectorised over the rows. Consecutive indices are neighbouring
cells, so contiguous runs of rows cover compact boxes of the column space: files cut from
the ordered rows have narrow, little-overlapping min/max ranges on every column. The curve
is a Hilbert curve of the same order as Delta's, not bit-for-bit the same orientation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["hilbert_order"]


def _transpose(coords: list[Any], bits: int) -> list[Any]:
    """Skilling's ``AxestoTranspose``: the Hilbert index, as ``n`` arrays whose bits
    interleaved (most significant first, axis 0 first) give the index."""
    import numpy as np

    x = [c.astype(np.uint64).copy() for c in coords]
    n = len(x)
    q = np.uint64(1 << (bits - 1))
    while q > 1:  # inverse undo
        p = q - np.uint64(1)
        for i in range(n):
            high = (x[i] & q) != 0
            t = (x[0] ^ x[i]) & p
            x[0] = np.where(high, x[0] ^ p, x[0] ^ t)
            if i:
                x[i] = np.where(high, x[i], x[i] ^ t)
        q = q >> np.uint64(1)
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = np.uint64(1 << (bits - 1))
    while q > 1:
        t = np.where((x[n - 1] & q) != 0, t ^ (q - np.uint64(1)), t)
        q = q >> np.uint64(1)
    return [xi ^ t for xi in x]


def hilbert_order(coords: Sequence[Any], bits: int) -> Any:
    """Row positions sorted by the Hilbert index of ``coords`` (one array of unsigned ints
    below ``2**bits`` per dimension, two or more dimensions)."""
    import numpy as np

    if len(coords) < 2:
        raise ValueError("a Hilbert curve needs at least two dimensions")
    x = _transpose(list(coords), bits)
    rows = len(x[0])
    matrix = np.zeros((rows, bits * len(x)), dtype=np.uint8)
    for b in range(bits):
        for j, axis in enumerate(x):
            matrix[:, b * len(x) + j] = (axis >> np.uint64(bits - 1 - b)) & np.uint64(1)
    packed = np.packbits(matrix, axis=1)
    return np.lexsort(packed.T[::-1])
