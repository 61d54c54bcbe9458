"""The decoder tokens of the running sequences, kept in one persistent tensor.

Processors that look back over a sequence (repetition penalty, no-repeat n-grams,
timestamp rules) read it as one [rows, length] tensor. Each sequence owns a row of the buffer
while it runs; a step writes only the tokens that row does not hold yet (one token per
decoding sequence), in one indexed write, so nothing is rebuilt from Python lists.
"""

from __future__ import annotations

import torch

from scriba.engine.sequence import PENDING
from scriba.engine.to_device import to_device

PAD = -1  # positions past a sequence's length


class TokenHistory:
    def __init__(self, max_len: int, device: torch.device | str = "cpu", capacity: int = 64):
        self.max_len = max_len
        self.device = torch.device(device)
        self.buffer = torch.full((capacity, max_len), PAD, dtype=torch.long, device=self.device)
        self.slot_of: dict[int, int] = {}  # seq id -> row of the buffer
        self.known: dict[int, int] = {}  # seq id -> tokens written so far

    def rows(
        self, seqs: list[tuple[int, list[int]]], late: tuple[torch.Tensor, dict[int, int]] | None = None
    ) -> tuple[torch.Tensor, int]:
        """Sync the step's sequences ((seq id, tokens) in row order) and return their tokens
        [rows, width] (PAD past each length; a view of the buffer when the rows lie in order:
        read it, do not write it) and the width (the longest length). A PENDING
        token (asynchronous scheduling) is read on the device: `late` = (tokens, seq id -> its
        index there), the previous step's samples."""
        self._release({sid for sid, _ in seqs})
        slots, positions, values, late_at = [], [], [], []
        for seq_id, tokens in seqs:
            slot = self._slot(seq_id)
            known = self.known[seq_id]
            if len(tokens) < known:  # shorter than what was written (recomputed or reused id)
                self.buffer[slot].fill_(PAD)
                known = 0
            for pos in range(known, len(tokens)):
                if tokens[pos] == PENDING:
                    late_at.append((slot, pos, late[1][seq_id]))
                    continue
                slots.append(slot)
                positions.append(pos)
                values.append(tokens[pos])
            self.known[seq_id] = len(tokens)
        on_cpu = self.device.type == "cpu"
        if values and on_cpu:  # one numpy write: torch's ops cost ~10 us each here
            self.buffer.numpy()[slots, positions] = values
        elif values:
            index = (to_device(slots, self.device), to_device(positions, self.device))
            self.buffer.index_put_(index, to_device(values, self.device))
        if late_at:
            at = to_device(late_at, self.device).T  # [3, k]: slot, position, sample
            self.buffer.index_put_((at[0], at[1]), late[0][at[2]])
        width = max((len(t) for _, t in seqs), default=0)
        order = [self.slot_of[sid] for sid, _ in seqs]
        first = order[0] if order else 0
        if order == list(range(first, first + len(order))):  # rows in order: a view (read-only), no gather
            if on_cpu:  # sliced in numpy: torch's two slicing ops cost more after a step's kernels
                return torch.from_numpy(self.buffer.numpy()[first : first + len(order), :width]), width
            return self.buffer[first : first + len(order), :width], width
        return self.buffer[to_device(order, self.device), :width], width

    def _release(self, live: set[int]) -> None:
        """Free the rows of sequences that are not in this step (finished, or preempted: a
        preempted sequence is written afresh when it returns)."""
        for seq_id in [s for s in self.slot_of if s not in live]:
            slot = self.slot_of.pop(seq_id)
            del self.known[seq_id]
            self.buffer[slot].fill_(PAD)

    def _slot(self, seq_id: int) -> int:
        if seq_id in self.slot_of:
            return self.slot_of[seq_id]
        used = set(self.slot_of.values())
        free = next((i for i in range(self.buffer.shape[0]) if i not in used), None)
        if free is None:  # grow: double the rows
            free = self.buffer.shape[0]
            extra = torch.full_like(self.buffer, PAD)
            self.buffer = torch.cat([self.buffer, extra])
        self.slot_of[seq_id] = free
        self.known[seq_id] = 0
        return free
