"""Continuous batching over sequence groups, in plain Python.

Every step, in phases sharing one StepBudget: (1) running groups get a slot for their next
token; when blocks run out the newest running group is preempted (swapped to the CPU pool, or
freed to be recomputed); (2) if nothing was preempted, swapped groups come back; (3) if none
are left swapped, waiting groups are admitted by priority under the token budget and the sequence cap
(a background group, of a priority above 0, only while none of a lower value runs). Prefills and
decodes of one step run together in one forward pass. Under EngineConfig.encoder_stream an admitted
group's encoder runs apart (`encodes`), and its prompt joins the first step after it finished (`prompts`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from scriba.config import EngineConfig
from scriba.engine.block_manager import AllocStatus, BlockManager
from scriba.engine.sequence import EncoderRun, SequenceGroup, SequenceStatus


@dataclass
class SchedulerOutputs:
    prefills: list[SequenceGroup] = field(default_factory=list)
    decodes: list[SequenceGroup] = field(default_factory=list)
    blocks_to_swap_in: list[tuple[int, int]] = field(default_factory=list)  # (cpu, device)
    blocks_to_swap_out: list[tuple[int, int]] = field(default_factory=list)  # (device, cpu)
    blocks_to_copy: list[tuple[int, int]] = field(default_factory=list)  # (src, dst), device
    aborted: list[SequenceGroup] = field(default_factory=list)  # could never fit
    # running groups left out of this step: their pending token is their last (asynchronous), or
    # their encoder, launched apart, has not finished
    held: list[SequenceGroup] = field(default_factory=list)
    # encoder_stream: admitted groups whose encoder runs apart, and encoded ones whose prompt runs
    encodes: list[SequenceGroup] = field(default_factory=list)
    prompts: list[SequenceGroup] = field(default_factory=list)
    # blocks of a group still encoding were freed: the step waits for the encoder before reusing them
    wait_for_encoder: bool = False


@dataclass
class StepBudget:
    """What one step may still take: tokens (a decoding sequence costs one, an admitted group
    its encoder and prompt tokens) and sequences."""

    tokens: int
    max_seqs: int
    seqs: int = 0

    def fits(self, seqs: int, tokens: int) -> bool:
        return self.seqs + seqs <= self.max_seqs and tokens <= self.tokens

    def take(self, seqs: int, tokens: int) -> None:
        self.seqs += seqs
        self.tokens -= tokens


class Scheduler:
    def __init__(self, config: EngineConfig, block_manager: BlockManager):
        self.config = config
        self.block_manager = block_manager
        self.waiting: deque[SequenceGroup] = deque()
        self.running: list[SequenceGroup] = []
        self.swapped: deque[SequenceGroup] = deque()
        self.num_swapped_out = 0  # preemptions by swap, over the engine's life
        self.num_recomputed = 0  # preemptions by recompute
        self._freed_while_encoding = False

    def add(self, group: SequenceGroup) -> None:
        """Waiting groups are admitted by priority (lower first), then in order of arrival."""
        priority = group.params.priority
        at = len(self.waiting)
        while at and self.waiting[at - 1].params.priority > priority:
            at -= 1
        self.waiting.insert(at, group)

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
        self._free_cross(group)

    def _free_cross(self, group: SequenceGroup) -> None:
        if group.encoder_run is not None and not group.encoder_run.done():  # it may still write them
            self._freed_while_encoding = True
        group.encoder_run = None
        self.block_manager.free_cross(group.request_id)

    def remove_finished(self) -> None:
        """Finished groups leave: running ones, and (asynchronous scheduling) waiting or swapped
        ones, preempted while their last token was in flight and finished by it. (A preempted
        group comes back at the next schedule at the earliest, after that token is read.)"""
        for queue in (self.running, self.waiting, self.swapped):
            for group in [g for g in queue if g.is_finished]:
                queue.remove(group)
                self.free_group(group)

    # -- one step --------------------------------------------------------------------------
    def schedule(self) -> SchedulerOutputs:
        """One step's batch, in three phases sharing one budget: the running decode (the newest
        give way when blocks run out), then the swapped come back, then the waiting are
        admitted; each phase runs only if the one before left nobody behind."""
        out = SchedulerOutputs()
        limits = self.config.scheduler_config
        step = StepBudget(limits.max_num_batched_tokens, limits.max_num_seqs)
        if self._decode_running(out, step) and self._swap_in(out, step):
            self._admit_waiting(out, step)
        scheduled = out.prefills + out.decodes + out.held + out.encodes + out.prompts
        self.running = sorted(scheduled, key=lambda g: g.arrival)
        out.wait_for_encoder, self._freed_while_encoding = self._freed_while_encoding, False
        return out

    def _decode_running(self, out: SchedulerOutputs, step: StepBudget) -> bool:
        """Every running group gets the slots for its next tokens, the newest preempted while
        blocks are short. True when nobody had to give way."""
        queue, preempted = deque(self.running), False
        while queue:
            group = queue.popleft()
            if group.encoder_run is not None:
                self._prompt_once_encoded(group, out, step)
                continue
            seqs = [s for s in group.seqs_with(SequenceStatus.RUNNING) if not s.capped]
            if not seqs:  # its last tokens reach a length limit, still pending (asynchronous)
                out.held.append(group)
                continue
            lengths = {s.seq_id: len(s.token_ids) for s in seqs}
            while not self.block_manager.can_append_slots(lengths):
                preempted = True
                victim = queue.pop() if queue else group
                self._preempt(victim, out)
                if victim is group:
                    break
            else:
                self._grow(group, seqs, out, step)
        return not preempted

    def _prompt_once_encoded(self, group: SequenceGroup, out: SchedulerOutputs, step: StepBudget) -> None:
        """An admitted group whose encoder runs apart: its prompt joins the step once its cross K/V
        are cached (its slots were allocated when it was admitted), else it waits, held."""
        seqs = group.seqs_with(SequenceStatus.RUNNING)
        if not group.encoder_run.done():
            out.held.append(group)
            step.take(_num_new(group, seqs), 0)  # its sequences count against the cap all the same
            return
        group.encoder_run = None
        out.prompts.append(group)
        step.take(len(seqs), sum(len(s.token_ids) for s in seqs))

    def _swap_in(self, out: SchedulerOutputs, step: StepBudget) -> bool:
        """Swapped groups come back, oldest first, while they fit. True when none is left out."""
        while self.swapped:
            group = self.swapped[0]
            seqs = group.seqs_with(SequenceStatus.SWAPPED)
            seq_ids = [s.seq_id for s in seqs]
            alone = not out.decodes
            if not self.block_manager.can_swap_in(group.request_id, seq_ids, use_watermark=not alone):
                break
            if not alone and not step.fits(len(seqs), len(seqs)):
                break
            self.swapped.popleft()
            out.blocks_to_swap_in += self.block_manager.swap_in(group.request_id, seq_ids)
            for seq in seqs:
                seq.status = SequenceStatus.RUNNING
            self._grow(group, seqs, out, step)
        return not self.swapped

    def _admit_waiting(self, out: SchedulerOutputs, step: StepBudget) -> None:
        """Waiting groups (fresh, or to be recomputed) are admitted in order while their
        encoder and prompt tokens fit the budget and their sequences the cap; a group alone in
        the step may exceed the budget."""
        bm = self.block_manager
        while self.waiting:
            group = self.waiting[0]
            seqs = group.seqs_with(SequenceStatus.WAITING)
            lengths = [len(s.token_ids) for s in seqs]
            status = bm.can_allocate(group.encoder_len, lengths)
            if status is AllocStatus.NEVER:  # the engine checks at admission; guard anyway
                self.waiting.popleft()
                for seq in seqs:
                    seq.status = SequenceStatus.FINISHED_ABORTED
                out.aborted.append(group)
                continue
            alone = not (out.decodes or out.prefills or out.encodes or out.prompts)
            if self._yields(group):
                break
            num_new = _num_new(group, seqs)
            # the prompt's tokens are counted when it runs
            apart = self.config.execution_config.encoder_stream
            cost = group.encoder_len + (0 if apart else sum(lengths))
            if status is AllocStatus.LATER or (not alone and not step.fits(num_new, cost)):
                break
            self.waiting.popleft()
            bm.allocate(group.request_id, group.encoder_len, {s.seq_id: n for s, n in zip(seqs, lengths)})
            for seq in seqs:
                seq.status = SequenceStatus.RUNNING
            if apart:
                group.encoder_run = EncoderRun()
            (out.encodes if apart else out.prefills).append(group)
            step.take(num_new, cost)

    def _yields(self, group: SequenceGroup) -> bool:
        """A background request (priority above 0) waits while one of a lower value runs: its
        admission would put its encoder pass (and its prompt) between their decode steps."""
        priority = group.params.priority
        return priority > 0 and any(g.params.priority < priority for g in self.running)

    def _grow(self, group: SequenceGroup, seqs: list, out: SchedulerOutputs, step: StepBudget) -> None:
        """Each sequence gets the slot for its next token (a shared block is copied first); the
        group decodes this step."""
        for seq in seqs:
            copied = self.block_manager.append_slot(seq.seq_id, len(seq.token_ids))
            if copied:
                out.blocks_to_copy.append(copied)
        out.decodes.append(group)
        step.take(len(seqs), len(seqs))

    def _preempt(self, group: SequenceGroup, out: SchedulerOutputs) -> None:
        bm = self.block_manager
        seqs = group.seqs_with(SequenceStatus.RUNNING)
        seq_ids = [s.seq_id for s in seqs]
        # A group whose prompt has not run is recomputed: swapped back in, it would decode.
        swap = self.config.scheduler_config.preemption_mode == "swap" and group.encoder_run is None
        if swap and bm.can_swap_out(group.request_id, seq_ids):
            out.blocks_to_swap_out += bm.swap_out(group.request_id, seq_ids)
            for seq in seqs:
                seq.status = SequenceStatus.SWAPPED
            self.swapped.append(group)
            self.num_swapped_out += 1
        else:  # recompute (also the fallback when the CPU pool is full): drop the KV, redo later
            for seq in seqs:
                bm.free(seq.seq_id)
                seq.status = SequenceStatus.WAITING
            self._free_cross(group)
            self.waiting.appendleft(group)
            self.num_recomputed += 1


def _num_new(group: SequenceGroup, seqs: list) -> int:
    """The sequences its prefill leads to: samples fork right after it, and beams grow to beam_width."""
    return group.params.num_seqs if group.needs_fork or group.params.use_beam_search else len(seqs)
