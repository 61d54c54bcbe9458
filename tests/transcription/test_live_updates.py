"""The live sessions' shared update slots: first come first served, never more at once than the
slots, a waiting session that must give up its place does so, and a bad slot count is refused."""

import threading
import time

import pytest

from scriba.transcription.live_updates import UpdateSlots


def test_slots_go_in_order_of_asking_and_never_more_at_once():
    slots, order, busy, most = UpdateSlots(2), [], [0], [0]
    lock = threading.Lock()

    def session(i: int):
        time.sleep(0.02 * i)  # ask in order
        assert slots.take(lambda: False)
        with lock:
            order.append(i)
            busy[0] += 1
            most[0] = max(most[0], busy[0])
        time.sleep(0.1)
        with lock:
            busy[0] -= 1
        slots.give()

    threads = [threading.Thread(target=session, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert order == list(range(6)) and most[0] == 2


def test_a_waiting_session_gives_up_its_place_and_the_next_gets_the_slot():
    slots = UpdateSlots(1)
    assert slots.take(lambda: False)
    stop = threading.Event()
    gave_up = []
    waiter = threading.Thread(target=lambda: gave_up.append(not slots.take(stop.is_set)))
    waiter.start()
    time.sleep(0.1)
    assert slots.waiting == 1
    stop.set()
    waiter.join(timeout=5)
    assert gave_up == [True] and slots.waiting == 0
    slots.give()
    assert slots.take(lambda: False)  # the slot came back


def test_no_slots_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        UpdateSlots(0)
