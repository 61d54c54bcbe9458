"""The models a server offers: only those it was started with (and `--allow-models`), so a
request cannot make it download arbitrary checkpoints. Each loads on first use (or at start,
`preload`), at most `max_loaded` stay (the least recently used idle one goes when another loads),
and each unloads after `ttl` seconds unused (-1: never; 0: right after its last request). An
unload waits for the requests using the model (runtime/loops.py's leases): none fails because
of it, and one that asks for the model while it unloads waits and loads it again."""

from __future__ import annotations

import threading

from scriba.app.server.errors import APIError
from scriba.models.offline import offered_models
from scriba.runtime.loops import close_if_idle, close_loops, get_loop, resident

BUNDLED_NAME = "tiny.en"  # the bundled default Whisper (model=None)
WHISPER_ALIAS = "whisper-1"  # OpenAI's name: the first served Whisper model


class ServedModels:
    def __init__(
        self, whisper: list, summarizer: str | None, allow=(), max_loaded: int = 2, ttl: float = -1,
        preload=(), **engine_config,
    ):
        self.whisper = [m or None for m in whisper] or offered_models()
        self.summarizer, self.max_loaded, self.ttl = summarizer, max_loaded, ttl
        self.max_pending: int | None = None  # per engine, set by the server (ServerSettings)
        self.engine_config = engine_config
        self.allowed = (
            {self.name(m) for m in self.whisper} | set(allow) | ({summarizer} if summarizer else set())
        )
        unknown = [m for m in preload if m not in self.allowed]
        if unknown:
            served = ", ".join(sorted(self.allowed))
            raise ValueError(f"--preload {unknown[0]!r} is not a served model; served: {served}")
        self.preload = [self._argument(m) for m in preload]
        self._started, self._stopped = False, threading.Event()

    @staticmethod
    def name(model: str | None) -> str:
        return BUNDLED_NAME if model is None else model

    def resolve(self, name: str | None, kind: str, task: str = "transcribe") -> str | None:
        """A request's `model` as transcribe()/summarize()'s argument; unknown -> 404. OpenAI's
        `whisper-1` is the first served Whisper model, and for a translation the first one
        that can translate (a multilingual one), when there is one."""
        if kind == "whisper" and (not name or name == WHISPER_ALIAS):
            if task == "translate":
                return next((m for m in self.whisper if self._multilingual(m)), self.whisper[0])
            return self.whisper[0]
        if kind == "summarizer" and not name:
            if self.summarizer is None:
                raise APIError(404, "this server has no summarizer (start it with --summarizer)", "model")
            return self.summarizer
        return self._argument(name, kind)

    def loop(self, model: str | None):
        """The shared engine loop for `model` (loaded now if it is not), counted as a use; beyond
        max_loaded, the least recently used idle models go."""
        loop = get_loop(model, **self.engine_config)
        loop.max_pending = self.max_pending
        loaded = resident()  # the least recently used first
        for old in loaded[: max(0, len(loaded) - self.max_loaded)]:
            if old.model != model:
                close_if_idle(old.model)
        return loop

    def loaded(self) -> list[str]:
        """The served models loaded now, the least recently used first."""
        return [self.name(r.model) for r in resident() if self.name(r.model) in self.allowed]

    def load(self, name: str) -> bool:
        """POST /api/ps/{name}: False if it was loaded already; an unserved name is a 404."""
        model = self._argument(name)
        if self.name(model) in self.loaded():
            return False
        self.loop(model)
        return True

    def unload(self, name: str) -> None:
        """DELETE /api/ps/{name}: waits for its requests; a 404 if not served or not loaded."""
        if name not in self.allowed or name not in self.loaded():
            raise APIError(404, f"model {name!r} is not loaded", "model", "model_not_found")
        close_loops(self._argument(name))

    def reap(self) -> list[str]:
        """Unload the models idle for `ttl` seconds or more (ttl -1: none); their names."""
        if self.ttl < 0:
            return []
        idle = [r.model for r in resident() if not r.leases and r.idle_seconds >= self.ttl]
        mine = [m for m in idle if self.name(m) in self.allowed]  # another app's engines stay
        return [self.name(m) for m in mine if close_if_idle(m, self.ttl)]

    def start(self) -> None:
        """Load the `preload` models (in the background) and unload idle ones every so often
        (once, however many apps serve these models)."""
        if self._started:
            return
        self._started = True
        for model in self.preload:
            threading.Thread(target=self.loop, args=(model,), daemon=True).start()
        if self.ttl >= 0:
            every = min(max(self.ttl / 4, 0.1), 5.0)
            threading.Thread(target=self._reaping, args=(every,), daemon=True, name="scriba-ttl").start()

    def stop(self) -> None:
        """Stop unloading idle models (the server stopping)."""
        self._stopped.set()

    def _reaping(self, every: float) -> None:
        while not self._stopped.wait(every):
            self.reap()

    def _argument(self, name: str, kind: str | None = None) -> str | None:
        """A served model's name as transcribe()'s `model` (an unserved one: a 404)."""
        if name not in self.allowed:
            served = ", ".join([WHISPER_ALIAS] * (kind == "whisper") + sorted(self.allowed))
            message = f"model {name!r} is not served here; served: {served}"
            raise APIError(404, message, "model", "model_not_found")
        return None if name == BUNDLED_NAME else name

    def _multilingual(self, model: str | None) -> bool:
        return self.loop(model).engine.model.tokens.is_multilingual

    def listing(self) -> list[dict]:
        """OpenAI's model list, each with whether it is loaded now (`whisper-1`: the first Whisper)."""
        loaded = set(self.loaded())
        first = self.name(self.whisper[0])
        names = [(WHISPER_ALIAS, first)] + [(n, n) for n in sorted(self.allowed)]
        return [{"id": n, "object": "model", "created": 0, "owned_by": "scriba", "loaded": m in loaded}
                for n, m in names]
