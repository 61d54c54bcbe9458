"""How the torch path reads a step's paged contexts (paged_attention.paged_decode_attention_ref):
long tables that are consecutive runs of blocks are read in place, batched with the runs of
equal length that follow them in the cache; the other rows are gathered into one padded batch.
Planned once a step by the model runner, shared by every layer."""

from __future__ import annotations

from dataclasses import dataclass

# A table of at least this many consecutive blocks is read in place; shorter or scattered
# tables are gathered together and attended in one batched call.
MIN_BLOCKS_IN_PLACE = 8


@dataclass
class RunBatch:
    """Sequences whose tables are adjacent runs of equal length: blocks [first, first +
    num_runs * run_blocks) of the cache, read in place as one batch [num_runs, run_blocks]."""

    first: int
    run_blocks: int
    queries: list[list[int]]  # per run, the query rows that read it (beams share a run)
    lengths: list[int]  # per run, its context length


@dataclass
class ContextReads:
    """How the torch path reads a step's paged contexts: batches of runs, read in place, and
    the remaining rows, gathered into one padded batch."""

    batches: list[RunBatch]
    gathered: list[int]


def group_context_reads(tables: list[list[int]], lengths: list[int], block_size: int) -> ContextReads:
    """Rows sharing a table (the same run) become one run with several queries; runs of
    equal length that follow each other in the cache go into one batch."""
    runs: dict[tuple[int, int, int], list[int]] = {}  # (first block, blocks, length) -> rows
    gathered = []
    for row, (table, n) in enumerate(zip(tables, lengths)):
        blocks = table[: -(-n // block_size)]
        first = blocks[0]
        if (
            len(blocks) >= MIN_BLOCKS_IN_PLACE
            and blocks[-1] - first == len(blocks) - 1
            and blocks == list(range(first, first + len(blocks)))
        ):
            runs.setdefault((first, len(blocks), n), []).append(row)
        else:
            gathered.append(row)
    batches: list[RunBatch] = []
    for first, count, n in sorted(runs):
        last = batches[-1] if batches else None
        if last and last.run_blocks == count and last.first + len(last.queries) * count == first:
            last.queries.append(runs[first, count, n])
            last.lengths.append(n)
        else:
            batches.append(RunBatch(first, count, [runs[first, count, n]], [n]))
    return ContextReads(batches, gathered)
