"""The GPU data path inside the engine, on whatever device is here: on the CPU the Triton
kernels run in Triton's interpreter, and the CUDA-graph decode runs its padded buffers
eagerly (capture needs a GPU). Oracle: the same engine on the torch backend, and
transformers' generate()."""

import pytest
import torch
from oracle import hf_generate, random_prompts
from tiny_whisper import synthetic_clip

from scriba import Engine, SamplingParams
from scriba.engine.memory import run_largest_step
from scriba.kernels import get_backend

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BACKEND = "cuda" if DEVICE == "cuda" else "triton"


def token_ids(outputs):
    return [o.outputs[0].token_ids for o in outputs]


# Each feature alone is the default's difference (async on a GPU): eager and synchronous, then
# the graph buffers under asynchronous scheduling (on the CPU each case costs ~10 s interpreted).
@pytest.mark.parametrize(
    "graphs, asynchronous", [(False, False), (True, True)], ids=["eager-sync", "graph-buffers-async"]
)
def test_bart_triton_path_matches_transformers(tiny_bart, graphs, asynchronous):
    path, hf = tiny_bart
    prompts = random_prompts(5, seed=3, max_len=60)
    limits = [10, 4, 7, 2, 10]  # sequences leave the batch at different steps
    expected = [
        gen[:n]
        for gen, n in zip((gen for gen, _ in hf_generate(hf, prompts, [2, 0], max_new_tokens=10)), limits)
    ]
    engine = Engine(
        path,
        device=DEVICE,
        dtype="float32",
        attention_backend=BACKEND,
        num_kv_blocks=200,
        cuda_graphs=graphs,
        async_scheduling=asynchronous,
    )
    if graphs and DEVICE == "cpu":  # 5 sequences, then fewer, padded up to buckets of 8 and 4
        engine.runner.capture_decode_graphs(max_batch=8, max_self_blocks=8, max_cross_blocks=8, capture=False)
    outputs = engine.generate(
        [{"prompt_token_ids": p} for p in prompts], [SamplingParams(max_tokens=n) for n in limits]
    )
    assert token_ids(outputs) == expected


def test_whisper_triton_path_matches_torch_path(tiny_whispers):
    """Cross-attention over 1500 encoder positions goes through the split (flash-decoding) kernel."""
    path, _ = tiny_whispers["multilingual"]
    prompts = [
        {"audio": (synthetic_clip(s, seed), 16000), "language": None, "timestamps": True}
        for seed, s in enumerate([2.0, 25.0])
    ]
    params = SamplingParams(max_tokens=3)  # the prompt's step, then decode steps (each ~5 s interpreted)
    expected = token_ids(
        Engine(path, dtype="float32", device="cpu", attention_backend="torch", num_kv_blocks=600).generate(
            prompts, params
        )
    )
    engine = Engine(path, device=DEVICE, dtype="float32", attention_backend=BACKEND, num_kv_blocks=600)
    if DEVICE == "cpu":
        engine.runner.capture_decode_graphs(
            max_batch=4, max_self_blocks=28, max_cross_blocks=94, capture=False
        )
    assert token_ids(engine.generate(prompts, params)) == expected


@pytest.mark.parametrize("model", ["bart", "whisper"])
def test_profile_step_runs_and_leaves_the_cache_alone(tiny_bart, tiny_whispers, model):
    path = tiny_bart[0] if model == "bart" else tiny_whispers["english"][0]
    engine = Engine(path, dtype="float32", device="cpu", num_kv_blocks=300)
    prompt = (
        {"prompt_token_ids": [5, 6, 7]} if model == "bart" else {"audio": (synthetic_clip(3.0, 1), 16000)}
    )
    before = token_ids(engine.generate([prompt], SamplingParams(max_tokens=8)))
    caches = [c.clone() for c in engine.runner.kv_caches]
    run_largest_step(engine.runner, max_num_seqs=16, max_num_batched_tokens=4000)
    assert all(torch.equal(a, b) for a, b in zip(caches, engine.runner.kv_caches))
    assert token_ids(engine.generate([prompt], SamplingParams(max_tokens=8))) == before


def test_backend_choice():
    assert get_backend("auto", "cpu").name == "numba"  # float32 on the CPU: its decode attention
    assert get_backend("auto", "cpu", torch.bfloat16).name == "torch"
    assert get_backend("torch", "cpu").plans_context_reads
    with pytest.raises(ValueError, match="runs on the CPU in float32, not cpu torch.float16"):
        get_backend("numba", "cpu", torch.float16)
    if DEVICE == "cpu":
        assert get_backend("triton", "cpu").name == "triton"  # under TRITON_INTERPRET=1
    else:  # compiled kernels: CPU tensors are refused
        with pytest.raises(RuntimeError, match="Triton kernels run on CUDA tensors"):
            get_backend("triton", "cpu")
        assert get_backend("auto", DEVICE).name == "cuda"
    with pytest.raises(ValueError, match="needs a CUDA device"):
        get_backend("cuda", "cpu")
    with pytest.raises(ValueError, match="attention_backend must be one of"):
        Engine(attention_backend="flash")
    bf16 = dict(dtype=torch.float32, kv_cache_dtype=torch.bfloat16)
    assert not get_backend("auto", "cpu", **bf16).plans_context_reads  # the numba kernel
    with pytest.raises(ValueError, match="reads the cache in the compute dtype"):
        get_backend("triton", "cpu", **bf16)
    with pytest.raises(ValueError, match="runs only on the CPU"):
        get_backend("auto", "cpu", torch.float16, torch.bfloat16)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_step_inputs_move_in_one_copy_per_step(tiny_bart, asynchronous):
    """Every step's integer inputs go to the device in one copy of a staging buffer (forced
    on here on the CPU, where it is otherwise skipped; two buffers take turns for
    asynchronous scheduling); tokens still equal transformers'."""
    from scriba.engine.staging import HostStaging

    path, hf = tiny_bart
    prompts = random_prompts(6, seed=5, max_len=50)
    limits = [12, 3, 9, 12, 1, 7]
    expected = [
        gen[:n]
        for gen, n in zip((gen for gen, _ in hf_generate(hf, prompts, [2, 0], max_new_tokens=12)), limits)
    ]
    engine = Engine(
        path,
        device=DEVICE,
        dtype="float32",
        num_kv_blocks=200,
        max_num_batched_tokens=120,
        async_scheduling=asynchronous,
    )
    engine.runner.staging = HostStaging(DEVICE, capacity=64, buffered=True)
    launch, steps = engine.runner.launch, 0

    def counted(*args, **kwargs):
        nonlocal steps
        launched = launch(*args, **kwargs)
        steps += bool(launched.rows)
        return launched

    engine.runner.launch = counted
    for i, (p, n) in enumerate(zip(prompts, limits)):
        engine.add_request(str(i), {"prompt_token_ids": p}, SamplingParams(max_tokens=n))
    outputs = {}
    while engine.has_unfinished_requests():
        outputs.update((o.request_id, o) for o in engine.step())
    assert engine.runner.staging.copies == steps
    assert [outputs[str(i)].outputs[0].token_ids for i in range(6)] == expected
