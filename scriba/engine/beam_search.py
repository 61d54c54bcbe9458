"""Beam search for one request, step by step, as transformers' `_beam_search` does it.

Each step takes the best 2k continuations (k = beam width) of the running beams, scored by
running score + processed log-prob (chosen on the device with the step's other searches:
beam_candidates.py). The best k that did not stop become the next running beams; those among
the first k that stopped (EOS or the length limit) become finished hypotheses, scored
sum / length ** length_penalty, and the best round(k * patience) finished are kept (patience
1: transformers' k; more, as in CTranslate2's beam search, searches on until that many are
found). The search ends when no running beam can beat the worst finished one (the
early-stopping heuristic), when k hypotheses are finished with `early_stopping=True`, or when
every continuation stopped. Scores are float32 tensors and the selections use `torch.topk` as
transformers' do.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from scriba.engine.beam_candidates import BeamCandidates, BeamRow
from scriba.engine.sampling_params import SamplingParams
from scriba.engine.sequence import SequenceStatus

DEAD = -1.0e9  # transformers' "never choose this" score


@dataclass
class Hypothesis:
    token_ids: list[int]  # the decoder prompt and the generated tokens
    score: float  # length-penalized
    is_eos: bool


@dataclass
class Selection:
    parent: int  # index of the running beam it extends
    token_id: int
    logprob: float  # the token's processed log-prob


class BeamSearch:
    def __init__(self, params: SamplingParams, prompt_len: int, max_len: int, eos_token_ids: list[int]):
        self.width = params.beam_width
        self.length_penalty = params.length_penalty
        self.early_stopping = params.early_stopping
        self.num_keep = max(2, 1 + len(eos_token_ids)) * self.width
        self.prompt_len = prompt_len
        self.max_len = max_len  # decoder length at which every beam stops
        self.eos = set(eos_token_ids)
        self.running_scores = torch.zeros(1)  # one per running beam, in beam order
        self.pool = max(1, round(self.width * params.patience))  # finished hypotheses kept
        self.finished_scores = torch.full((self.pool,), DEAD)
        self.finished: list[Hypothesis | None] = [None] * self.pool
        self.can_improve = True
        self.done = False

    def rows(self, key: str) -> list[BeamRow]:
        """The running beams' places for `top_continuations`, in beam order."""
        scores = self.running_scores.tolist()
        return [BeamRow(key, i, score, self.num_keep) for i, score in enumerate(scores)]

    def step(self, tokens: list[list[int]], top: BeamCandidates) -> list[Selection]:
        """tokens: each running beam's decoder tokens; top: this step's best continuations of
        them (`top_continuations`, scored from this search's `rows`). Returns the next running
        beams, best first."""
        cur_len = len(tokens[0])
        top_scores, parents, token_ids = top.scores, top.parents, top.token_ids
        stops = torch.tensor([t in self.eos or cur_len + 1 >= self.max_len for t in token_ids])

        running = top_scores + stops.float() * DEAD
        next_index = torch.topk(running, min(self.width, len(token_ids))).indices.tolist()
        self._update_finished(tokens, top_scores, parents, token_ids, stops, cur_len)
        self.running_scores = running[next_index]
        picked = [Selection(parents[j], token_ids[j], top.logprobs[j]) for j in next_index]

        cur_len += 1
        all_finished = all(h is not None for h in self.finished)
        if self.early_stopping == "never" and self.length_penalty > 0.0:
            best_len = self.max_len - self.prompt_len
        else:
            best_len = cur_len - self.prompt_len
        best_running = self.running_scores[0] / (best_len**self.length_penalty)
        worst_finished = self.finished_scores.min() if all_finished else torch.tensor(DEAD)
        self.can_improve = self.can_improve and bool(best_running > worst_finished)
        full = all_finished and self.early_stopping is True
        self.done = not self.can_improve or full or bool(stops.all())
        return picked

    def _update_finished(self, tokens, top_scores, parents, token_ids, stops, cur_len) -> None:
        in_top = torch.arange(len(parents)) < self.width
        just_finished = stops & in_top
        candidate = top_scores / ((cur_len + 1 - self.prompt_len) ** self.length_penalty)
        if all(h is not None for h in self.finished) and self.early_stopping is True:
            candidate = candidate + DEAD
        if not self.can_improve:
            candidate = candidate + DEAD
        candidate = candidate + (~just_finished).float() * DEAD
        merged = torch.cat([self.finished_scores, candidate])
        best = torch.topk(merged, self.pool).indices.tolist()
        hypotheses = list(self.finished)
        for j in range(len(parents)):
            hypotheses.append(
                Hypothesis(tokens[parents[j]] + [token_ids[j]], candidate[j].item(), token_ids[j] in self.eos)
                if just_finished[j]
                else None
            )
        self.finished_scores = merged[best]
        self.finished = [hypotheses[i] for i in best]

    def results(self, num: int) -> list[Hypothesis]:
        """The best `num` finished hypotheses, best first."""
        return [h for h in self.finished[:num] if h is not None]


def beam_rows(groups) -> dict[int, BeamRow]:
    """Sequence id -> its place in its beam search, for the running beams of `groups` (each with a
    BeamSearch as `group.beam`)."""
    places = {}
    for group in groups:
        running = group.seqs_with(SequenceStatus.RUNNING)
        places.update(zip((s.seq_id for s in running), group.beam.rows(group.request_id), strict=True))
    return places
