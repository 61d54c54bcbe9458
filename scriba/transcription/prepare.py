"""What a first run does once on a machine, done ahead of use: `scriba prepare`.

A first transcription on a fresh machine compiles the CPU path's numba kernels for this CPU
(about 20 s on two cores; numba's cache keeps them), and a model's first load times the
encoder's precisions and compiles its OpenVINO graph (kept under $SCRIBA_CACHE). The README's
install runs `scriba prepare` once, so that the first `scriba transcribe` starts warm; a run
that finds a kernel not compiled still compiles it, and says so (kernels/compile_notice.py).

Each model is loaded and transcribes two seconds of a generated tone: every kernel of its
decoding is compiled or loaded on the way (the engine's preload, engine/kernel_preload.py, then
a first step of each); the kernels that only word timestamps and the VAD call are compiled from
inputs of their callers' types.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from scriba.media.load import SAMPLE_RATE


def prepare(models: Sequence[str] | None = None, say: Callable[[str], None] = print) -> None:
    """Compile and cache what a first run of each of `models` (default: every offline model
    installed) would, reporting each step through `say`."""
    from scriba.models.offline import installed_offline_models

    started = time.perf_counter()
    say("compiling the CPU kernels for this machine and timing each model's encoder (once)")
    for model in models or installed_offline_models():
        at = time.perf_counter()
        _first_transcription(model)
        say(f"  {model}: ready ({time.perf_counter() - at:.1f} s)")
    at = time.perf_counter()
    _word_and_vad_kernels()
    say(f"  word timestamps and VAD kernels: ready ({time.perf_counter() - at:.1f} s)")
    say(f"prepared in {time.perf_counter() - started:.1f} s: numba's cache and the Scriba cache keep it")


def _first_transcription(model: str) -> None:
    """The model loaded (its encoder timed and compiled), its kernels preloaded, then a short
    transcription: the first step of each kernel."""
    from scriba.runtime.loops import get_loop
    from scriba.transcription.transcribe import transcribe

    get_loop(model).engine.kernels_loading.join()
    transcribe(_tone(), model=model, temperature=0.0)


def _word_and_vad_kernels() -> None:
    """The word alignment's and the VAD's numba kernels, for the types their callers pass
    (transcription/words.py: float32 rows, a float64 cost; silero_batched.py)."""
    import torch

    from scriba.transcription.vad import speech_probabilities
    from scriba.transcription.words import dtw, median_filter

    median_filter(torch.zeros(2, 3, 16))
    dtw(np.zeros((2, 3)))
    speech_probabilities(_tone())


def _tone(seconds: float = 2.0) -> np.ndarray:
    """[samples] float32: a quiet 440 Hz tone (any audio makes the model run its steps)."""
    t = np.arange(int(seconds * SAMPLE_RATE), dtype=np.float32) / SAMPLE_RATE
    return (0.1 * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32)
