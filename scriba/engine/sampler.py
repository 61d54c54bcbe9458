"""From logits to tokens for a whole step: processors, then greedy or sampled picks, batched.

Log-probs are taken after the logits processors and before temperature and truncation, as
transformers' `output_scores` are under greedy decoding. Sampling draws by the exponential
race (argmax of p / E, E ~ Exp(1)), which picks token i with probability p_i: every row's
noise comes from its request's own generator (seeded requests) or the engine's, so a seeded
request's draws do not depend on the batch. Everything the host needs (tokens, log-probs,
ranks, top log-probs, prompt log-probs) comes back in one transfer; under asynchronous
scheduling it is started when the step ends and waited for a step later (`sample_on_device`),
the sampled tokens feeding the next step on the device meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from scriba.engine.beam_candidates import (
    BeamCandidates,
    BeamPlan,
    BeamRow,
    read_candidates,
    top_continuations,
)
from scriba.engine.logits_processors import LogitsProcessor, StepRows, apply_processors
from scriba.engine.outputs import Logprob
from scriba.engine.sampling_params import SamplingParams
from scriba.engine.to_device import to_device


@dataclass
class SampleRow:
    """One logits row: the sequence it belongs to and how to sample it."""

    token_ids: list[int]
    num_generated: int
    params: SamplingParams
    processors: list[LogitsProcessor]
    generator: Any = None  # the request's torch.Generator (seeded), or None: the engine's
    num_samples: int = 1
    beam: BeamRow | None = None  # a beam-search row's place in its search


@dataclass
class Sample:
    token_id: int
    logprob: float
    top_logprobs: dict[int, Logprob] | None


def sample(
    logits: torch.Tensor,  # [num_rows, vocab] float32, processed in place
    rows: list[SampleRow],
    history: Callable[[], torch.Tensor],  # -> the rows' tokens [num_rows, width], PAD past a length
    generator: torch.Generator | None = None,  # for rows without their own
    prompt_logprobs: torch.Tensor | None = None,  # [k] prompt log-probs, brought back in the same transfer
) -> tuple[list[list[Sample] | BeamCandidates], list[float]]:
    """Per row, `num_samples` samples, or for a beam-search row its search's BeamCandidates (the
    processors run on log-probs there, as in transformers' beam search); and `prompt_logprobs`
    as floats."""
    return sample_on_device(logits, rows, history, generator, prompt_logprobs).result()


@dataclass
class DeviceSamples:
    """A step's samples while they are still on the device: `tokens` [len(owners)] (the next
    step's inputs, read there without the host), the rest packed for one transfer, started
    without blocking (into pinned memory beside a GPU) and waited for by `result()`."""

    rows: list[SampleRow]
    owners: list[int]  # the row of each sample
    tokens: torch.Tensor | None
    packed: torch.Tensor | None  # float64: tokens, log-probs, [ranks, top log-probs], beams, prompt log-probs
    num_top: int
    num_prompt: int
    beams: BeamPlan | None  # the beam searches' candidates, packed at `beams_at`
    beams_at: int
    vocab: int
    done: Any = None  # the CUDA event the transfer records

    def result(self) -> tuple[list[list[Sample] | BeamCandidates], list[float]]:
        if self.done is not None:
            self.done.synchronize()
        values = self.packed.tolist() if self.packed is not None else []
        results: list = [[] for _ in self.rows]
        if self.beams is not None:
            found = read_candidates(self.beams, values[self.beams_at :], self.vocab)
            for i, row in enumerate(self.rows):
                if row.beam is not None:
                    results[i] = found[row.beam.key]
        samples = _unpack(values, self.owners, self.num_top, self.rows)
        for i, s in zip(self.owners, samples):
            results[i].append(s)
        return results, values[len(values) - self.num_prompt :]


def sample_on_device(
    logits: torch.Tensor,
    rows: list[SampleRow],
    history: Callable[[], torch.Tensor],
    generator: torch.Generator | None = None,
    prompt_logprobs: torch.Tensor | None = None,
) -> DeviceSamples:
    """`sample`'s work, its results left on the device (see DeviceSamples)."""
    dev = logits.device
    beam = [i for i, row in enumerate(rows) if row.beam is not None]
    if beam:
        b = to_device(beam, dev)
        logits[b] = torch.log_softmax(logits[b], dim=-1)
    step = StepRows([len(r.token_ids) for r in rows], [r.num_generated for r in rows], history)
    apply_processors(logits, [r.processors for r in rows], step)
    owners = [i for i, row in enumerate(rows) if row.beam is None for _ in range(row.num_samples)]
    tokens, parts, num_top = _picks(logits, rows, owners, generator) if owners else (None, [], 0)
    plan, beams_at = None, sum(p.numel() for p in parts)
    if beam:
        plan, candidates = top_continuations(logits, beam, [rows[i].beam for i in beam])
        parts.append(candidates)
    if prompt_logprobs is not None:
        parts.append(prompt_logprobs.double())
    packed, done = (parts[0] if len(parts) == 1 else torch.cat(parts), None) if parts else (None, None)
    if packed is not None and dev.type == "cuda":  # the one transfer, started now
        host = torch.empty(packed.shape, dtype=packed.dtype, pin_memory=True)
        packed, done = host.copy_(packed, non_blocking=True), torch.cuda.Event()
        done.record()
    num_prompt = 0 if prompt_logprobs is None else prompt_logprobs.numel()
    vocab = logits.shape[1]
    return DeviceSamples(rows, owners, tokens, packed, num_top, num_prompt, plan, beams_at, vocab, done)


