"""How many live sessions re-transcribe their turn's tail at once, process-wide.

A partial update (live.py's re-transcription of a turn's unconfirmed tail) is the work that
grows with the number of sessions: each one is a whole encoder window and a decode. Left
unbounded, sixteen sessions keep sixteen updates in the engine at every moment, and a turn that
just ended waits behind their encoders and decodes for its final text. The sessions instead take
turns for a few slots, first come first served: under load each session's updates come less often
(its cadence adapts to the load) while the engine keeps room for the turns that end, which go
ahead of every update in its queue (SamplingParams.priority).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

# Updates under way at once. On 2 cores the engine's batches gain little past a few windows; fewer
# slots leave more of each step to the turns that end.
UPDATE_SLOTS = 2
POLL_SECONDS = 0.05  # how soon a waiting session sees that it should give up its place


class UpdateSlots:
    """`take(give_up)` waits for a slot in order of asking (False when `give_up()` came true
    first); `give()` hands it back."""

    def __init__(self, slots: int = UPDATE_SLOTS):
        if slots < 1:
            raise ValueError(f"update slots must be at least 1, got {slots}")
        self._cond = threading.Condition()
        self._free = slots
        self._queue: deque[object] = deque()

    def take(self, give_up: Callable[[], bool]) -> bool:
        me = object()
        with self._cond:
            self._queue.append(me)
            try:
                while self._queue[0] is not me or not self._free:
                    if give_up():
                        return False
                    self._cond.wait(POLL_SECONDS)
                self._free -= 1
                return True
            finally:
                self._queue.remove(me)
                self._cond.notify_all()

    def give(self) -> None:
        with self._cond:
            self._free += 1
            self._cond.notify_all()

    @property
    def waiting(self) -> int:
        return len(self._queue)


SHARED = UpdateSlots()  # every live session of this process
