"""Continuous batching over sequence groups, in plain Python.

Every step: (1) running groups get a slot for their next token; when blocks run out the
newest running group is preempted (swapped to the CPU pool, or freed to be recomputed);
(2) if nothing was preempted, swapped groups come back; (3) if none are left swapped,
waiting groups are admitted under the token budget and the sequence cap. Prefills and
decodes of one step run together in one forward pass.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from scriba.config import EngineConfig
from scriba.engine.block_manager import AllocStatus, BlockManager
from scriba.engine.sequence import SequenceGroup, SequenceGroupMetadata, SequenceStatus


@dataclass
class SchedulerOutputs:
    prefills: list[SequenceGroup] = field(default_factory=list)
    decodes: list[SequenceGroup] = field(default_factory=list)
    blocks_to_swap_in: list[tuple[int, int]] = field(default_factory=list)  # (cpu, device)
    blocks_to_swap_out: list[tuple[int, int]] = field(default_factory=list)  # (device, cpu)
    blocks_to_copy: list[tuple[int, int]] = field(default_factory=list)  # (src, dst), device
    aborted: list[SequenceGroup] = field(default_factory=list)  # could never fit

    @property
    def is_empty(self) -> bool:
        return not (self.prefills or self.decodes)


class Scheduler:
    def __init__(self, config: EngineConfig, block_manager: BlockManager):
        self.config = config
        self.block_manager = block_manager
        self.waiting: deque[SequenceGroup] = deque()
        self.running: list[SequenceGroup] = []
        self.swapped: deque[SequenceGroup] = deque()
        self.num_swapped_out = 0  # preemptions by swap, over the engine's life
        self.num_recomputed = 0  # preemptions by recompute

    @property
    def num_preemptions(self) -> int:
        return self.num_swapped_out + self.num_recomputed

    def add(self, group: SequenceGroup) -> None:
        self.waiting.append(group)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running or self.swapped)

    def abort(self, request_id: str) -> SequenceGroup | None:
        for queue in (self.waiting, self.running, self.swapped):
            for group in queue:
                if group.request_id == request_id:
                    queue.remove(group)
                    for seq in group.unfinished_seqs():
                        seq.status = SequenceStatus.FINISHED_ABORTED
                    self.free_group(group)
                    return group
        return None

    def free_group(self, group: SequenceGroup) -> None:
        for seq in group.seqs:
            self.block_manager.free(seq.seq_id)
        self.block_manager.free_cross(group.request_id)

    def remove_finished(self) -> None:
        for group in [g for g in self.running if g.is_finished]:
            self.running.remove(group)
            self.free_group(group)

    # -- one step --------------------------------------------------------------------------
    def schedule(self) -> SchedulerOutputs:
        out = SchedulerOutputs()
        bm = self.block_manager
        budget = self.config.max_num_batched_tokens
        num_seqs = 0

        # 1. Running groups decode; make room by preempting the newest.
        queue = deque(self.running)
        preempted = False
        while queue:
            group = queue.popleft()
            seqs = group.seqs_with(SequenceStatus.RUNNING)
            lengths = {s.seq_id: len(s.token_ids) for s in seqs}
            while not bm.can_append_slots(lengths):
                preempted = True
                victim = queue.pop() if queue else group
                self._preempt(victim, out)
                if victim is group:
                    break
            else:
                for seq_id, length in lengths.items():
                    copied = bm.append_slot(seq_id, length)
                    if copied:
                        out.blocks_to_copy.append(copied)
                out.decodes.append(group)
                num_seqs += len(seqs)
                budget -= len(seqs)

        # 2. Swapped groups come back when nothing had to give way this step.
        while self.swapped and not preempted:
            group = self.swapped[0]
            seq_ids = [s.seq_id for s in group.seqs_with(SequenceStatus.SWAPPED)]
            alone = not out.decodes
            if not bm.can_swap_in(group.request_id, seq_ids, use_watermark=not alone):
                break
            if not alone and (num_seqs + len(seq_ids) > self.config.max_num_seqs or budget < len(seq_ids)):
                break
            self.swapped.popleft()
            out.blocks_to_swap_in += bm.swap_in(group.request_id, seq_ids)
            for seq in group.seqs_with(SequenceStatus.SWAPPED):
                seq.status = SequenceStatus.RUNNING
                copied = bm.append_slot(seq.seq_id, len(seq.token_ids))
                if copied:
                    out.blocks_to_copy.append(copied)
            out.decodes.append(group)
            num_seqs += len(seq_ids)
            budget -= len(seq_ids)

        # 3. Admit waiting groups (fresh, or recomputing) while nothing is swapped out.
        while self.waiting and not self.swapped and not preempted:
            group = self.waiting[0]
            seqs = group.seqs_with(SequenceStatus.WAITING)
            lengths = [len(s.token_ids) for s in seqs]
            cost = group.encoder_len + sum(lengths)
            status = bm.can_allocate(group.encoder_len, lengths)
            if status is AllocStatus.NEVER:  # the engine checks at admission; guard anyway
                self.waiting.popleft()
                for seq in seqs:
                    seq.status = SequenceStatus.FINISHED_ABORTED
                out.aborted.append(group)
                continue
            alone = not (out.decodes or out.prefills)
            # Samples fork right after prefill, and beams grow to beam_width.
            num_new = group.params.num_seqs if group.needs_fork or group.params.use_beam_search else len(seqs)
            if status is AllocStatus.LATER or (num_seqs + num_new > self.config.max_num_seqs and not alone):
                break
            if cost > budget and not alone:  # a step may exceed the budget only for a lone group
                break
            self.waiting.popleft()
            bm.allocate(group.request_id, group.encoder_len, {s.seq_id: n for s, n in zip(seqs, lengths)})
            for seq in seqs:
                seq.status = SequenceStatus.RUNNING
            out.prefills.append(group)
            num_seqs += num_new
            budget -= cost

        self.running = sorted(out.prefills + out.decodes, key=lambda g: g.arrival)
        return out

    def _preempt(self, group: SequenceGroup, out: SchedulerOutputs) -> None:
        bm = self.block_manager
        seqs = group.seqs_with(SequenceStatus.RUNNING)
        seq_ids = [s.seq_id for s in seqs]
        if self.config.preemption_mode == "swap" and bm.can_swap_out(group.request_id, seq_ids):
            out.blocks_to_swap_out += bm.swap_out(group.request_id, seq_ids)
            for seq in seqs:
                seq.status = SequenceStatus.SWAPPED
            self.swapped.append(group)
            self.num_swapped_out += 1
        else:  # recompute (also the fallback when the CPU pool is full): drop the KV, redo later
            for seq in seqs:
                bm.free(seq.seq_id)
                seq.status = SequenceStatus.WAITING
            bm.free_cross(group.request_id)
            self.waiting.appendleft(group)
            self.num_recomputed += 1

    # -- what the model runner gets ------------------------------------------------------------
    def metadata(self, group: SequenceGroup, is_prompt: bool) -> SequenceGroupMetadata:
        bm = self.block_manager
        seqs = group.seqs_with(SequenceStatus.RUNNING)
        return SequenceGroupMetadata(
            request_id=group.request_id,
            is_prompt=is_prompt,
            seq_ids=[s.seq_id for s in seqs],
            token_ids={s.seq_id: s.token_ids for s in seqs},
            block_tables={s.seq_id: bm.block_table(s.seq_id) for s in seqs},
            encoder_token_ids=group.inputs.encoder_token_ids,
            cross_block_table=bm.cross_block_table(group.request_id),
            params=group.params,
            generator=group.generator,
            num_samples=group.params.n if group.needs_fork else 1,
            prompt_lens={s.seq_id: s.prompt_len for s in seqs},
            processors=group.processors,
            encoder_features=group.inputs.encoder_features,
            encoder_len=group.encoder_len,
            probe=group.probe,
        )
