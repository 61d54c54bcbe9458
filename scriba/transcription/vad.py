"""Voice activity detection: where the speech is, so that only speech is decoded.

Silero VAD (the `silero-vad` package ships the model; it runs offline), its weights run over a
whole recording in a few batched torch calls (silero_batched.py: about 1,600x real time on this
project's 2 cores, 2.3x silero's own "sequence" ONNX form), then silero's own rules turn the
per-frame probabilities into speech chunks.
"""

from __future__ import annotations

import bisect
import threading

import numpy as np

from scriba.media.load import SAMPLE_RATE
from scriba.transcription.silero_batched import SileroBatched
from scriba.transcription.vad_options import VadOptions


_model = None
_model_lock = threading.Lock()


def _silero():
    """(the batched model, the timestamps-from-probabilities function), loaded once."""
    global _model
    with _model_lock:
        if _model is None:
            silero_vad = _import_silero()
            from silero_vad.utils_vad import get_speech_timestamps_from_probs

            _model = SileroBatched(silero_vad.load_silero_vad()), get_speech_timestamps_from_probs
        return _model


def frame_model():
    """A Silero VAD model of its own, for a stream read 512 samples (32 ms) at a time: it keeps
    the stream's state between calls (`model(torch frame, 16000)` -> speech probability)."""
    with _model_lock:
        return _import_silero().load_silero_vad(onnx=True)


def _import_silero():
    import torch

    threads = torch.get_num_threads()
    import silero_vad  # its import sets torch to one thread, process-wide

    torch.set_num_threads(threads)  # so the engines keep theirs
    return silero_vad


PAUSE_MS = 160  # the shortest pause a window may be cut at (faster-whisper's batched VAD setting)


def speech_chunks(wave: np.ndarray, options: VadOptions | None = None) -> list[tuple[int, int]]:
    """[(start, end)] in samples of the speech in a 16 kHz wave, in order, not overlapping."""
    return speech_and_pauses(wave, options)[0]


def speech_probabilities(wave: np.ndarray) -> np.ndarray:
    """[frames] float32: the chance that each 32 ms frame of a 16 kHz wave is speech."""
    if wave.size == 0:
        return np.zeros(0, np.float32)
    return _silero()[0].audio_forward(np.ascontiguousarray(wave, dtype=np.float32))


def chunks_of(probs: np.ndarray, num_samples: int, options: VadOptions | None = None, min_silence_ms=None):
    """Silero's rules over per-frame speech probabilities: [(start, end)] samples of speech
    (`min_silence_ms`: the pause that ends a chunk, the options' by default)."""
    o = options or VadOptions()
    if num_samples == 0:
        return []
    found = _silero()[1](
        probs,
        sampling_rate=SAMPLE_RATE,
        threshold=o.threshold,
        neg_threshold=o.neg_threshold,
        min_speech_duration_ms=o.min_speech_duration_ms,
        max_speech_duration_s=o.max_speech_duration_s,
        min_silence_duration_ms=o.min_silence_duration_ms if min_silence_ms is None else min_silence_ms,
        speech_pad_ms=o.speech_pad_ms,
        audio_length_samples=num_samples,
    )
    return [(int(c["start"]), min(int(c["end"]), num_samples)) for c in found]


def speech_and_pauses(wave: np.ndarray, options: VadOptions | None = None, probs: np.ndarray | None = None):
    """The speech chunks (as speech_chunks), and the pauses inside them: sample positions, in
    order, in the middle of every pause of at least PAUSE_MS, where a window may be cut without
    cutting a word. Both come from one pass of the model over the wave (or its `probs`)."""
    o = options or VadOptions()
    if wave.size == 0:
        return [], []
    probs = speech_probabilities(wave) if probs is None else probs
    speech = chunks_of(probs, wave.size, o)
    finer = chunks_of(probs, wave.size, o, min(PAUSE_MS, o.min_silence_duration_ms))
    pauses = [(a[1] + b[0]) // 2 for a, b in zip(finer, finer[1:])]
    return speech, _inside(pauses, speech)


def _inside(points: list[int], spans: list[tuple[int, int]]) -> list[int]:
    """The points (sorted) that fall strictly inside one of the spans (sorted, disjoint)."""
    starts = [s for s, _ in spans]
    kept = []
    for p in points:
        i = bisect.bisect_left(starts, p) - 1
        if i >= 0 and p < spans[i][1]:
            kept.append(p)
    return kept
