"""Another speaker embedding, when the network is there: the `speaker_model` option.

None is the bundled voice encoder (voice_encoder.py). A name is a SpeechBrain speaker model on
the Hugging Face hub (for example "speechbrain/spkrec-ecapa-voxceleb", ECAPA-TDNN trained on
VoxCeleb, Apache-2.0), downloaded and run by the `speechbrain` package. A callable is any
encoder: pieces of 16 kHz samples [n, samples] float32 -> [n, d] embeddings (normalized here).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

Encoder = Callable[[np.ndarray], np.ndarray]


def speaker_encoder(model) -> Encoder | None:
    """The encoder the option names (None: the bundled one); a bad option is a one-line error."""
    if model is None or callable(model):
        return model
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"speaker_model must be a hub model's name or a function, got {model!r}")
    return _speechbrain(model.strip())


@functools.lru_cache(maxsize=2)
def _speechbrain(name: str) -> Encoder:
    try:
        from speechbrain.inference.speaker import EncoderClassifier
    except ImportError:
        raise ValueError(f"speaker_model {name!r} needs SpeechBrain: pip install speechbrain") from None
    import torch

    classifier = EncoderClassifier.from_hparams(source=name, run_opts={"device": "cpu"})

    def encode(pieces: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return classifier.encode_batch(torch.from_numpy(pieces)).reshape(len(pieces), -1).numpy()

    return encode


def unit(embeddings: np.ndarray) -> np.ndarray:
    """[n, d] float32 rows of length 1."""
    embeddings = np.asarray(embeddings, dtype=np.float32).reshape(len(embeddings), -1)
    return embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-8)
