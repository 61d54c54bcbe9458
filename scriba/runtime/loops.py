"""One engine per model per process, created on first use and shared by every caller.

Callers do not drive the Engine themselves: an `EngineLoop` (engine_loop.py) owns it in a
background thread. `loop.generate(prompts, params)` may be called from any number of threads at
once; their requests join the same continuous batch, so concurrent users share engine steps.

A caller that uses a loop over time (a transcription submitting window after window) holds a
lease on it (`acquire_loop` / `release_loop`): unloading a model (`close_loops`) waits for its
leases to end, and a caller that asks for the model meanwhile waits, then loads it again.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass

from scriba.engine.engine import Engine
from scriba.engine.host_heap import give_back_free_memory
from scriba.models.offline import DEFAULT
from scriba.runtime.engine_loop import EngineBusy, EngineClosed, EngineLoop

__all__ = [
    "EngineBusy",
    "EngineClosed",
    "EngineLoop",
    "check_options",
    "get_loop",
    "get_engine",
    "acquire_loop",
    "release_loop",
    "close_loops",
    "close_if_idle",
    "unload",
    "loaded_models",
    "Resident",
    "resident",
    "LoopStats",
    "stats",
]

_loops: dict[tuple, "EngineLoop"] = {}
_lock = threading.Lock()
_changed = threading.Condition(_lock)  # a lease ended, or an unload finished
_leases: dict[tuple, int] = {}  # callers holding each loop
_last_used: dict[tuple, float] = {}  # time.monotonic() of each loop's latest use
_grown: dict[tuple, int] = {}  # the process' resident bytes gained while each loop's engine loaded
_closing: set = set()  # models being unloaded: their callers wait
_loading: set = set()  # loops being created: their other callers wait
LOADS: dict[str | None, int] = {}  # engines created, per model, since the process began
UNLOADS: dict[str | None, int] = {}


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
    options were spelled. Loaded here the first time, and again after an unload."""
    return _open(model, options, lease=False)


def acquire_loop(model: str | None = None, **options) -> EngineLoop:
    """get_loop(), leased: the model is not unloaded until release_loop(loop)."""
    return _open(model, options, lease=True)


def release_loop(loop: EngineLoop) -> None:
    with _changed:
        _leases[loop.key] = max(0, _leases.get(loop.key, 0) - 1)
        _last_used[loop.key] = time.monotonic()
        _changed.notify_all()


def _open(model, options: dict, lease: bool) -> EngineLoop:
    """The loop of (model, options), loaded outside the lock: the other models keep serving."""
    model = None if model == DEFAULT else model
    key = _resolved_key(model, tuple(sorted(options.items())))
    with _changed:
        while model in _closing or key in _loading:  # (a lease holder never asks again: no deadlock)
            _changed.wait()
        loop = _loops.get(key)
        if loop is not None:
            return _used(key, lease)
        _loading.add(key)
    loop, before = None, _resident_bytes()
    try:
        loop = EngineLoop(Engine(model, **options))
    finally:
        with _changed:
            _loading.discard(key)
            if loop is not None:
                _loops[key], loop.key, _grown[key] = loop, key, max(0, _resident_bytes() - before)
                LOADS[model] = LOADS.get(model, 0) + 1
            _changed.notify_all()
    with _changed:
        return _used(key, lease)


def _used(key: tuple, lease: bool) -> EngineLoop:
    _last_used[key] = time.monotonic()
    _leases[key] = _leases.get(key, 0) + lease
    return _loops[key]


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
    """Unload `model`: once its leases end, stop and forget every loop of it (its memory goes
    with it); callers asking for it meanwhile wait, then load it again. Returns how many."""
    return _close(model, None)


def unload(model: str | None = None) -> bool:
    """Free a loaded model (None or "tiny.en": the bundled one): its engine loop stopped, its
    weights, KV pool and threads freed, once the transcriptions using it end (they are never
    cut short); the next call that needs it loads it again. False if it was not loaded."""
    return close_loops(model) > 0


def loaded_models() -> list[str]:
    """The models loaded in this process, the least recently used first ("tiny.en": the bundled)."""
    return [DEFAULT if r.model is None else r.model for r in resident()]


def close_if_idle(model: str | None, idle_seconds: float = 0.0) -> bool:
    """Unload `model` only if none of its loops is leased or used in the last `idle_seconds`
    (checked and begun at once: a caller never waits on it)."""
    return _close(model, idle_seconds) > 0


def _close(model: str | None, idle_for: float | None) -> int:
    model = None if model == DEFAULT else model
    with _changed:
        keys, now = [k for k in _loops if k[0] == model], time.monotonic()
        if model in _closing or (idle_for is not None and not keys):  # another caller unloads it
            return 0
        if idle_for is not None and any(_leases.get(k) or now - _last_used[k] < idle_for for k in keys):
            return 0
        _closing.add(model)
        while any(_leases.get(k) for k in _loops if k[0] == model):
            _changed.wait()
        loops = [_forget(k) for k in [k for k in _loops if k[0] == model]]
    try:
        for loop in loops:
            loop.close()
    finally:
        with _changed:
            _closing.discard(model)
            UNLOADS[model] = UNLOADS.get(model, 0) + len(loops)
            _changed.notify_all()
    give_back_free_memory()
    return len(loops)


def _forget(key: tuple) -> EngineLoop:
    _leases.pop(key, None), _last_used.pop(key, None), _grown.pop(key, None)
    return _loops.pop(key)


@dataclass(frozen=True)
class Resident:
    """A loaded model: its callers now, seconds since its last use, the bytes it added."""

    model: str | None  # None: the bundled tiny.en
    leases: int
    idle_seconds: float
    grown_bytes: int


def resident() -> list[Resident]:
    """Every loaded model (its loops summed), the least recently used first."""
    now, found = time.monotonic(), {}
    with _lock:
        for key in sorted(_loops, key=lambda k: _last_used.get(k, now)):
            idle, was = now - _last_used.get(key, now), found.get(key[0])
            if was is not None:
                idle = min(idle, was.idle_seconds)
            leases, grown = _leases.get(key, 0) + (was.leases if was else 0), _grown.get(key, 0)
            found[key[0]] = Resident(key[0], leases, idle, grown + (was.grown_bytes if was else 0))
    return list(found.values())


def _resident_bytes() -> int:
    """The process' resident set (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


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
