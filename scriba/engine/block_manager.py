"""KV block accounting, in plain Python (no torch).

Two pools of physical blocks: "device" (where the model runs: GPU, or the CPU when there is
none) and "cpu" (swap space). A self-attention table per decoder sequence (keyed by seq id)
grows one slot at a time; a cross-attention table per request (keyed by request id) is sized
for the encoder length once. Sequences forked from one another (samples, beams) share blocks
by reference count; writing into a shared block copies it first (copy-on-write).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

DEVICE, CPU = "device", "cpu"


def blocks_for(num_tokens: int, block_size: int) -> int:
    """Blocks needed to hold num_tokens tokens."""
    return -(-num_tokens // block_size)


class AllocStatus(enum.Enum):
    OK = "ok"
    LATER = "later"  # not now: wait for blocks to be freed
    NEVER = "never"  # more blocks than the pool has


class BlockAllocator:
    """One device's pool: a free mask and a reference count per block.

    Single blocks are taken from the top of the pool and runs from the bottom, so the
    cross-attention table of a request (allocated once, whole) is usually one contiguous
    run that attention can read as a slice, without gathering.
    """

    def __init__(self, device: str, num_blocks: int):
        self.device = device
        self.num_blocks = num_blocks
        self.ref_counts = [0] * num_blocks
        self.is_free = bytearray(b"\x01") * num_blocks
        self.num_free = num_blocks

    @property
    def free_blocks(self) -> list[int]:
        return [b for b, free in enumerate(self.is_free) if free]

    def _take(self, block: int) -> int:
        self.is_free[block] = 0
        self.ref_counts[block] = 1
        self.num_free -= 1
        return block

    def allocate(self) -> int:
        block = self.is_free.rfind(1)
        if block < 0:
            raise RuntimeError(f"out of {self.device} KV blocks")
        return self._take(block)

    def allocate_run(self, n: int) -> list[int]:
        """n blocks: consecutive ids when such a free run exists, else any free blocks."""
        start = self.is_free.find(b"\x01" * n) if n else -1
        if start < 0:
            return [self.allocate() for _ in range(n)]
        return [self._take(b) for b in range(start, start + n)]

    def incref(self, block: int) -> None:
        assert self.ref_counts[block] > 0, f"incref of free {self.device} block {block}"
        self.ref_counts[block] += 1

    def decref(self, block: int) -> None:
        assert self.ref_counts[block] > 0, f"double free of {self.device} block {block}"
        self.ref_counts[block] -= 1
        if self.ref_counts[block] == 0:
            self.is_free[block] = 1
            self.num_free += 1


@dataclass
class BlockTable:
    device: str
    blocks: list[int]


class BlockManager:
    def __init__(self, block_size: int, num_device_blocks: int, num_cpu_blocks: int, watermark: float = 0.01):
        self.block_size = block_size
        self.pools = {
            DEVICE: BlockAllocator(DEVICE, num_device_blocks),
            CPU: BlockAllocator(CPU, num_cpu_blocks),
        }
        # Keep a few blocks back at admission so running sequences can still grow.
        self.watermark_blocks = int(watermark * num_device_blocks)
        self.self_tables: dict[int, BlockTable] = {}
        self.cross_tables: dict[str, BlockTable] = {}

    # -- queries ---------------------------------------------------------------------------
    def num_blocks_for(self, num_tokens: int) -> int:
        return blocks_for(num_tokens, self.block_size)

    def num_free(self, device: str = DEVICE) -> int:
        return self.pools[device].num_free

    def num_total(self, device: str = DEVICE) -> int:
        return self.pools[device].num_blocks

    def block_table(self, seq_id: int) -> list[int]:
        return self.self_tables[seq_id].blocks

    def cross_block_table(self, request_id: str) -> list[int]:
        return self.cross_tables[request_id].blocks

    # -- admission -------------------------------------------------------------------------
    def num_blocks_needed(self, num_encoder_tokens: int, seq_lens: list[int]) -> int:
        return self.num_blocks_for(num_encoder_tokens) + sum(self.num_blocks_for(n) for n in seq_lens)

    def can_allocate(self, num_encoder_tokens: int, seq_lens: list[int]) -> AllocStatus:
        needed = self.num_blocks_needed(num_encoder_tokens, seq_lens)
        if needed > self.num_total(DEVICE) - self.watermark_blocks:
            return AllocStatus.NEVER
        if self.num_free(DEVICE) - needed < self.watermark_blocks:
            return AllocStatus.LATER
        return AllocStatus.OK

    def allocate(self, request_id: str, num_encoder_tokens: int, seqs: dict[int, int]) -> None:
        """Cross table for the request, and a self table per decoder sequence (id -> length)."""
        assert request_id not in self.cross_tables, f"request {request_id} already has a cross table"
        pool = self.pools[DEVICE]
        self.cross_tables[request_id] = BlockTable(
            DEVICE, pool.allocate_run(self.num_blocks_for(num_encoder_tokens))
        )
        for seq_id, num_tokens in seqs.items():
            assert seq_id not in self.self_tables, f"sequence {seq_id} already has a table"
            self.self_tables[seq_id] = BlockTable(
                DEVICE, [pool.allocate() for _ in range(self.num_blocks_for(num_tokens))]
            )

    # -- decoding --------------------------------------------------------------------------
    def _needs_block(self, seq_id: int, num_tokens: int) -> bool:
        table = self.self_tables[seq_id].blocks
        if len(table) < self.num_blocks_for(num_tokens):
            return True
        return self.pools[DEVICE].ref_counts[table[-1]] > 1  # shared last block: copy-on-write

    def can_append_slots(self, seqs: dict[int, int]) -> bool:
        """Whether every sequence (id -> length incl. the token to write) can get its slot."""
        return sum(self._needs_block(s, n) for s, n in seqs.items()) <= self.num_free(DEVICE)

    def append_slot(self, seq_id: int, num_tokens: int) -> tuple[int, int] | None:
        """Make room for token `num_tokens - 1`. Returns (src, dst) if a block was copied."""
        pool = self.pools[DEVICE]
        table = self.self_tables[seq_id]
        assert table.device == DEVICE, f"sequence {seq_id} is swapped out"
        if len(table.blocks) < self.num_blocks_for(num_tokens):
            table.blocks.append(pool.allocate())
            return None
        last = table.blocks[-1]
        if pool.ref_counts[last] == 1:
            return None
        copy = pool.allocate()
        pool.decref(last)
        table.blocks[-1] = copy
        return last, copy

    def fork(self, parent_seq_id: int, child_seq_id: int) -> None:
        parent = self.self_tables[parent_seq_id]
        for block in parent.blocks:
            self.pools[parent.device].incref(block)
        self.self_tables[child_seq_id] = BlockTable(parent.device, list(parent.blocks))

    def free(self, seq_id: int) -> None:
        table = self.self_tables.pop(seq_id, None)
        if table is not None:
            for block in table.blocks:
                self.pools[table.device].decref(block)

    def free_cross(self, request_id: str) -> None:
        table = self.cross_tables.pop(request_id, None)
        if table is not None:
            for block in table.blocks:
                self.pools[table.device].decref(block)

    # -- swapping --------------------------------------------------------------------------
    def _tables(self, request_id: str, seq_ids: list[int]) -> list[BlockTable]:
        return [self.cross_tables[request_id]] + [self.self_tables[s] for s in seq_ids]

    def _num_unique_blocks(self, request_id: str, seq_ids: list[int]) -> int:
        return len({b for t in self._tables(request_id, seq_ids) for b in t.blocks})

    def can_swap_out(self, request_id: str, seq_ids: list[int]) -> bool:
        return self._num_unique_blocks(request_id, seq_ids) <= self.num_free(CPU)

    def can_swap_in(self, request_id: str, seq_ids: list[int], use_watermark: bool = True) -> bool:
        # Room for the blocks, one new slot per sequence, and (unless it runs alone) the watermark.
        needed = self._num_unique_blocks(request_id, seq_ids) + len(seq_ids)
        return needed <= self.num_free(DEVICE) - (self.watermark_blocks if use_watermark else 0)

    def swap_out(self, request_id: str, seq_ids: list[int]) -> list[tuple[int, int]]:
        """Move the request's tables to the CPU pool. Returns (device block, cpu block) copies."""
        return self._move(request_id, seq_ids, DEVICE, CPU)

    def swap_in(self, request_id: str, seq_ids: list[int]) -> list[tuple[int, int]]:
        """Move them back. Returns (cpu block, device block) copies."""
        return self._move(request_id, seq_ids, CPU, DEVICE)

    def _move(self, request_id: str, seq_ids: list[int], src: str, dst: str) -> list[tuple[int, int]]:
        src_pool, dst_pool = self.pools[src], self.pools[dst]
        cross, *self_tables = self._tables(request_id, seq_ids)
        assert cross.device == src, f"cross table of {request_id} is on {cross.device}, not {src}"
        run = dst_pool.allocate_run(len(cross.blocks))  # the request's own blocks: keep them a run
        mapping = dict(zip(cross.blocks, run))
        for block in cross.blocks:
            src_pool.decref(block)
        cross.blocks, cross.device = run, dst
        for table in self_tables:  # shared blocks move once and stay shared
            assert table.device == src, f"table of {request_id} is on {table.device}, not {src}"
            moved = []
            for block in table.blocks:
                if block in mapping:
                    dst_pool.incref(mapping[block])
                else:
                    mapping[block] = dst_pool.allocate()
                src_pool.decref(block)
                moved.append(mapping[block])
            table.blocks, table.device = moved, dst
        return list(mapping.items())

    def reset(self) -> None:
        for seq_id in list(self.self_tables):
            self.free(seq_id)
        for request_id in list(self.cross_tables):
            self.free_cross(request_id)
