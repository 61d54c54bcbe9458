"""Bad input: a clear error naming the problem; the engine keeps serving everyone else."""

import pytest
import torch

from scriba import Engine, SamplingParams

GOOD = [{"prompt_token_ids": [5, 6, 7, 8, 9]}, "a good prompt", {"prompt_token_ids": list(range(4, 60))}]


@pytest.fixture(scope="module")
def engine(tiny_bart):
    return Engine(tiny_bart[0], num_kv_blocks=256)


def run_online(engine, requests):
    for rid, prompt in requests.items():
        engine.add_request(rid, prompt, SamplingParams(max_tokens=12))
    done = {}
    while engine.has_unfinished_requests():
        for out in engine.step():
            if out.finished:
                done[out.request_id] = out.outputs[0].token_ids
    return done


BAD_PROMPTS = [
    ("", "empty encoder prompt"),
    ("   ", "empty encoder prompt"),
    ({"prompt_token_ids": []}, "empty encoder prompt"),
    ({"prompt_token_ids": [5, 300, -1]}, r"outside the vocabulary \[0, 264\): \[300, -1\]"),
    (
        {"prompt_token_ids": list(range(4, 260)) + [5]},
        "encoder prompt has 257 tokens, more than the model's 256 positions",
    ),
    (
        {"encoder_prompt": "ok", "decoder_prompt": {"prompt_token_ids": [2, 999]}},
        r"decoder prompt has token ids outside the vocabulary",
    ),
    ({"prompt_token_ids": [5, "x"]}, "prompt_token_ids must be a list of ints"),
    ({"text": "hi"}, "needs 'prompt' or 'prompt_token_ids'"),
    (
        {"encoder_prompt": "ok", "decoder_prompt": None, "extra": 1},
        r"unknown keys in encoder/decoder prompt: \['extra'\]",
    ),
]


@pytest.mark.parametrize("prompt,message", BAD_PROMPTS)
def test_bad_prompt_is_named_and_others_still_served(engine, prompt, message):
    reference = run_online(engine, {f"ref{i}": p for i, p in enumerate(GOOD)})
    for i, p in enumerate(GOOD):  # in flight when the bad one arrives
        engine.add_request(f"good{i}", p, SamplingParams(max_tokens=12))
    engine.step()
    with pytest.raises(ValueError, match=message):
        engine.add_request("bad", prompt)
    done = run_online(engine, {})
    assert {k.replace("good", "ref"): v for k, v in done.items()} == reference
    assert "bad" not in engine.groups and not engine.has_unfinished_requests()


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(max_tokens=0), "max_tokens must be a positive integer, got 0"),
        (dict(max_tokens=-3), "max_tokens must be a positive integer, got -3"),
        (dict(temperature=-1.0), "temperature must be >= 0"),
        (dict(top_p=0.0), r"top_p must be in \(0, 1\]"),
        (dict(n=2), "n > 1 needs temperature > 0"),
        (dict(min_tokens=20, max_tokens=10), r"min_tokens must be in \[0, max_tokens=10\]"),
        (dict(repetition_penalty=0.0), "repetition_penalty must be > 0"),
    ],
)
def test_bad_sampling_params(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SamplingParams(**kwargs)


def test_bad_token_ids_in_params(engine):
    with pytest.raises(
        ValueError, match=r"sampling params name token ids outside the vocabulary \[0, 264\): \[5000\]"
    ):
        engine.add_request("bad", "text", SamplingParams(stop_token_ids=[5000]))


def test_generate_with_one_bad_prompt_names_it_and_queues_nothing(engine):
    with pytest.raises(ValueError, match=r"prompt 2: empty encoder prompt"):
        engine.generate(["fine", "also fine", ""])
    assert not engine.has_unfinished_requests() and not engine.groups
    assert engine.block_manager.num_free() == engine.block_manager.num_total()
    assert len(engine.generate(["fine", "also fine"])) == 2


def test_duplicate_request_id(engine):
    engine.add_request("same", "text")
    with pytest.raises(ValueError, match="request id 'same' is already in use"):
        engine.add_request("same", "text")
    engine.abort("same")
    assert not engine.has_unfinished_requests()


def test_more_samples_than_sequences_per_step(tiny_bart):
    engine = Engine(tiny_bart[0], num_kv_blocks=64, max_num_seqs=2)
    with pytest.raises(ValueError, match="n=3 is more than max_num_seqs=2"):
        engine.add_request("many", "text", SamplingParams(n=3, temperature=1.0))


def test_request_larger_than_the_pool(tiny_bart):
    small = Engine(tiny_bart[0], num_kv_blocks=8)
    with pytest.raises(ValueError, match=r"request needs up to \d+ KV blocks but the pool has 8"):
        small.add_request("big", {"prompt_token_ids": list(range(4, 200))}, SamplingParams(max_tokens=64))
    assert small.generate({"prompt_token_ids": [5, 6]}, SamplingParams(max_tokens=4))[0].finished


def test_bad_engine_config(tiny_bart):
    with pytest.raises(ValueError, match="preemption_mode must be one of"):
        Engine(tiny_bart[0], preemption_mode="drop")
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        Engine(tiny_bart[0], block_size=0)
    with pytest.raises(TypeError):
        Engine(tiny_bart[0], no_such_option=1)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no CUDA GPU"):
            Engine(tiny_bart[0], device="cuda")
