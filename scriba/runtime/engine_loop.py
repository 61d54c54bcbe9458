"""The loop that drives one shared Engine in a background thread, for any number of callers.

Callers `submit` requests (prepared in their own thread) and get Futures; the loop admits
them into the running batch and steps. It is built not to lose anyone:
- a request that fails, fails alone: when a step raises, its requests are aborted and run again
  in halves, apart from the rest, until the one that fails is found (it gets the error);
- the loop itself cannot die silently: anything unexpected fails the pending futures with the
  error and the loop goes on;
- `cancel` aborts a caller's requests and frees their KV blocks at the next step;
- `max_pending` bounds the requests queued or running: past it `submit` raises `EngineBusy`;
- fairness: a caller's requests are admitted to the engine a few at a time, taking turns with
  the other callers, so a short request is not queued behind all of a long file's windows; a
  request of a lower `priority` goes first (a live turn's final text before partial updates);
- memory stays flat over a long run: the C heap's free pages go back to the system when the
  loop goes idle and every `GIVE_BACK_EVERY` seconds while it is busy (engine/host_heap.py).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, wait

from scriba.engine.host_heap import give_back_free_memory

log = logging.getLogger("scriba")
ADMIT_AHEAD = 16  # requests waiting in the engine beyond the running batch; the rest wait here, in turn
GIVE_BACK_EVERY = 30.0  # seconds between handing free heap pages back while busy (a few ms each)
GIVE_BACK_IDLE = 1.0  # ... and when idle, at most this often (one request after another stays fast)


class EngineBusy(RuntimeError):
    """The loop holds `max_pending` requests already: try again later."""


class EngineClosed(RuntimeError):
    """The loop was closed (its model evicted or the server stopping): ask again."""


class RequestFuture(Future):
    """One request's Future: its id in the loop, and until it is done its latest unfinished
    output (`partial`, for callers that show progress)."""

    def __init__(self, request_id: str):
        super().__init__()
        self.request_id = request_id
        self.partial = None


class EngineLoop:
    def __init__(self, engine, max_pending: int | None = None):
        self.engine, self.max_pending = engine, max_pending
        self.max_batch_size = 0  # the most sequences one step has run (for tests and logs)
        self.generated_tokens = 0  # by finished requests (the server's metrics)
        self._cond = threading.Condition()
        self._calls: list[tuple[list, list[str], list[Future]]] = []  # (prepared requests, ids, futures)
        self._queue: deque[list[tuple[str, object, Future]]] = deque()  # per call: not admitted yet
        self._futures: dict[str, Future] = {}  # admitted, not finished
        self._requests: dict[str, object] = {}  # their prepared requests, to run again
        self._suspects: list[list[str]] = []  # groups to run apart after a failed step
        self._trial: set[str] | None = None  # the group running apart now
        self._cancels: list[str] = []
        self._closed = False
        self._ids = itertools.count()
        self._thread = threading.Thread(target=self._run, name="scriba-engine", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        """Requests queued or running."""
        calls, queue = list(self._calls), list(self._queue)
        return len(self._futures) + sum(len(ids) for _, ids, _ in calls) + sum(map(len, queue))

    def generate(self, prompts: list, params: list) -> list:
        """Submit the requests and wait for all; a bad prompt raises here (none of them run)."""
        futures = self.submit(prompts, params)
        wait(futures)
        return [f.result() for f in futures]

    def submit(self, prompts: list, params: list) -> list[RequestFuture]:
        """Process the requests here, in the caller's thread (tokenizing, audio decoding and
        log-mel never stall the loop), and queue them: one Future per request, resolved with
        its RequestOutput; until then its `partial` attribute holds the latest unfinished output.
        A bad prompt raises here (none of them run); a full loop raises EngineBusy."""
        if self._closed:
            raise EngineClosed("the engine loop was closed")
        if self.max_pending is not None and self.pending + len(prompts) > self.max_pending:
            raise EngineBusy(f"the engine has {self.pending} requests pending (at most {self.max_pending})")
        requests = []
        for i, (prompt, p) in enumerate(zip(prompts, params)):
            try:
                requests.append(self.engine.prepare(prompt, p))
            except (ValueError, TypeError) as e:
                raise type(e)(f"prompt {i}: {e}") from None
        ids = [f"loop-{next(self._ids)}" for _ in prompts]
        futures = [RequestFuture(rid) for rid in ids]
        with self._cond:
            self._calls.append((requests, ids, futures))
            self._cond.notify()
        return futures

    def cancel(self, futures: list[Future]) -> None:
        """Stop these requests (a caller went away): aborted, their blocks freed, at once."""
        with self._cond:
            self._cancels += [f.request_id for f in futures if not f.done()]
            self._cond.notify()

    def close(self) -> None:
        """Stop the loop; requests still pending get an error."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        given_back = time.monotonic()
        while True:
            since = time.monotonic() - given_back
            if since > GIVE_BACK_EVERY or (since > GIVE_BACK_IDLE and not self._has_work()):
                give_back_free_memory()
                given_back = time.monotonic()
            with self._cond:
                while not self._has_work():
                    self._cond.wait()
                if self._closed:
                    break
                calls, cancels = self._take_work()
            try:
                self._iterate(calls, cancels)
            except Exception as e:  # noqa: BLE001 - the loop must live: fail what is pending, go on
                log.exception("engine loop: unexpected error; failing the pending requests")
                self._fail_all(e)
        self._fail_all(EngineClosed("the engine loop was closed"))

    def _has_work(self) -> bool:
        return bool(self._calls or self._queue or self._futures or self._cancels or self._closed)

    def _take_work(self) -> tuple[list, list[str]]:
        """Under the lock: new calls and cancellations."""
        cancels, self._cancels = self._cancels, []
        calls, self._calls = self._calls, []
        return calls, cancels

    def _iterate(self, calls: list, cancels: list[str]) -> None:
        self._queue.extend([list(zip(ids, requests, futures)) for requests, ids, futures in calls])
        self._apply_cancels(cancels)
        if self._trial is None and self._suspects:
            group = self._suspects.pop()
            self._trial = set(group)
            for rid in group:
                self.engine.add_request(rid, self._requests[rid])
        elif self._trial is None:
            self._admit_in_turn()
        if not self._futures:
            return
        try:
            outputs = self.engine.step()
        except Exception as e:  # noqa: BLE001 - find the request that fails; the others run again
            self._isolate(e)
            return
        self._deliver(outputs)

    def _admit_in_turn(self) -> None:
        """Callers take turns, one request each, while the engine has few waiting; the call whose
        next request has the lowest priority (SamplingParams.priority) goes first, and a request
        of a lower priority than every one waiting in the engine is admitted at once."""
        waiting = self.engine.scheduler.waiting
        while self._queue:
            call = min(self._queue, key=lambda c: c[0][1].params.priority)  # the first of the lowest
            rid, request, future = call[0]
            lowest = min((g.params.priority for g in waiting), default=request.params.priority + 1)
            if len(waiting) >= ADMIT_AHEAD and request.params.priority >= lowest:
                break
            self._queue.remove(call)
            call.pop(0)
            if call:
                self._queue.append(call)
            if future.cancelled():
                continue
            try:
                self.engine.add_request(rid, request)
            except Exception as e:  # noqa: BLE001 - this request fails; the loop keeps serving
                future.set_exception(e)
                continue
            self._futures[rid], self._requests[rid] = future, request

    def _apply_cancels(self, cancels: list[str]) -> None:
        gone = set(cancels)
        for call in self._queue:
            for rid, _, future in call:
                if rid in gone:
                    future.cancel()
        self._queue = deque(c for c in ([x for x in call if x[0] not in gone] for call in self._queue) if c)
        for rid in cancels:
            future = self._futures.pop(rid, None)
            self._requests.pop(rid, None)
            self.engine.abort(rid)
            for group in self._suspects:
                if rid in group:
                    group.remove(rid)
            if self._trial is not None:
                self._trial.discard(rid)
            if future is not None:
                future.cancel()
        self._suspects = [g for g in self._suspects if g]
        if self._trial is not None and not self._trial:
            self._trial = None

    def _isolate(self, error: Exception) -> None:
        """A step raised: abort its requests; one alone gets the error, more run again in halves."""
        group = [rid for rid in self._futures if self._trial is None or rid in self._trial]
        for rid in group:
            self.engine.abort(rid)
        self._trial = None
        if len(group) == 1:
            rid = group[0]
            log.warning("engine loop: request %s failed: %s", rid, error)
            self._requests.pop(rid, None)
            self._futures.pop(rid).set_exception(error)
            return
        half = len(group) // 2
        self._suspects += [group[half:], group[:half]]

    def _deliver(self, outputs) -> None:
        engine = self.engine
        running = sum(len(g.seqs) for g in engine.scheduler.running)
        self.max_batch_size = max(self.max_batch_size, running)
        for out in outputs:
            future = self._futures.get(out.request_id)
            if future is None:
                continue
            if out.finished:
                self._futures.pop(out.request_id)
                self._requests.pop(out.request_id, None)
                if self._trial is not None:
                    self._trial.discard(out.request_id)
                self.generated_tokens += sum(len(c.token_ids) for c in out.outputs)
                future.set_result(out)
            else:  # the latest partial output, for callers that show progress
                future.partial = out
        if self._trial is not None and not self._trial:
            self._trial = None

    def _fail_all(self, error: Exception) -> None:
        with self._cond:
            calls, self._calls = self._calls, []
        for _, _, futures in calls:
            for f in futures:
                f.set_exception(error)
        for call in self._queue:
            for _, _, f in call:
                if not f.done():
                    f.set_exception(error)
        self._queue.clear()
        for rid, f in list(self._futures.items()):
            with contextlib.suppress(Exception):  # the engine may be what broke; the callers hear anyway
                self.engine.abort(rid)
            f.set_exception(error)
        self._futures.clear()
        self._requests.clear()
        self._suspects, self._trial = [], None
