"""The compiled CPU timestamp rules against the batched torch rules they replace on a CPU."""

import numpy as np
import pytest
import torch

from scriba.engine.logits_processors import StepRows
from scriba.whisper.logits_rules import _timestamp_rules
from scriba.whisper.timestamp_rules_cpu import timestamp_rules_cpu

EOT, NO_TS, TS, VOCAB = 50, 53, 54, 90  # a small vocabulary laid out as Whisper's


def _case(seed: int, max_initial):
    """Random rows at every stage: first token, open and closed timestamp pairs, text."""
    rng = np.random.default_rng(seed)
    rows, width, begin = 12, 10, 3
    lengths = rng.integers(begin, width + 1, rows)
    history = np.full((rows, width), -1, np.int64)
    for r, n in enumerate(lengths):
        kinds = rng.random(n)  # about half timestamps, so pairs, singles and text all occur
        history[r, :n] = np.where(kinds < 0.5, rng.integers(TS, VOCAB, n), rng.integers(0, EOT, n))
    logits = torch.from_numpy(rng.normal(0, 3, (rows, VOCAB)).astype(np.float32))
    logits[rng.random(rows) < 0.3, TS:] += 6  # rows where the timestamps win
    step = StepRows(list(map(int, lengths)), [0] * rows, lambda: torch.from_numpy(history))
    return logits, step, [begin] * rows, (EOT, NO_TS, TS, max_initial)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_initial", [None, 5])
def test_the_same_rules_as_the_torch_version(seed, max_initial):
    logits, step, begins, layout = _case(seed, max_initial)
    expected, got = logits.clone(), logits.clone()
    rows = list(range(logits.shape[0]))
    _timestamp_rules(expected, rows, begins, layout, step)
    timestamp_rules_cpu(got, rows, begins, layout, step)
    assert torch.equal(torch.isinf(got), torch.isinf(expected))  # the same tokens banned
    assert torch.equal(got, expected)
    # A subset of rows: the others untouched.
    some, got_some = rows[::3], logits.clone()
    timestamp_rules_cpu(got_some, some, [begins[r] for r in some], layout, step)
    assert torch.equal(got_some[some], expected[some]) and torch.equal(
        got_some[[r for r in rows if r not in some]], logits[[r for r in rows if r not in some]]
    )
    assert torch.isinf(expected).any(dim=1).all()  # every row had something banned
