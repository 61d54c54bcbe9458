"""Clustering voices: the eigengap finds how many, k-means places them, and voices whose turns
are as near as one voice's merge; counts given or bounded are kept."""

import numpy as np
import pytest

from scriba.speakers.clustering import dense, merge_voices, spectral


def voices(sizes, spread=0.15, dim=32, seed=0):
    """Unit vectors around len(sizes) random centres (far apart in `dim` dimensions), and the
    centre of each."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((len(sizes), dim))
    points = np.concatenate([c + spread * rng.standard_normal((n, dim)) * np.linalg.norm(c) / np.sqrt(dim)
                             for c, n in zip(centres, sizes)])
    truth = np.repeat(np.arange(len(sizes)), sizes)
    order = rng.permutation(len(points))
    points = points[order] / np.linalg.norm(points[order], axis=1, keepdims=True)
    return points.astype(np.float32), truth[order]


def agree(found, truth) -> bool:
    """The same partition, whatever the numbers."""
    pairs = set(zip(found.tolist(), truth.tolist()))
    return len(pairs) == len(set(found.tolist())) == len(set(truth.tolist()))


@pytest.mark.parametrize("sizes", [(20, 20), (30, 10, 15), (16, 25, 14, 18)])
def test_the_eigengap_finds_the_number_of_voices(sizes):
    points, truth = voices(sizes)
    found = spectral(points)
    assert agree(found, truth)
    assert found[0] == 0 and set(found.tolist()) == set(range(len(sizes)))  # numbered by appearance


def test_a_count_given_or_bounded_is_kept():
    points, truth = voices((20, 20, 20))
    assert len(set(spectral(points, num=2).tolist())) == 2
    assert len(set(spectral(points, high=2).tolist())) == 2
    assert len(set(spectral(points, low=3, high=3).tolist())) == 3
    assert set(spectral(points, num=1).tolist()) == {0}
    assert len(spectral(points[:2])) == 2  # too few pieces to tell: one voice


def test_merging_joins_voices_whose_turns_are_as_near_as_one_voice_s():
    points, truth = voices((10, 10, 10), spread=0.1)
    split = truth.copy()
    split[(truth == 0) & (np.arange(len(truth)) % 2 == 0)] = 3  # one voice cut in two
    merged = merge_voices(points, split)
    assert agree(merged, truth)
    kept = merge_voices(points, split, low=4)  # never below a lower bound
    assert len(set(kept.tolist())) == 4


def test_dense_numbers_by_first_appearance():
    assert dense(np.array([7, 7, 2, 9, 2])).tolist() == [0, 0, 1, 2, 1]
