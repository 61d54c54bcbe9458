"""benchmarks/simulate_rtfx_bound.py's schedule against cases worked out by hand."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

from simulate_rtfx_bound import simulate  # noqa: E402


def test_one_wave_decodes_its_tokens_at_the_full_batch_step_after_its_encoder():
    # 8 windows in one wave encoded in 1 s, then 5 steps of 8 sequences at 0.1 + 0.01 x 8 s each
    assert simulate(8, 8, 1.0, 5, 0.1, 0.01) == pytest.approx(1.0 + 5 * 0.18)


def test_a_later_wave_waits_for_its_encoder_while_the_first_decodes():
    # two waves of 1, each encoded in 1 s; 2 tokens each; a step costs 0.1 + 0.1 a sequence.
    # t=1: wave 1 arrives; steps of one sequence: 1.2, 1.4 (done). Idle until t=2: wave 2, then
    # 2.2 and 2.4.
    assert simulate(2, 1, 1.0, 2, 0.1, 0.1) == pytest.approx(2.4)


def test_overlapping_waves_share_steps():
    # waves of 1 every 0.25 s, 3 tokens, a step 0.2 + 0.1 a sequence: t=.25 A arrives; A step ->
    # .55; B arrived at .5: A,B step -> .95; C arrived at .75: A,B,C -> 1.45 (A done); D arrived at
    # 1.0: B,C,D -> 1.95 (B done); C,D -> 2.35 (C done); D -> 2.65 (D done)
    assert simulate(4, 1, 0.25, 3, 0.2, 0.1) == pytest.approx(2.65)
