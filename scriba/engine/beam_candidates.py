"""Every beam search's best continuations in a step, chosen on the device at once.

A beam search keeps, each step, the best `keep` (beam, token) continuations of its running
beams by score = the beam's running score + the token's processed log-prob. Choosing them on
the host would bring every beam's [vocab] row back, one transfer and one wait per request. Here
all the step's searches are scored together: their rows gathered into [searches, beams, vocab]
(a search with fewer beams padded with -inf), one `torch.topk` a search, and only the
[searches, keep] scores, indices and log-probs join the step's one transfer to the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from scriba.engine.to_device import to_device


@dataclass(frozen=True)
class BeamRow:
    """A beam-search row's place: its search (`key`), its beam's index there (running order), the
    beam's running score, and how many continuations the search keeps at most."""

    key: str  # the request's id
    index: int
    score: float
    keep: int


@dataclass
class BeamCandidates:
    """One search's best continuations this step, best first (host values, `keep` long)."""

    scores: torch.Tensor  # [keep] float32: running score + processed log-prob
    parents: list[int]  # the running beam each extends
    token_ids: list[int]
    logprobs: list[float]  # the token's processed log-prob


@dataclass
class BeamPlan:
    """Where the packed values of each search lie: `keys` in order, each with its `counts` kept."""

    keys: list[str]
    counts: list[int]
    sizes: list[int]  # each search's running beams
    width: int  # the columns of the packed [searches, width] blocks


def top_continuations(logprobs: torch.Tensor, rows: list[int], beams: list[BeamRow]):
    """logprobs [num_rows, vocab] float32 (processed); rows: the beam rows' indices there, beams
    their places. Returns (plan, values): values float64 [3 * searches * width] on the device,
    the scores, flat indices (beam * vocab + token) and log-probs, each [searches, width]."""
    vocab = logprobs.shape[1]
    keys = list(dict.fromkeys(b.key for b in beams))
    search = {k: i for i, k in enumerate(keys)}
    size = [0] * len(keys)
    for b in beams:
        size[search[b.key]] = max(size[search[b.key]], b.index + 1)
    num_beams = max(size)
    place = [[rows[0]] * num_beams for _ in keys]  # a pad's row is read, then scored -inf
    running = [[-float("inf")] * num_beams for _ in keys]
    keep = [0] * len(keys)
    for row, b in zip(rows, beams):
        place[search[b.key]][b.index], running[search[b.key]][b.index] = row, b.score
        keep[search[b.key]] = min(b.keep, size[search[b.key]] * vocab)
    where = to_device(place, logprobs.device, torch.int64)  # [searches, beams]
    start = to_device(running, logprobs.device, torch.float32)
    scores = (logprobs[where] + start[:, :, None]).flatten(1)  # [searches, beams * vocab]
    width = max(keep)
    top_scores, top_index = torch.topk(scores, width, dim=1)
    chosen = logprobs[where.gather(1, top_index // vocab), top_index % vocab]
    chosen = torch.where(top_scores == -float("inf"), top_scores, chosen)  # a pad's: -inf, as a real one's
    values = torch.cat([top_scores.double(), top_index.double(), chosen.double()]).flatten()
    return BeamPlan(keys, keep, size, width), values


def read_candidates(plan: BeamPlan, values: list[float], vocab: int) -> dict[str, BeamCandidates]:
    """The host side of `top_continuations`: search key -> its candidates. A continuation scored
    -inf may come from a pad (only where fewer than `keep` are finite): it extends the last beam."""
    n = len(plan.keys) * plan.width
    out = {}
    for i, (key, count, size) in enumerate(zip(plan.keys, plan.counts, plan.sizes)):
        at = slice(i * plan.width, i * plan.width + count)
        flat = [int(v) for v in values[n + at.start : n + at.stop]]
        out[key] = BeamCandidates(
            scores=torch.tensor(values[at], dtype=torch.float32),
            parents=[min(f // vocab, size - 1) for f in flat],
            token_ids=[f % vocab for f in flat],
            logprobs=values[2 * n + at.start : 2 * n + at.stop],
        )
    return out
