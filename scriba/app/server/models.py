"""The models a server offers: only those it was started with (and `--allow-models`), so a
request cannot make it download arbitrary checkpoints; engines kept for the most recently
used `max_loaded` models, the least recently used evicted."""

from __future__ import annotations

import threading
from collections import OrderedDict

from scriba.app.server.errors import APIError
from scriba.models.offline import offered_models
from scriba.runtime.loops import close_loops, get_loop

BUNDLED_NAME = "tiny.en"  # the bundled default Whisper (model=None)
WHISPER_ALIAS = "whisper-1"  # OpenAI's name: the first served Whisper model


class ServedModels:
    def __init__(self, whisper: list, summarizer: str | None, allow=(), max_loaded: int = 2, **engine_config):
        self.whisper = [m or None for m in whisper] or offered_models()
        self.summarizer, self.max_loaded = summarizer, max_loaded
        self.max_pending: int | None = None  # per engine, set by the server (ServerSettings)
        self.engine_config = engine_config
        self.allowed = (
            {self.name(m) for m in self.whisper} | set(allow) | ({summarizer} if summarizer else set())
        )
        self._recent: OrderedDict[str | None, None] = OrderedDict()
        self._lock = threading.Lock()

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
        if name not in self.allowed:
            served = ", ".join([WHISPER_ALIAS] * (kind == "whisper") + sorted(self.allowed))
            raise APIError(
                404, f"model {name!r} is not served here; served: {served}", "model", "model_not_found"
            )
        return None if name == BUNDLED_NAME else name

    def loop(self, model: str | None):
        """The shared engine loop for `model`, evicting the least recently used beyond max_loaded."""
        with self._lock:
            self._recent.pop(model, None)
            self._recent[model] = None
            evict = list(self._recent)[: max(0, len(self._recent) - self.max_loaded)]
            for old in evict:
                self._recent.pop(old)
        for old in evict:
            close_loops(old)
        loop = get_loop(model, **self.engine_config)
        loop.max_pending = self.max_pending
        return loop

    def _multilingual(self, model: str | None) -> bool:
        return self.loop(model).engine.model.tokens.is_multilingual

    def listing(self) -> list[dict]:
        names = [WHISPER_ALIAS] + sorted(self.allowed)
        return [{"id": n, "object": "model", "created": 0, "owned_by": "scriba"} for n in names]
