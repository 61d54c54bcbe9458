"""The shared loop does not lose anyone: a request whose step fails, fails alone (the others
finish with the same tokens as without it); a cancelled request frees its blocks at once; a full
loop says so; the loop lives on after all of it."""

import threading
import time

import pytest
from tiny_whisper import synthetic_clip

from scriba import Engine, SamplingParams
from scriba.runtime.engine_loop import EngineBusy, EngineLoop


@pytest.fixture
def loop(tiny_whispers):
    loop = EngineLoop(Engine(tiny_whispers["english"][0], dtype="float32", num_kv_blocks=600))
    yield loop
    loop.close()


def clips(n):
    return [{"audio": (synthetic_clip(2.0 + i % 20, i), 16000)} for i in range(n)]


def tokens(outputs):
    return [o.outputs[0].token_ids for o in outputs]


def test_a_failing_request_fails_alone(loop, monkeypatch):
    params = [SamplingParams(max_tokens=10)] * 6
    expected = tokens(loop.generate(clips(6), params))
    futures = loop.submit(clips(6), params)
    poisoned = futures[3].request_id
    real = loop.engine._apply_samples

    def failing(group, seqs, results):
        if group.request_id == poisoned:
            raise RuntimeError("injected failure")
        return real(group, seqs, results)

    monkeypatch.setattr(loop.engine, "_apply_samples", failing)
    with pytest.raises(RuntimeError, match="injected failure"):
        futures[3].result(timeout=120)
    others = [f.result(timeout=120) for i, f in enumerate(futures) if i != 3]
    assert tokens(others) == [t for i, t in enumerate(expected) if i != 3]
    monkeypatch.undo()
    assert tokens(loop.generate(clips(2), params[:2])) == expected[:2]  # the loop lives on
    assert loop.engine.block_manager.num_free() == loop.engine.block_manager.num_total()


def test_cancelled_requests_free_their_blocks_at_once(loop, monkeypatch):
    """The loop is held after its first step, so no request can finish before the cancel."""
    manager = loop.engine.block_manager
    stepped, go = threading.Event(), threading.Event()
    real_step = loop.engine.step

    def held_step():
        outputs = real_step()
        stepped.set()
        assert go.wait(timeout=60), "the test never released the loop"
        return outputs

    monkeypatch.setattr(loop.engine, "step", held_step)
    long = SamplingParams(max_tokens=400, min_tokens=400)
    futures = loop.submit(clips(4), [long] * 4)
    assert stepped.wait(timeout=120)
    assert manager.num_free() < manager.num_total()
    loop.cancel(futures)
    go.set()
    deadline = time.time() + 10
    while manager.num_free() < manager.num_total() and time.time() < deadline:
        time.sleep(0.01)
    assert manager.num_free() == manager.num_total()
    assert all(f.cancelled() for f in futures)
    assert loop.generate(clips(1), [SamplingParams(max_tokens=3)])[0].finished


def test_a_full_loop_says_so(tiny_whispers):
    loop = EngineLoop(Engine(tiny_whispers["english"][0], dtype="float32", num_kv_blocks=600), max_pending=2)
    long = SamplingParams(max_tokens=50)
    futures = loop.submit(clips(2), [long] * 2)
    with pytest.raises(EngineBusy, match="2 requests pending"):
        loop.submit(clips(1), [long])
    assert all(f.result(timeout=120).finished for f in futures)
    assert loop.submit(clips(1), [long])[0].result(timeout=120).finished
    loop.close()


def test_an_unexpected_error_fails_the_callers_and_the_loop_goes_on(loop, monkeypatch):
    monkeypatch.setattr(loop, "_deliver", lambda outputs: 1 / 0)
    future = loop.submit(clips(1), [SamplingParams(max_tokens=3)])[0]
    with pytest.raises(ZeroDivisionError):
        future.result(timeout=60)
    monkeypatch.undo()
    assert loop.generate(clips(1), [SamplingParams(max_tokens=3)])[0].finished


def test_a_short_request_is_not_stuck_behind_a_long_files_windows(loop):
    """40 windows of one caller, then one of another: the latecomer takes its turn at once."""
    params = SamplingParams(max_tokens=30, min_tokens=30)
    long = loop.submit(clips(40), [params] * 40)
    short = loop.submit(clips(1), [params])[0]
    short.result(timeout=300)
    finished_before = sum(f.done() for f in long)
    assert finished_before < 20, finished_before
    assert all(f.result(timeout=300).finished for f in long)


def test_a_closed_loop_answers_every_caller(tiny_whispers):
    from scriba.runtime.engine_loop import EngineClosed

    loop = EngineLoop(Engine(tiny_whispers["english"][0], dtype="float32", num_kv_blocks=600))
    waiting = loop.submit(clips(3), [SamplingParams(max_tokens=200, min_tokens=200)] * 3)
    loop.close()
    assert all(isinstance(f.exception(timeout=5), EngineClosed) for f in waiting)  # none hangs
    with pytest.raises(EngineClosed):
        loop.submit(clips(1), [SamplingParams(max_tokens=2)])


def test_a_request_of_lower_priority_goes_ahead_of_those_waiting(loop):
    """40 background requests queued (priority 1), then one urgent (-1): it is admitted at once,
    ahead of the waiting ones, so it finishes while most of them have not."""
    background = SamplingParams(max_tokens=30, min_tokens=30, priority=1)
    urgent = SamplingParams(max_tokens=30, min_tokens=30, priority=-1)
    waiting = [loop.submit(clips(1), [background])[0] for _ in range(40)]  # 40 callers, one each
    first = loop.submit(clips(1), [urgent])[0]
    first.result(timeout=300)
    finished_before = sum(f.done() for f in waiting)
    assert finished_before < 20, finished_before
    assert all(f.result(timeout=300).finished for f in waiting)
