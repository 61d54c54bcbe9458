"""One engine per model per process, created on first use and shared by every caller.

Callers do not drive the Engine themselves: an `EngineLoop` owns it in a background thread.
`loop.generate(prompts, params)` may be called from any number of threads at once; their
requests join the same continuous batch, so concurrent users share engine steps.
"""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import Future, wait

from scriba.engine.engine import Engine

_loops: dict[tuple, "EngineLoop"] = {}
_lock = threading.Lock()


class EngineLoop:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.max_batch_size = 0  # the most sequences one step has run (for tests and logs)
        self._cond = threading.Condition()
        self._calls: list[tuple[list, list[str], list[Future]]] = []  # (processed requests, ids, futures)
        self._futures: dict[str, Future] = {}
        self._ids = itertools.count()
        self._thread = threading.Thread(target=self._run, name="scriba-engine", daemon=True)
        self._thread.start()

    def generate(self, prompts: list, params: list, progress=None) -> list:
        """Submit the requests and wait for all; a bad prompt raises here (none of them run)."""
        futures = self.submit(prompts, params)
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when="FIRST_COMPLETED")
            if progress is not None:
                progress.update(len(done))
        return [f.result() for f in futures]

    def submit(self, prompts: list, params: list) -> list[Future]:
        """Process the requests here, in the caller's thread (tokenizing, audio decoding and
        log-mel never stall the loop), and queue them: one Future per request, resolved with
        its RequestOutput; until then its `partial` attribute holds the latest unfinished output.
        A bad prompt raises here (none of them run)."""
        requests = []
        for i, (prompt, p) in enumerate(zip(prompts, params)):
            try:
                requests.append(self.engine.process(prompt, p))
            except (ValueError, TypeError) as e:
                raise type(e)(f"prompt {i}: {e}") from None
        ids = [f"loop-{next(self._ids)}" for _ in prompts]
        futures = [Future() for _ in prompts]
        with self._cond:
            self._calls.append((requests, ids, futures))
            self._cond.notify()
        return futures

    def _admit(self, requests, ids, futures) -> None:
        for i, (rid, request) in enumerate(zip(ids, requests)):
            try:
                self.engine.add_request(rid, request)
            except Exception as e:  # noqa: BLE001 - handed to the caller, the loop keeps serving
                self.engine.abort(ids[:i])
                error = type(e)(f"prompt {i}: {e}") if isinstance(e, (ValueError, TypeError)) else e
                for f in futures:
                    f.set_exception(error)
                return
        self._futures.update(zip(ids, futures))

    def _run(self) -> None:
        engine = self.engine
        while True:
            with self._cond:
                while not self._calls and not self._futures:
                    self._cond.wait()
                calls, self._calls = self._calls, []
            for call in calls:
                self._admit(*call)
            if not self._futures:
                continue
            try:
                outputs = engine.step()
            except Exception as e:  # noqa: BLE001 - a failed step fails its requests, not the loop
                for rid, f in list(self._futures.items()):
                    engine.abort(rid)
                    f.set_exception(e)
                self._futures.clear()
                continue
            running = sum(len(g.seqs) for g in engine.scheduler.running)
            self.max_batch_size = max(self.max_batch_size, running)
            for out in outputs:
                future = self._futures.get(out.request_id)
                if future is None:
                    continue
                if out.finished:
                    self._futures.pop(out.request_id).set_result(out)
                else:  # the latest partial output, for callers that show progress
                    future.partial = out


def check_options(config: dict, function) -> None:
    """Engine settings passed through `function`'s **kwargs must be EngineConfig fields; a
    misspelled option gets a one-line error with the nearest name among both."""
    import dataclasses
    import difflib
    import inspect

    from scriba.config import EngineConfig

    fields = {f.name for f in dataclasses.fields(EngineConfig)} - {"model"}
    for name in config:
        if name not in fields:
            own = [p for p in inspect.signature(function).parameters if p != "engine_config"]
            close = difflib.get_close_matches(name, sorted(fields | set(own)), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"unknown option {name!r}{hint}")


def get_loop(model: str | None = None, **config) -> EngineLoop:
    """The shared engine loop for `model` (None: the bundled Whisper tiny.en) and these settings."""
    key = (model, tuple(sorted(config.items())))
    with _lock:
        loop = _loops.get(key)
        if loop is None:
            loop = _loops[key] = EngineLoop(Engine(model, **config))
        return loop


def get_engine(model: str | None = None, **config) -> Engine:
    """The shared engine itself (drive it only through its loop while others may use it)."""
    return get_loop(model, **config).engine
