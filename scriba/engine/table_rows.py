"""Block tables kept as rows of one padded array between steps.

A decode step needs the running sequences' block tables as one int32 array [num_seqs,
width]. Rebuilding it from lists costs a Python loop over every row of every step; here a
row is written when its sequence first appears and then only where its table changed: a
table grows by one block every block_size tokens, and copy-on-write replaces its last
block. A table can change elsewhere only while its sequence is away from the decode batch
(swapped out, or recomputed), and a row is dropped as soon as its sequence misses a step.
"""

from __future__ import annotations

from typing import Hashable

import numpy as np


class TableRows:
    def __init__(self, rows: int = 64, width: int = 8):
        self.array = np.zeros((rows, width), dtype=np.int32)
        self.row_of: dict[Hashable, int] = {}
        self.seen: dict[Hashable, tuple[int, int]] = {}  # key -> (length, last block) written
        self.free = list(range(rows - 1, -1, -1))

    def gather(self, keys: list[Hashable], tables: list[list[int]]) -> np.ndarray:
        """The tables of `keys` (in order; a key may repeat) as [len(keys), max length]
        int32, padded with block 0 (masked out by the lengths)."""
        self._drop_absent(set(keys))
        width = max(map(len, tables), default=1)
        if width > self.array.shape[1]:
            self._resize(self.array.shape[0], max(width, 2 * self.array.shape[1]))
        index = [self._row(key, table) for key, table in zip(keys, tables)]
        return self.array[index, :width]

    def _row(self, key: Hashable, table: list[int]) -> int:
        row = self.row_of.get(key)
        if row is None:
            row = self._take()
            self.row_of[key] = row
            self.array[row, : len(table)] = table
        else:
            length, last = self.seen[key]
            if length != len(table) or last != _last(table):
                start = max(min(length, len(table)) - 1, 0)  # the old last block may have changed
                self.array[row, start : len(table)] = table[start:]
        self.seen[key] = (len(table), _last(table))
        return row

    def _take(self) -> int:
        if not self.free:
            rows = self.array.shape[0]
            self._resize(2 * rows, self.array.shape[1])
            self.free = list(range(2 * rows - 1, rows - 1, -1))
        return self.free.pop()

    def _drop_absent(self, present: set) -> None:
        if len(present) == len(self.row_of) and present.issuperset(self.row_of):
            return
        for key in [k for k in self.row_of if k not in present]:
            row = self.row_of.pop(key)
            self.array[row] = 0  # the padding past a length stays block 0
            self.free.append(row)
            del self.seen[key]

    def _resize(self, rows: int, width: int) -> None:
        grown = np.zeros((rows, width), dtype=np.int32)
        grown[: self.array.shape[0], : self.array.shape[1]] = self.array
        self.array = grown


def _last(table: list[int]) -> int:
    return table[-1] if table else -1
