"""The speaker embedding: Resemblyzer's voice encoder (Apache-2.0), its weights read from the
`resemblyzer` package's own file and run by Scriba's module.

The network is a GE2E speaker encoder: three LSTM layers of 256 over 40-channel mel power frames
(25 ms windows every 10 ms), the last layer's final state through a linear layer, a ReLU and an
L2 norm: a 256-d unit vector whose cosine with another's says whether one voice spoke both. It was
trained on 1.6 s pieces. Its package is not imported: its `__init__` pulls webrtcvad and librosa
(and webrtcvad needs pkg_resources, gone from recent setuptools); only `pretrained.pt` is read.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading

import numpy as np

SAMPLE_RATE = 16_000
FRAME_SAMPLES = 160  # 10 ms between mel frames
PIECE_FRAMES = 160  # the 1.6 s pieces the encoder was trained on
MEL_CHANNELS = 40
EMBEDDING_SIZE = 256
TARGET_DBFS = -30.0  # speech quieter than this is raised to it (the encoder's training level)

_lock = threading.Lock()


class MissingSpeakerModel(RuntimeError):
    """The speaker model's package is not installed."""


def weights_path() -> str:
    """The path of `resemblyzer/pretrained.pt`, found without importing the package."""
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise MissingSpeakerModel(
            "diarization needs the speaker model: pip install 'scriba[speakers]' (Resemblyzer's weights)"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], "pretrained.pt")


@functools.lru_cache(maxsize=1)
def voice_encoder():
    """The encoder with Resemblyzer's weights, in eval mode (loaded once per process)."""
    import torch

    with _lock:
        module = _build(torch)
        state = torch.load(weights_path(), map_location="cpu", weights_only=True)["model_state"]
        module.load_state_dict({k: v for k, v in state.items() if not k.startswith("similarity_")})
        return module.eval()


def _build(torch):
    class VoiceEncoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(MEL_CHANNELS, 256, 3, batch_first=True)
            self.linear = torch.nn.Linear(256, EMBEDDING_SIZE)

        def forward(self, mels):
            """mels [pieces, frames, 40] float32 -> [pieces, 256] unit vectors."""
            _, (hidden, _) = self.lstm(mels)
            raw = torch.relu(self.linear(hidden[-1])).float()  # normed in float32 under autocast
            return raw / raw.norm(dim=1, keepdim=True).clamp(min=1e-8)

    return VoiceEncoder()


def mel_frames(wave: np.ndarray) -> np.ndarray:
    """16 kHz samples -> [frames, 40] float32 mel power, one frame per 10 ms (frame i centred on
    sample 160 i), as librosa's melspectrogram computes it for the encoder (Slaney filters, a
    periodic Hann window, zero padding at the ends)."""
    import torch

    from scriba.whisper.log_mel import N_FFT, mel_filters

    samples = torch.from_numpy(np.ascontiguousarray(wave, dtype=np.float32))
    if samples.numel() == 0:
        return np.zeros((0, MEL_CHANNELS), np.float32)
    padded = torch.nn.functional.pad(samples[None], (N_FFT // 2, N_FFT // 2))[0]
    stft = torch.stft(padded, N_FFT, FRAME_SAMPLES, window=torch.hann_window(N_FFT), center=False,
                      return_complex=True)
    power = stft.real.square() + stft.imag.square()  # [201, frames]
    filters = torch.from_numpy(mel_filters(MEL_CHANNELS)).to(torch.float32)  # [201, 40]
    return (power.T @ filters).numpy()


def level_gain(wave: np.ndarray) -> float:
    """The factor that raises the wave's level to TARGET_DBFS (never lowers it)."""
    flat = np.ascontiguousarray(wave, dtype=np.float32).ravel()
    rms = float(np.sqrt(np.dot(flat, flat) / flat.size)) if flat.size else 0.0
    if rms <= 0:
        return 1.0
    return max(1.0, 10 ** ((TARGET_DBFS - 20 * np.log10(rms)) / 20))


def embed(pieces: np.ndarray, batch: int = 256) -> np.ndarray:
    """Mel pieces [n, frames, 40] -> [n, 256] float32 unit vectors."""
    import torch

    from scriba.kernels.cpu_features import native_bfloat16

    model, out = voice_encoder(), []
    # bfloat16 where the CPU multiplies it natively: twice as fast, cosines within 0.005
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=native_bfloat16()):
        for i in range(0, len(pieces), batch):
            out.append(model(torch.from_numpy(np.ascontiguousarray(pieces[i : i + batch]))).float().numpy())
    return np.concatenate(out) if out else np.zeros((0, EMBEDDING_SIZE), np.float32)
