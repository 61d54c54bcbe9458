"""Online use: requests join while others decode, aborts free everything, outputs unchanged."""

import pytest
import torch
from oracle import random_prompts

from scriba import Engine, SamplingParams

PARAMS = SamplingParams(max_tokens=24, logprobs=1)


def alone(engine, prompt):
    return engine.generate({"prompt_token_ids": prompt}, PARAMS)[0].outputs[0].token_ids


def test_join_mid_flight_and_abort(tiny_bart):
    engine = Engine(tiny_bart[0], num_kv_blocks=256)
    prompts = random_prompts(5, seed=13)
    expected = [alone(engine, p) for p in prompts]
    batch_sizes = []
    engine.add_request("a", {"prompt_token_ids": prompts[0]}, PARAMS)
    engine.add_request("doomed", {"prompt_token_ids": prompts[1]}, PARAMS)
    finished, streamed = {}, {}
    for step in range(200):
        if step == 3:  # join while "a" decodes
            engine.add_request("b", {"prompt_token_ids": prompts[2]}, PARAMS)
            engine.add_request("c", {"prompt_token_ids": prompts[3]}, PARAMS)
        if step == 5:
            engine.abort("doomed")
        if step == 7:
            engine.add_request("d", {"prompt_token_ids": prompts[4]}, PARAMS)
        if not engine.has_unfinished_requests():
            break
        outs = engine.step()
        batch_sizes.append(len(outs))
        for out in outs:
            assert out.request_id != "doomed" or step < 5
            streamed.setdefault(out.request_id, []).append(len(out.outputs[0].token_ids))
            if out.finished:
                finished[out.request_id] = out.outputs[0].token_ids
    assert finished == {"a": expected[0], "b": expected[2], "c": expected[3], "d": expected[4]}
    assert max(batch_sizes) >= 3  # several requests shared steps
    assert all(lengths == sorted(lengths) for lengths in streamed.values())  # outputs grow step by step
    bm = engine.block_manager
    assert bm.num_free() == bm.num_total() and not bm.self_tables and not bm.cross_tables
    assert not engine.groups


def test_outputs_echo_prompts_and_finish(tiny_bart):
    engine = Engine(tiny_bart[0], num_kv_blocks=128)
    out = engine.generate(
        {"encoder_prompt": "hello", "decoder_prompt": {"prompt_token_ids": [2, 0, 75]}},
        SamplingParams(max_tokens=5),
    )[0]
    assert out.finished and out.encoder_prompt == "hello"
    assert out.encoder_prompt_token_ids == engine.tokenizer("hello")["input_ids"]
    assert out.prompt_token_ids == [2, 0, 75] and len(out.outputs[0].token_ids) <= 5
    assert out.outputs[0].finish_reason in ("stop", "length")


def test_kv_pool_sized_from_memory(tiny_bart):
    """num_kv_blocks=None: on the CPU, enough for max_num_seqs full-length requests when memory
    allows; on a GPU, what gpu_memory_utilization leaves after weights and activations (vLLM's)."""
    engine = Engine(tiny_bart[0], max_num_seqs=4)
    bm, m = engine.block_manager, engine.model
    per_request = bm.num_blocks_needed(m.max_encoder_len, [m.max_decoder_len])
    if engine.runner.device.type == "cuda":
        free, total = torch.cuda.mem_get_info()
        assert 4 * per_request < bm.num_total() and total - free < 0.95 * total
    else:
        assert bm.num_total() == 4 * per_request
    assert engine.runner.kv_caches[0].shape[1] == bm.num_total()


def test_interrupted_generate_leaves_nothing_behind(tiny_bart, monkeypatch):
    engine = Engine(tiny_bart[0], num_kv_blocks=128)
    real_step, calls = engine.step, []

    def interrupted_step():
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_step()

    monkeypatch.setattr(engine, "step", interrupted_step)
    with pytest.raises(KeyboardInterrupt):
        engine.generate(["one", "two"], SamplingParams(max_tokens=20, ignore_eos=True))
    monkeypatch.undo()
    assert not engine.has_unfinished_requests() and not engine.groups
    assert engine.block_manager.num_free() == engine.block_manager.num_total()
    assert [o.finished for o in engine.generate(["one", "two"], SamplingParams(max_tokens=4))] == [True, True]