def _picks(logits, rows: list[SampleRow], owners: list[int], generator) -> tuple[torch.Tensor, list, int]:
    """Tokens for the outputs (`owners`: the row of each) [len(owners)] int64; the transfer's
    float64 pieces: those tokens, their log-probs, and when asked for, their ranks and the top
    log-probs; the number of top log-probs."""
    dev = logits.device
    whole = owners == list(range(len(rows)))
    scores = logits if whole else logits[to_device(owners, dev)]
    drawn = [k for k, i in enumerate(owners) if not rows[i].params.is_greedy]
    wanted = [rows[i].params.logprobs for i in owners]
    num_top = max((w or 0 for w in wanted), default=0)
    if not drawn and not num_top:
        return *_greedy_picks(scores, any(w is not None for w in wanted)), 0
    tokens = scores.max(dim=-1).indices  # argmax's first maximum; torch's CPU argmax is 3x slower
    if drawn:
        at = to_device(drawn, dev)
        tokens[at] = _draw(scores[at], [rows[owners[k]] for k in drawn], generator)
    # log_softmax, not logsumexp: torch's CPU logsumexp is 3-5x slower on rows that the
    # processors filled with -inf (timestamp rules ban most of the vocabulary).
    logprobs = torch.log_softmax(scores, dim=-1)
    chosen = logprobs.gather(1, tokens[:, None])[:, 0]
    parts = [tokens.double(), chosen.double()]
    if any(w is not None for w in wanted):
        parts.append(((logprobs > chosen[:, None]).sum(dim=-1) + 1).double())
    if num_top:
        top_values, top_ids = torch.topk(logprobs, num_top, dim=-1)
        parts += [top_values.double().flatten(), top_ids.double().flatten()]
    return tokens, parts, num_top


