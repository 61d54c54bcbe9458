"""A silent window's encoder values (cached_padding.py) kept on disk, so that an engine
starts without encoding one: `$SCRIBA_CACHE/silent_windows/KEY.npz`, KEY a hash of the weights
that make them, the silence's level and OpenVINO's version. Encoding it costs a probe graph
compiled and run (tiny.en on 2 AVX2 cores: ~0.7 s of an engine's start); reading it back, tens of
milliseconds (tiny.en 37 MB, base 74 MB, float32: the padded graph's exactness is tested at 1e-5).
"""

from __future__ import annotations

import hashlib
import logging
import os

import numpy as np
import torch

from scriba.models.offline import cache_root
from scriba.models.openvino_encoder.cached_padding import SILENCE_LEVEL, SilentWindow

log = logging.getLogger(__name__)


def silent_window_key(openvino_version: str, modules: list[torch.nn.Module]) -> str:
    """A hash of every parameter of `modules` (the encoder, and the decoder's cross K/V
    projections when the graph makes them), with the silence's level and OpenVINO's version."""
    digest = hashlib.blake2b(f"{openvino_version}|{SILENCE_LEVEL}".encode(), digest_size=16)
    for module in modules:
        for name, tensor in module.state_dict().items():
            digest.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode())
            digest.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()


def _path(key: str) -> str:
    return os.path.join(cache_root(), "silent_windows", f"{key}.npz")


def load_silent_window(key: str) -> SilentWindow | None:
    """The window stored under `key`, or None (never stored, or unreadable)."""
    try:
        with np.load(_path(key)) as stored:
            layers, outputs = int(stored["layers"]), int(stored["outputs"])
            kv = [(stored[f"k{i}"], stored[f"v{i}"]) for i in range(layers)]
            return SilentWindow(kv, [stored[f"out{i}"] for i in range(outputs)])
    except (OSError, KeyError, ValueError):
        return None


def save_silent_window(key: str, window: SilentWindow) -> None:
    """Write the window whole to a temporary name, then rename it (two engines starting at once
    leave one complete file). A read-only cache only costs the next engine an encoding."""
    arrays = {"layers": np.array(len(window.layer_kv)), "outputs": np.array(len(window.outputs))}
    for i, (k, v) in enumerate(window.layer_kv):
        arrays[f"k{i}"], arrays[f"v{i}"] = k, v
    arrays.update({f"out{i}": out for i, out in enumerate(window.outputs)})
    path = _path(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        scratch = f"{path}.{os.getpid()}.npz"
        np.savez(scratch, **arrays)
        os.replace(scratch, path)
    except OSError as e:
        log.info("silent window not stored: %s", e)
