"""Sequences and sequence groups: one request = one encoder sequence + its decoder sequences."""

from __future__ import annotations

import enum
import itertools
from typing import Any

from scriba.engine.inputs import EncoderDecoderInputs
from scriba.engine.outputs import Logprob
from scriba.engine.sampling_params import SamplingParams


class SequenceStatus(enum.Enum):
    WAITING = "waiting"  # its KV is not in the cache: needs a prefill
    RUNNING = "running"
    SWAPPED = "swapped"
    FINISHED_STOPPED = "stop"
    FINISHED_LENGTH = "length"
    FINISHED_ABORTED = "abort"

    def __init__(self, value: str):
        # A plain attribute, not a property: it is read for every sequence of every step.
        self.is_finished = value in ("stop", "length", "abort")


_seq_ids = itertools.count()
# A token sampled on the device and not yet read back (asynchronous scheduling): it holds its
# place (lengths, positions, slots count it) until the step that sampled it is read.
PENDING = -2


class Sequence:
    """A decoder sequence: the decoder prompt followed by what it generated."""

    def __init__(self, prompt_token_ids: list[int], seq_id: int | None = None):
        self.seq_id = next(_seq_ids) if seq_id is None else seq_id
        self.generator = None  # a seeded sample's own torch.Generator after the fork (else the group's)
        self.token_ids = list(prompt_token_ids)
        self.prompt_len = len(prompt_token_ids)
        self.logprobs: list[dict[int, Logprob]] = []
        self.token_logprobs: list[float] = []  # of each generated token, after the processors
        self.cumulative_logprob = 0.0
        self.status = SequenceStatus.WAITING
        self.stop_reason: int | None = None
        # [heads, generated tokens, encoder positions]: the asked heads' cross-attention weights,
        # computed once the sequence finishes (SamplingParams.cross_attention_heads)
        self.cross_attentions = None
        self.alignment_skipped = False  # SamplingParams.cross_attention_wanted said no
        self.pending = 0  # PENDING tokens at the end (asynchronous scheduling: at most 2)
        self.capped = False  # its pending token reaches a length limit: it is not scheduled again

    @property
    def output_token_ids(self) -> list[int]:
        """What it generated, but for the tokens still pending."""
        return self.token_ids[self.prompt_len : len(self.token_ids) - self.pending]

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.prompt_len

    def append(self, token_id: int, logprob: float, top: dict[int, Logprob] | None) -> None:
        self.token_ids.append(token_id)
        self._record(logprob, top)

    def append_pending(self) -> None:
        """A token was sampled on the device for it: its place is taken now, its value later."""
        self.token_ids.append(PENDING)
        self.pending += 1

    def fill_pending(self, token_id: int, logprob: float, top: dict[int, Logprob] | None) -> None:
        """The earliest pending token's value, read back."""
        self.token_ids[len(self.token_ids) - self.pending] = token_id
        self.pending -= 1
        self._record(logprob, top)

    def drop_pending(self) -> None:
        """It finished (or was aborted) before its pending tokens were read: they never were."""
        del self.token_ids[len(self.token_ids) - self.pending :]
        self.pending, self.capped = 0, False

    def _record(self, logprob: float, top: dict[int, Logprob] | None) -> None:
        self.token_logprobs.append(logprob)
        self.cumulative_logprob += logprob
        if top is not None:
            self.logprobs.append(top)

    def fork(self) -> "Sequence":
        child = Sequence(self.token_ids[: self.prompt_len])
        child.token_ids = list(self.token_ids)
        child.logprobs = list(self.logprobs)
        child.token_logprobs = list(self.token_logprobs)
        child.cumulative_logprob = self.cumulative_logprob
        child.status = self.status
        return child


class EncoderRun:
    """A group's encoder, launched apart from the decoder steps (EngineConfig.encoder_stream).
    `event`: recorded on the encoder's CUDA stream after its cross K/V writes; None on the CPU,
    where the encoder ran when the group was admitted."""

    def __init__(self):
        self.event = None

    def done(self) -> bool:
        """Its cross K/V are in the cache (never waits)."""
        return self.event is None or self.event.query()


class SequenceGroup:
    """One request: its inputs, settings, RNG, and decoder sequences (samples or beams)."""

    def __init__(
        self,
        request_id: str,
        inputs: EncoderDecoderInputs,
        params: SamplingParams,
        generator: Any,
        arrival: float,
    ):
        self.request_id = request_id
        self.inputs = inputs
        self.params = params
        self.generator = generator  # torch.Generator for seeded sampling, or None
        self.arrival = arrival
        self.seqs = [Sequence(inputs.decoder_token_ids)]
        self.processors: list = []  # logits processors, built by the engine
        self.beam = None  # BeamSearch state, for beam_width > 1
        self.prompt_logprob_query = None  # a PromptLogprobQuery, read at prefill
        self.prompt_logprob: float | None = None  # what it read
        self.echo: dict | None = None  # the RequestOutput fields that never change
        # encoder_stream: set when admitted, until its prompt joins a step (its cross K/V cached)
        self.encoder_run: EncoderRun | None = None

    @property
    def encoder_len(self) -> int:
        """Encoder positions, which size the cross-attention block table."""
        return self.inputs.encoder_len

    def seqs_with(self, status: SequenceStatus) -> list[Sequence]:
        return [s for s in self.seqs if s.status == status]

    def unfinished_seqs(self) -> list[Sequence]:
        return [s for s in self.seqs if not s.status.is_finished]

    @property
    def is_finished(self) -> bool:
        return all(s.status.is_finished for s in self.seqs)

    @property
    def needs_fork(self) -> bool:
        """True before the first token is sampled for an n > 1 request."""
        return self.params.n > len(self.seqs)
