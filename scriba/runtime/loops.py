"""One engine per model per process, created on first use and shared by every caller.

Callers do not drive the Engine themselves: an `EngineLoop` (engine_loop.py) owns it in a
background thread. `loop.generate(prompts, params)` may be called from any number of threads at
once; their requests join the same continuous batch, so concurrent users share engine steps.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from scriba.engine.engine import Engine
from scriba.models.offline import DEFAULT
from scriba.runtime.engine_loop import EngineBusy, EngineClosed, EngineLoop

__all__ = [
    "EngineBusy",
    "EngineClosed",
    "EngineLoop",
    "check_options",
    "get_loop",
    "get_engine",
    "close_loops",
    "LoopStats",
    "stats",
]

_loops: dict[tuple, "EngineLoop"] = {}
_lock = threading.Lock()


def engine_fields() -> set[str]:
    """The EngineConfig options a caller may pass along (the model is named apart)."""
    from scriba.config import OPTIONS

    return set(OPTIONS) - {"model"}


def check_options(config: dict, function) -> None:
    """Engine settings passed through `function`'s **kwargs must be EngineConfig options."""
    import inspect

    from scriba.config import unknown_option

    fields = engine_fields()
    for name in config:
        if name not in fields:
            own = {p for p in inspect.signature(function).parameters if p != "engine_config"}
            raise unknown_option(name, fields | own)


def get_loop(model: str | None = None, **options) -> EngineLoop:
    """The shared engine loop for `model` (None or "tiny.en": the bundled Whisper tiny.en) and
    these options: one loop per configuration they resolve to (config.resolve_config), however the
    options were spelled."""
    model = None if model == DEFAULT else model
    key = _resolved_key(model, tuple(sorted(options.items())))
    with _lock:
        loop = _loops.get(key)
        if loop is None:
            loop = _loops[key] = EngineLoop(Engine(model, **options))
        return loop


@functools.lru_cache(maxsize=256)
def _resolved_key(model: str | None, options: tuple) -> tuple:
    """(model, the resolved configuration's settings), found once per spelling of the options: a
    hub model's profile reads its config, which should not happen on every transcribe() call."""
    from scriba.config import resolve_config

    return model, tuple(sorted(resolve_config(model, **dict(options)).options().items()))


def get_engine(model: str | None = None, **config) -> Engine:
    """The shared engine itself (drive it only through its loop while others may use it)."""
    return get_loop(model, **config).engine


def close_loops(model: str | None) -> int:
    """Stop and forget every shared loop of `model` (its memory goes with it); returns how many."""
    with _lock:
        keys = [k for k in _loops if k[0] == model]
        loops = [_loops.pop(k) for k in keys]
    for loop in loops:
        loop.close()
    return len(loops)


@dataclass(frozen=True)
class LoopStats:
    """One shared loop's figures at the moment it was read (what the server's metrics show)."""

    model: str | None  # None: the bundled tiny.en
    pending: int  # requests queued or running
    running_sequences: int
    kv_blocks_used: int
    kv_blocks_free: int
    generated_tokens: int


def stats() -> list[LoopStats]:
    """Every shared loop's figures, read now."""
    with _lock:
        loops = list(_loops.items())
    out = []
    for key, loop in loops:
        blocks = loop.engine.block_manager
        free = blocks.num_free()
        running = sum(len(g.seqs) for g in loop.engine.scheduler.running)
        out.append(
            LoopStats(key[0], loop.pending, running, blocks.num_total() - free, free, loop.generated_tokens)
        )
    return out