def _greedy_picks(scores: torch.Tensor, ranked: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """_picks' tokens and pieces when every output is greedy and no top log-probs are asked for:
    each row's first maximum, its log-prob -log(sum(exp(scores - max))) (log_softmax's at the
    maximum, with no row of log-probs made), and its rank, which is 1 (nothing scores above a
    maximum). On the CPU in numpy and one compiled pass: in a decode step torch's ops over a
    51,865-wide row each split it across its threads, and cost ~50 us apiece there."""
    if scores.device.type == "cpu":
        return _greedy_cpu(scores, ranked)
    tokens, chosen = _greedy_torch(scores)
    parts = [tokens.double(), chosen] + ([torch.ones_like(chosen)] if ranked else [])
    return tokens, parts


def _greedy_cpu(scores: torch.Tensor, ranked: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """_greedy_picks on CPU float32 scores [rows, vocab]: numpy's argmax (vectorized), the
    normaliser in one vectorized pass (kernels/cpu_exp.py), the pieces packed as one array."""
    from scriba.kernels.cpu_exp import log_softmax_at as at_picks

    row = np.ascontiguousarray(scores.numpy(), dtype=np.float32)
    tokens = row.argmax(axis=-1)
    n = len(tokens)
    packed = np.ones((3 if ranked else 2) * n)  # tokens, log-probs[, ranks: 1]
    packed[:n] = tokens
    packed[n : 2 * n] = at_picks(row, row[np.arange(n), tokens], tokens)
    return torch.from_numpy(tokens), [torch.from_numpy(packed)]


def log_softmax_at(scores: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """log_softmax(scores[r])[token_ids[r]] for each row of scores [rows, vocab] -> float64 [rows],
    without a row of log-probs on the CPU (kernels/cpu_exp.py)."""
    if scores.device.type != "cpu":
        return scores.float().log_softmax(dim=-1).gather(1, token_ids[:, None])[:, 0].double()
    from scriba.kernels.cpu_exp import log_softmax_at as at_picks

    row = np.ascontiguousarray(scores.numpy(), dtype=np.float32)
    return torch.from_numpy(at_picks(row, row.max(axis=1), token_ids.numpy().astype(np.int64)))


def _greedy_torch(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(first maximum [rows] int64, its log-prob [rows] float64) of each row of scores."""
    best = scores.max(dim=-1)
    chosen = (scores - best.values[:, None]).exp_().sum(dim=-1).log_().neg_()
    return best.indices, chosen.double()


def _draw(scores: torch.Tensor, rows: list[SampleRow], generator) -> torch.Tensor:
    """One token for each row of scores [len(rows), vocab], by its request's settings."""
    dev = scores.device
    temperature = to_device([r.params.temperature for r in rows], dev)[:, None]
    top_k, top_p = [r.params.top_k for r in rows], [r.params.top_p for r in rows]
    probs = truncate(scores / temperature, top_k, top_p).softmax(dim=-1)
    noise = torch.empty_like(probs)
    by_generator: dict[int, tuple[Any, list[int]]] = {}
    for k, row in enumerate(rows):
        gen = row.generator if row.generator is not None else generator
        by_generator.setdefault(id(gen), (gen, []))[1].append(k)
    for gen, ks in by_generator.values():
        part = torch.empty((len(ks), probs.shape[1]), device=dev).exponential_(generator=gen)
        noise[to_device(ks, dev)] = part
    return (probs / noise).argmax(dim=-1)


def truncate(scores: torch.Tensor, top_k: int | list[int], top_p: float | list[float]) -> torch.Tensor:
    """Mask (to -inf) all but the top-k, then all but the top-p mass, of each row of scores
    [rows, vocab] (or one row [vocab]); top_k / top_p: one per row, or one for all."""
    if scores.dim() == 1:
        return truncate(scores[None], top_k, top_p)[0]
    rows, vocab = scores.shape
    top_k = [top_k] * rows if isinstance(top_k, int) else list(top_k)
    top_p = [top_p] * rows if isinstance(top_p, (int, float)) else list(top_p)
    k = [t if 0 < t < vocab else vocab for t in top_k]
    if any(t < vocab for t in k):  # decided on the host: no synchronisation
        kth_index = to_device(k, scores.device)[:, None] - 1
        kth = torch.sort(scores, dim=-1, descending=True).values.gather(1, kth_index)
        scores = scores.masked_fill(scores < kth, -float("inf"))
    if any(p < 1.0 for p in top_p):
        # Drop the least likely tokens whose total mass stays within 1 - top_p (keep >= 1).
        sorted_scores, order = torch.sort(scores, descending=False)
        cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
        drop = cumulative <= 1 - to_device(top_p, scores.device)[:, None]
        drop[:, -1] = False
        scores = scores.masked_fill(drop.scatter(1, order, drop), -float("inf"))
    return scores


def _unpack(values: list[float], owners: list[int], num_top: int, rows: list[SampleRow]) -> list[Sample]:
    """The samples, in `owners` order, from the transferred values (see `_picks`)."""
    n = len(owners)
    ranks_at = 2 * n + (n if any(rows[i].params.logprobs is not None for i in owners) else 0)
    top_values, top_ids = values[ranks_at : ranks_at + n * num_top], values[ranks_at + n * num_top :]
    samples = []
    for k, i in enumerate(owners):
        token, logprob, wanted = int(values[k]), values[n + k], rows[i].params.logprobs
        described = None
        if wanted is not None:
            at = slice(k * num_top, k * num_top + wanted)
            described = {
                int(t): Logprob(v, rank=r + 1) for r, (t, v) in enumerate(zip(top_ids[at], top_values[at]))
            }
            if token not in described:
                described[token] = Logprob(logprob, rank=int(values[2 * n + k]))
        samples.append(Sample(token, logprob, described))
    return samples
