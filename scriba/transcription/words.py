"""Word-level timestamps from the cross-attention of the checkpoint's alignment heads, as
openai-whisper and transformers compute them: the weights of the generated tokens over the
window's audio, normalised per frame across tokens, median-filtered along time, averaged over
heads; dynamic time warping then gives each token the time it first reaches.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

from scriba.transcription.options import APPEND, PREPEND
from scriba.transcription.results import Word
from scriba.whisper.constants import TIME_PRECISION

MEDIAN_FILTER_WIDTH = 7
NO_SPACES = {"zh", "ja", "th", "lo", "my", "yue"}  # languages written without spaces between words


def median_filter(x: torch.Tensor, width: int = MEDIAN_FILTER_WIDTH) -> torch.Tensor:
    """Median over a sliding `width` along the last dimension (reflected at the edges)."""
    pad = width // 2
    if x.shape[-1] <= pad:
        return x
    padded = torch.nn.functional.pad(x[None], (pad, pad, 0, 0), mode="reflect")[0]  # x: [H, T, P]
    rows = np.ascontiguousarray(padded.reshape(-1, padded.shape[-1]).numpy())
    return torch.from_numpy(_sliding_median(rows, width)).reshape(x.shape)


@numba.njit(cache=True, nogil=True)
def _sliding_median(rows: np.ndarray, width: int) -> np.ndarray:
    """[r, n + width - 1] -> [r, n]: each window's middle value. Width 7 (the filter's) runs
    Knuth's 16-comparator sorting network, branch-free (the compiler vectorizes it over the
    positions); other widths an insertion sort."""
    count, out_len = rows.shape[0], rows.shape[1] - width + 1
    out = np.empty((count, out_len), dtype=rows.dtype)
    if width == 7:
        for r in range(count):
            for k in range(out_len):
                a0, a1, a2, a3 = rows[r, k], rows[r, k + 1], rows[r, k + 2], rows[r, k + 3]
                a4, a5, a6 = rows[r, k + 4], rows[r, k + 5], rows[r, k + 6]
                a0, a6 = min(a0, a6), max(a0, a6)
                a2, a3 = min(a2, a3), max(a2, a3)
                a4, a5 = min(a4, a5), max(a4, a5)
                a0, a2 = min(a0, a2), max(a0, a2)
                a1, a4 = min(a1, a4), max(a1, a4)
                a3, a6 = min(a3, a6), max(a3, a6)
                a0, a1 = min(a0, a1), max(a0, a1)
                a2, a5 = min(a2, a5), max(a2, a5)
                a3, a4 = min(a3, a4), max(a3, a4)
                a1, a2 = min(a1, a2), max(a1, a2)
                a4, a6 = min(a4, a6), max(a4, a6)
                a2, a3 = min(a2, a3), max(a2, a3)
                a4, a5 = min(a4, a5), max(a4, a5)
                a1, a2 = min(a1, a2), max(a1, a2)
                a3, a4 = min(a3, a4), max(a3, a4)
                out[r, k] = a3
        return out
    window = np.empty(width, dtype=rows.dtype)
    for r in range(count):
        for k in range(out_len):
            for a in range(width):
                value, b = rows[r, k + a], a
                while b > 0 and window[b - 1] > value:
                    window[b] = window[b - 1]
                    b -= 1
                window[b] = value
            out[r, k] = window[width // 2]
    return out


def dtw(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cheapest monotonic path through `cost` [tokens, frames], as (token, frame) index
    arrays; ties go diagonal, then up, then left, as openai-whisper's."""
    trace = _dtw_trace(np.ascontiguousarray(cost))
    n, m = cost.shape
    i, j, path = n, m, []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        t = trace[i, j]
        i, j = (i - 1, j - 1) if t == 0 else (i - 1, j) if t == 1 else (i, j - 1)
    path.reverse()
    return np.array([p[0] for p in path]), np.array([p[1] for p in path])


@numba.njit(cache=True, nogil=True)
def _dtw_trace(cost: np.ndarray) -> np.ndarray:
    """[n + 1, m + 1] int8: the step that reaches each cell (0 diagonal, 1 up, 2 left), the
    sums kept in float32 as openai-whisper's."""
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf, dtype=np.float32)
    trace = np.full((n + 1, m + 1), -1, dtype=np.int8)
    acc[0, 0] = 0
    for j in range(1, m + 1):
        for i in range(1, n + 1):
            c0, c1, c2 = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
            if c0 < c1 and c0 < c2:
                best, step = c0, 0
            elif c1 < c0 and c1 < c2:
                best, step = c1, 1
            else:
                best, step = c2, 2
            acc[i, j] = cost[i - 1, j - 1] + best
            trace[i, j] = step
    trace[0, :] = 2
    trace[:, 0] = 1
    return trace


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
