"""Asynchronous scheduling (EngineConfig.async_scheduling): step k + 1 is launched on step k's
sampled tokens before the host reads them. Every output must equal the synchronous engine's:
tokens, log-probs, finish reasons, under stops, length caps, beams, forks, preemption, aborts."""

import pytest
from oracle import (
    assert_same_outputs,
    beams_and_forks_params,
    completions,
    mixed_sampling_params,
    random_prompts,
)

from scriba import Engine, SamplingParams
from scriba.engine.sequence import PENDING


def counting_launches(engine) -> list[bool]:
    """Record, per launched step, whether it was fed by a step still in flight."""
    fed, launch = [], engine.runner.launch

    def counted(sched, blocks, feed=None):
        fed.append(feed is not None)
        return launch(sched, blocks, feed)

    engine.runner.launch = counted
    return fed


def both(path, prompts, params, **config):
    """(sync outputs, async outputs, async engine, which async launches were fed)."""
    sync = Engine(path, async_scheduling=False, **config).generate(prompts, params)
    engine = Engine(path, async_scheduling=True, **config)
    fed = counting_launches(engine)
    return sync, engine.generate(prompts, params), engine, fed


def test_greedy_sampled_stops_and_length_caps_match(tiny_bart_eos):
    path, _ = tiny_bart_eos
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=3, max_len=100)]
    params = mixed_sampling_params()
    sync, outputs, engine, fed = both(path, prompts, params, num_kv_blocks=600)
    assert_same_outputs(sync, outputs)
    reasons = [c[1] for out in completions(outputs) for c in out]
    assert "stop" in reasons and "length" in reasons
    assert len(outputs[6].outputs[0].token_ids) == 256 - len(outputs[6].prompt_token_ids)
    assert sum(fed) > 20  # most steps ran on tokens the host had not read yet
    assert not engine.has_unfinished_requests() and engine.in_flight is None
    bm = engine.block_manager
    assert bm.num_free() == bm.num_total()


def test_beams_and_forks_read_at_once_beside_async_rows(tiny_bart_eos):
    path, _ = tiny_bart_eos
    prompts = [{"prompt_token_ids": p} for p in random_prompts(6, seed=4, max_len=80)]
    params = beams_and_forks_params()
    sync, outputs, _, fed = both(path, prompts, params, num_kv_blocks=800)
    assert_same_outputs(sync, outputs)
    assert any(fed)


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_preemption_with_tokens_in_flight(tiny_bart_eos, mode):
    path, _ = tiny_bart_eos
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=9, max_len=120)]
    params = SamplingParams(max_tokens=70, ignore_eos=True, logprobs=1)
    config = dict(num_kv_blocks=40, num_cpu_blocks=400, preemption_mode=mode)
    sync, outputs, engine, fed = both(path, prompts, params, **config)
    sched = engine.scheduler
    assert (sched.num_swapped_out if mode == "swap" else sched.num_recomputed) > 0
    assert_same_outputs(sync, outputs)
    assert sum(fed) > 10
    assert engine.block_manager.num_free() == engine.block_manager.num_total()


def test_abort_with_a_token_in_flight_and_streams_never_show_pending(tiny_bart_eos):
    path, _ = tiny_bart_eos
    prompts = random_prompts(4, seed=12, max_len=50)
    params = SamplingParams(max_tokens=30, ignore_eos=True)
    expected = Engine(path, async_scheduling=False, num_kv_blocks=300).generate(
        [{"prompt_token_ids": p} for p in prompts[1:]], params
    )
    engine = Engine(path, async_scheduling=True, num_kv_blocks=300)
    for i, p in enumerate(prompts):
        engine.add_request(f"r{i}", {"prompt_token_ids": p}, params)
    finished, seen = {}, []
    for step in range(100):
        if step == 4:
            assert engine.in_flight is not None and engine.groups["r0"].seqs[0].pending == 1
            engine.abort("r0")
        if not engine.has_unfinished_requests():
            break
        for out in engine.step():
            seen += out.outputs[0].token_ids
            if out.finished:
                finished[out.request_id] = out.outputs[0].token_ids
    assert PENDING not in seen
    assert finished == {f"r{i}": e.outputs[0].token_ids for i, e in zip(range(1, 4), expected)}
    bm = engine.block_manager
    assert bm.num_free() == bm.num_total() and not bm.self_tables and not bm.cross_tables


def test_async_is_off_on_the_cpu_by_default(tiny_bart):
    assert Engine(tiny_bart[0], num_kv_blocks=64).config.scheduler_config.async_scheduling is False


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_preempted_while_its_stop_token_is_in_flight(tiny_bart_eos, mode, monkeypatch):
    """A group preempted while its last token is in flight finishes in the waiting (or swapped)
    queue when that token is read: it leaves the queue and frees its blocks. Preemption
    depends only on lengths, so a first run finds a victim and the token it had in flight;
    the second run stops the victim at that token."""
    from scriba.engine.scheduler import Scheduler

    path, _ = tiny_bart_eos
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=1, max_len=100)]
    params = [SamplingParams(max_tokens=60, ignore_eos=True, temperature=1.0, seed=i) for i in range(8)]
    config = dict(num_kv_blocks=40, num_cpu_blocks=400, preemption_mode=mode)
    preempted, finished_away = [], []
    preempt, remove_finished = Scheduler._preempt, Scheduler.remove_finished

    def spy_preempt(self, group, out):
        preempted.append((group.request_id, group.seqs[0].num_output_tokens, group.seqs[0].pending))
        preempt(self, group, out)

    def spy_remove(self):
        finished_away.extend(g.request_id for g in [*self.waiting, *self.swapped] if g.is_finished)
        remove_finished(self)

    monkeypatch.setattr(Scheduler, "_preempt", spy_preempt)
    monkeypatch.setattr(Scheduler, "remove_finished", spy_remove)
    first = Engine(path, async_scheduling=True, **config).generate(prompts, params)
    tokens = {out.request_id: out.outputs[0].token_ids for out in first}
    victims = [
        (rid, n)
        for rid, n, pending in preempted
        if pending == 1 and tokens[rid][n - 1] not in tokens[rid][: n - 1]
    ]
    assert victims, preempted
    rid, n = victims[0]
    k = int(rid.removeprefix("gen-")) - int(first[0].request_id.removeprefix("gen-"))
    # ignore_eos as in the first run: its tokens may hold an EOS before the stop token
    params[k] = SamplingParams(
        max_tokens=60, ignore_eos=True, temperature=1.0, seed=k, stop_token_ids=[tokens[rid][n - 1]]
    )
    sync, outputs, engine, _ = both(path, prompts, params, **config)
    assert_same_outputs(sync, outputs)
    assert (
        outputs[k].outputs[0].token_ids == tokens[rid][:n] and outputs[k].outputs[0].finish_reason == "stop"
    )
    assert finished_away == [outputs[k].request_id]
    bm = engine.block_manager
    assert bm.num_free() == bm.num_total() and bm.num_free("cpu") == bm.num_total("cpu")
