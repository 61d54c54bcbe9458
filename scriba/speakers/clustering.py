"""Which pieces share a voice, in two steps.

1. Spectral clustering of the pieces (Park et al., "Auto-tuning spectral clustering for speaker
   diarization using normalized maximum eigengap", 2019): each piece keeps its p most similar
   pieces as neighbours; the number of voices is where the Laplacian's eigenvalues jump, p
   chosen where that jump is clearest for the fewest neighbours; k-means (scipy) on the
   eigenvectors then places each piece.
2. Voices merged by their turns: a voice split in two by the way one person spoke (faster, lower,
   laughing) has turns as close, on average, as one voice's; average linkage over the voices
   (scipy) merges those within MERGE_DISTANCE. Few pieces (a short recording) make the eigengap
   overcount; this step undoes that too.
"""

from __future__ import annotations

import numpy as np

MAX_SPEAKERS = 8  # the most voices the eigengap may find when no bound is given
# The most neighbours a piece keeps, as a share of the pieces (NeMo's maximum pruning ratio): more
# would join a voice heard in fewer pieces to a bigger one.
MAX_NEIGHBOURS = 0.25
KMEANS_STARTS = 5
# Average cosine distance between two voices' turns that makes them one: between the farthest turns
# of one voice on the dev recordings (a crowd-noisy old recording's) and the nearest two similar
# readers' (LibriSpeech 61 and the German LibriVox reader); the figures are in docs/decisions.md.
MERGE_DISTANCE = 0.34


def spectral(embeddings: np.ndarray, num=None, low=None, high=None, seed: int = 0) -> np.ndarray:
    """embeddings [n, d] unit vectors -> [n] int voice of each, numbered in order of first
    appearance. `num`: exactly that many (at most n); `low`, `high`: bounds on the count."""
    n = len(embeddings)
    if n < 3 or num == 1 or high == 1:
        return np.zeros(n, np.int64)
    sims = np.clip(embeddings @ embeddings.T, -1.0, 1.0).astype(np.float64)
    top = max(1, min(high or MAX_SPEAKERS, n - 1))
    lo = min(max((low or 1) - 1, 0), top - 1)
    best = None
    for p in sorted({max(2, int(round(n * share))) for share in np.linspace(0.05, MAX_NEIGHBOURS, 10)}):
        values, vectors = np.linalg.eigh(_laplacian(_pruned(sims, p)))
        gaps = np.diff(values[: top + 1]) / max(values[-1], 1e-10)
        k = min(num, n) if num is not None else int(np.argmax(gaps[lo:])) + lo + 1
        ratio = p / max(gaps[k - 1] if k - 1 < len(gaps) else 0.0, 1e-10)
        if best is None or ratio < best[0]:
            best = (ratio, k, vectors)
    _, k, vectors = best
    if k == 1:
        return np.zeros(n, np.int64)
    from scipy.cluster.vq import kmeans2

    points = vectors[:, :k] / np.maximum(np.linalg.norm(vectors[:, :k], axis=1, keepdims=True), 1e-10)
    best_labels, best_cost = None, np.inf
    for attempt in range(KMEANS_STARTS):  # k-means from several starts: the tightest wins
        centres, labels = kmeans2(points, k, minit="++", seed=seed + attempt, iter=30)
        cost = float(np.square(points - centres[labels]).sum())
        if cost < best_cost:
            best_labels, best_cost = labels, cost
    return dense(best_labels)


def merge_voices(turns: np.ndarray, voice: np.ndarray, low=None, distance=None) -> np.ndarray:
    """turns [t, d] unit mean embeddings of the turns, voice [t] their voices -> [t] voices after
    merging those whose turns lie within `distance` of each other on average (never below
    `low` voices)."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    ids, voice = np.unique(voice, return_inverse=True)
    k = len(ids)
    if k < 2:
        return dense(voice)
    dist = 1.0 - turns @ turns.T
    members = voice[None, :] == np.arange(k)[:, None]  # [k, t]
    sums = members.astype(np.float64) @ dist @ members.T.astype(np.float64)
    between = sums / np.outer(members.sum(1), members.sum(1))
    np.fill_diagonal(between, 0.0)
    between = np.clip((between + between.T) / 2, 0.0, None)
    tree = linkage(squareform(between, checks=False), method="average")
    groups = fcluster(tree, MERGE_DISTANCE if distance is None else distance, "distance")
    if low is not None and groups.max() < min(low, k):
        groups = fcluster(tree, min(low, k), "maxclust")
    return dense(groups[voice])


def centroids(embeddings: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """[k, d] unit mean of each voice's embeddings."""
    k = labels.max() + 1 if labels.size else 0
    sums = np.zeros((k, embeddings.shape[1]))
    np.add.at(sums, labels, embeddings)
    return (sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-8)).astype(np.float32)


def dense(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0..k-1 in order of first appearance."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse].astype(np.int64)


def _pruned(sims: np.ndarray, p: int) -> np.ndarray:
    """Each row's p largest similarities as 1, the rest 0, made symmetric."""
    keep = np.zeros_like(sims)
    np.put_along_axis(keep, np.argsort(-sims, axis=1)[:, :p], 1.0, axis=1)
    return (keep + keep.T) / 2


def _laplacian(affinity: np.ndarray) -> np.ndarray:
    return np.diag(affinity.sum(axis=1)) - affinity
