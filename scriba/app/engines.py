"""One engine per model per process, created on first use and shared by every caller."""

from __future__ import annotations

import threading

from scriba.engine.engine import Engine

_engines: dict[tuple, Engine] = {}
_lock = threading.Lock()


def get_engine(model: str | None = None, **config) -> Engine:
    """The shared engine for `model` (None: the bundled Whisper tiny.en) and these settings."""
    key = (model, tuple(sorted(config.items())))
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = Engine(model, **config)
        return engine
