"""Word-level timestamps from the cross-attention of the checkpoint's alignment heads, as
openai-whisper and transformers compute them: the weights of the generated tokens over the
window's audio, normalised per frame across tokens, median-filtered along time, averaged over
heads; dynamic time warping then gives each token the time it first reaches.
"""

from __future__ import annotations

import numpy as np
import torch

from scriba.transcription.results import Word
from scriba.whisper.constants import TIME_PRECISION

MEDIAN_FILTER_WIDTH = 7
PREPEND = "\"'“¡¿([{-"
APPEND = "\"'.。,，!！?？:：”)]}、"
NO_SPACES = {"zh", "ja", "th", "lo", "my", "yue"}  # languages written without spaces between words


def median_filter(x: torch.Tensor, width: int = MEDIAN_FILTER_WIDTH) -> torch.Tensor:
    """Median over a sliding `width` along the last dimension (reflected at the edges)."""
    pad = width // 2
    if x.shape[-1] <= pad:
        return x
    padded = torch.nn.functional.pad(x[None], (pad, pad, 0, 0), mode="reflect")[0]  # x: [H, T, P]
    return padded.unfold(-1, width, 1).sort()[0][..., pad]


def dtw(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cheapest monotonic path through `cost` [tokens, frames], as (token, frame) index
    arrays; ties go diagonal, then up, then left, as openai-whisper's. Vectorized along the
    anti-diagonals (each depends only on the two before it)."""
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf, dtype=np.float32)
    trace = np.full((n + 1, m + 1), -1, dtype=np.int8)
    acc[0, 0] = 0
    for d in range(2, n + m + 1):
        i = np.arange(max(1, d - m), min(n, d - 1) + 1)
        j = d - i
        c0, c1, c2 = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
        step = np.where((c0 < c1) & (c0 < c2), 0, np.where((c1 < c0) & (c1 < c2), 1, 2))
        best = np.where(step == 0, c0, np.where(step == 1, c1, c2))
        acc[i, j] = cost[i - 1, j - 1] + best
        trace[i, j] = step
    trace[0, :], trace[:, 0] = 2, 1
    i, j, path = n, m, []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        t = trace[i, j]
        i, j = (i - 1, j - 1) if t == 0 else (i - 1, j) if t == 1 else (i, j - 1)
    path.reverse()
    return np.array([p[0] for p in path]), np.array([p[1] for p in path])


def token_times(weights: np.ndarray, prompt_len: int, num_generated: int, num_positions: int) -> np.ndarray:
    """Seconds into the window of each generated token ([num_generated]): the time at which the
    path reaches the decoder position that read it (transformers' token timestamps).
    `weights` [heads, prompt_len + num_generated, 1500] are the alignment heads' weights."""
    rows = torch.from_numpy(weights[:, prompt_len : prompt_len + num_generated - 1, :num_positions])
    if rows.shape[1] == 0:
        return np.zeros(num_generated)
    std, mean = torch.std_mean(rows, dim=-2, keepdim=True, unbiased=False)
    matrix = median_filter((rows - mean) / std).mean(dim=0)
    text_index, time_index = dtw(-matrix.double().numpy())
    jumps = np.pad(np.diff(text_index), (1, 0), constant_values=1).astype(bool)
    times = time_index[jumps] * TIME_PRECISION
    return np.concatenate([times, times[-1:]])


def split_words(
    tokens: list[int], decode, language: str | None, eot: int, marks: tuple[str, str] = (PREPEND, APPEND)
) -> list[list[int]]:
    """Indices into `tokens` of each word: a word starts at a space, a punctuation mark or a
    special token (no spaces in zh/ja/th/...); `marks` (prepended, appended: openai-whisper's by
    default) join the word after / before them."""
    pieces = _unicode_pieces(tokens, decode)
    if language not in NO_SPACES:
        words: list[list[int]] = []
        for idx in pieces:
            text = decode([tokens[k] for k in idx])
            special = tokens[idx[0]] >= eot
            if special or text.startswith(" ") or text.strip() in _PUNCTUATION or not words:
                words.append(list(idx))
            else:
                words[-1] += idx
        pieces = words
    return _merge_punctuation(pieces, [decode([tokens[k] for k in w]) for w in pieces], *marks)


_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def _unicode_pieces(tokens: list[int], decode) -> list[list[int]]:
    """Token index runs that decode to whole characters (a character may span tokens)."""
    full, pieces, current, offset = decode(tokens), [], [], 0
    for k in range(len(tokens)):
        current.append(k)
        text = decode([tokens[i] for i in current])
        bad = text.find("\ufffd")
        if bad < 0 or offset + bad >= len(full) or full[offset + bad] == "\ufffd":
            pieces.append(current)
            current, offset = [], offset + len(text)
    return pieces


def _merge_punctuation(
    words: list[list[int]], texts: list[str], prepend: str, append: str
) -> list[list[int]]:
    j = len(words) - 1
    for i in range(len(words) - 2, -1, -1):  # an opening mark joins the word after it
        if texts[i].startswith(" ") and texts[i].strip() in prepend:
            words[j], texts[j] = words[i] + words[j], texts[i] + texts[j]
            words[i], texts[i] = [], ""
        else:
            j = i
    i = 0
    for j in range(1, len(words)):  # a closing mark joins the word before it
        if not texts[i].endswith(" ") and texts[j] in append:
            words[i], texts[i] = words[i] + words[j], texts[i] + texts[j]
            words[j], texts[j] = [], ""
        else:
            i = j
    return [w for w in words if w]


def make_words(
    tokens, times, probs, start, stop, decode, language, eot, marks=(PREPEND, APPEND)
) -> list[Word]:
    """The words of the text tokens in tokens[start:stop] (timestamp tokens skipped): a word
    runs from the time of the token before its first (0 at the window start) to its last's;
    `marks`: the punctuation joined to the next and previous word (split_words)."""
    text_idx = [k for k in range(start, stop) if tokens[k] < eot]
    sub = [tokens[k] for k in text_idx]
    out = []
    for word in split_words(sub, decode, language, eot, marks):
        first, last = text_idx[word[0]], text_idx[word[-1]]
        begin = float(times[first - 1]) if first > 0 else 0.0
        p = float(np.mean([probs[text_idx[k]] for k in word])) if probs is not None else float("nan")
        out.append(Word(begin, float(times[last]), decode([sub[k] for k in word]), p))
    return out
