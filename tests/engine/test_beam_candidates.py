"""The step's beam searches scored together on the device (engine/beam_candidates.py) against
each search scored alone on the host, as transformers' `_beam_search` does: its beams' rows plus
their running scores, flattened, `torch.topk(keep)`."""

import pytest
import torch

from scriba.engine.beam_candidates import BeamRow, read_candidates, top_continuations

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # scored on the engine's device


def alone(logprobs: torch.Tensor, running: torch.Tensor, keep: int):
    """One search's (scores, parents, tokens, log-probs) from its rows [beams, vocab]."""
    vocab = logprobs.shape[1]
    scores = (logprobs + running[:, None]).flatten()
    top_scores, top_index = torch.topk(scores, min(keep, scores.numel()))
    parents, tokens = (top_index // vocab).tolist(), (top_index % vocab).tolist()
    return top_scores, parents, tokens, [logprobs[p, t].item() for p, t in zip(parents, tokens)]


def searches(seed: int, vocab: int, shapes: list[tuple[int, int]], banned: float):
    """Random processed log-probs for searches of (beams, keep), their rows interleaved in the
    step as a batch's are, a `banned` share of each row at -inf (processors' bans)."""
    gen = torch.Generator().manual_seed(seed)
    places = [(key, i, keep) for key, (beams, keep) in enumerate(shapes) for i in range(beams)]
    order = torch.randperm(len(places) + 3, generator=gen).tolist()  # 3 rows of greedy requests
    logprobs = torch.randn(len(order), vocab, generator=gen).log_softmax(-1)
    logprobs[torch.rand(logprobs.shape, generator=gen) < banned] = -float("inf")
    running = [-torch.rand(beams, generator=gen) * 10 for beams, _ in shapes]
    rows = [order.index(k) for k in range(len(places))]
    beams = [BeamRow(f"r{key}", i, float(running[key][i]), keep) for key, i, keep in places]
    return logprobs, rows, beams, running


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("vocab, banned", [(97, 0.0), (1000, 0.5)])
def test_searches_scored_together_choose_as_each_alone(seed, vocab, banned):
    shapes = [(4, 8), (1, 8), (5, 10), (2, 6), (3, 9)]  # a first step (1 beam) among later ones
    logprobs, rows, beams, running = searches(seed, vocab, shapes, banned)
    plan, values = top_continuations(logprobs.to(DEVICE), rows, beams)
    found = read_candidates(plan, values.tolist(), vocab)
    assert list(found) == [f"r{k}" for k in range(len(shapes))]
    for key, (size, keep) in enumerate(shapes):
        mine = [r for r, b in zip(rows, beams) if b.key == f"r{key}"]
        scores, parents, tokens, chosen = alone(logprobs[mine], running[key], keep)
        got = found[f"r{key}"]
        assert got.scores.dtype == torch.float32 and torch.equal(got.scores, scores)
        assert (got.parents, got.token_ids, got.logprobs) == (parents, tokens, chosen)


def test_fewer_finite_continuations_than_kept_give_minus_infinity_on_real_beams():
    """A search whose rows allow fewer than `keep` continuations (a tiny vocabulary, bans) next
    to a wider one: the rest are -inf with a -inf log-prob, and every parent is a real beam."""
    vocab = 5
    logprobs = torch.full((5, vocab), -float("inf"))
    logprobs[0, 1], logprobs[1, 3] = -0.5, -1.5  # search "a": 2 beams, 2 finite continuations
    logprobs[2:] = torch.randn(3, vocab).log_softmax(-1)  # search "b": 3 beams
    beams = [BeamRow("a", 0, -1.0, 8), BeamRow("a", 1, -2.0, 8)]
    beams += [BeamRow("b", i, -float(i), 8) for i in range(3)]
    plan, values = top_continuations(logprobs.to(DEVICE), list(range(5)), beams)
    a = read_candidates(plan, values.tolist(), vocab)["a"]
    assert a.scores[:2].tolist() == [-1.5, -3.5] and (a.parents[:2], a.token_ids[:2]) == ([0, 1], [1, 3])
    assert len(a.scores) == 8 and torch.isinf(a.scores[2:]).all()
    assert all(0 <= p < 2 for p in a.parents) and all(lp == -float("inf") for lp in a.logprobs[2:])
