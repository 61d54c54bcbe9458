"""Scriba's GPU path vs transformers generate() on random-weight models of real shapes.

Two workloads, in one run, on the same weights (float16, sdpa for transformers):

1. whisper-large-v3's shape (32+32 layers, d_model 1280, 128 mel bins): `--batch` 30 s
   windows, exactly `--new-tokens` new tokens each (`ignore_eos`; transformers:
   min_new_tokens = max_new_tokens), language and task given, no timestamps.
2. bart-large's shape (12+12 layers, d_model 1024): `--batch` inputs of 200-1000 tokens,
   the same number of new tokens.

For each: wall time, tokens/s, real-time factor (Whisper: seconds of audio per second),
the median decode step (a step of the full batch, prefills done) against the memory floor
(bytes of decoder weights + the KV the step reads, over the measured device copy bandwidth),
and the ratio to transformers. transformers' generate() here is GenerationMixin's, batched;
its decode step is (wall - encoder time) / new tokens.

    python -m benchmarks gpu --out benchmarks/results/gpu_h100.txt   # on a GPU
    python -m benchmarks gpu --smoke   # tiny shapes on the CPU: --tiny --device cpu --batch 4 --new-tokens 8
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import tempfile
import time

import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    GenerationMixin,
    WhisperConfig,
    WhisperForConditionalGeneration,
)

from benchmarks.report import commit, cpu_name, suite_parser, versions
from benchmarks.summarize import pad_batch
from scriba import Engine, SamplingParams
from scriba.kernels import backend as backends
from scriba.kernels.varlen_attention import varlen_attention_flash, varlen_attention_ref

SHAPES = {
    "whisper": dict(
        d_model=1280,
        encoder_layers=32,
        decoder_layers=32,
        encoder_attention_heads=20,
        decoder_attention_heads=20,
        encoder_ffn_dim=5120,
        decoder_ffn_dim=5120,
        num_mel_bins=128,
        vocab_size=51866,
    ),
    "bart": dict(
        d_model=1024,
        encoder_layers=12,
        decoder_layers=12,
        encoder_attention_heads=16,
        decoder_attention_heads=16,
        encoder_ffn_dim=4096,
        decoder_ffn_dim=4096,
        vocab_size=50265,
    ),
}
TINY = dict(
    d_model=64,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=128,
    decoder_ffn_dim=128,
)
# <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|> in the large-v3 vocabulary
WHISPER_PROMPT = [50258, 50259, 50360, 50364]


def log(line: str = "") -> None:
    """Print a report line, and append it to --out at once (a later failure keeps it)."""
    print(line, flush=True)
    LINES.append(line)
    if OUT_PATH:
        with open(OUT_PATH, "a") as f:
            f.write(line + "\n")


LINES: list[str] = []
OUT_PATH: str | None = None


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def copy_bandwidth(device) -> float:
    """Bytes/s of a large device-to-device copy (read + write counted)."""
    n = 2**28 if torch.device(device).type == "cuda" else 2**24
    src = torch.empty(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    sync(device)
    start = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    sync(device)
    return 10 * 2 * src.numel() * 4 / (time.perf_counter() - start)


def make_model(kind: str, folder: str, tiny: bool, dtype, device) -> torch.nn.Module:
    """Random weights, initialised on the device (a CPU init of 1.5B parameters takes a minute),
    saved in `dtype` for the engine to load."""
    torch.manual_seed(0)
    shape = {**SHAPES[kind], **(TINY if tiny else {})}
    with torch.device(device):
        if kind == "whisper":
            config = WhisperConfig(
                **shape,
                max_source_positions=1500,
                max_target_positions=448,
                decoder_start_token_id=50258,
                eos_token_id=50257,
                pad_token_id=50257,
                bos_token_id=50257,
            )
            model = WhisperForConditionalGeneration(config)
        else:
            config = BartConfig(**shape, max_position_embeddings=1024)
            model = BartForConditionalGeneration(config)
    model = model.to(dtype)
    model.save_pretrained(folder)
    return model


def decoder_bytes(model) -> int:
    """Weights a decode step reads: the decoder stack and the output projection, less the
    cross-attention K/V projections (their output is cached at prefill, never recomputed)."""
    decoder = model.model.decoder
    cached = ("encoder_attn.k_proj.", "encoder_attn.v_proj.")
    size = sum(
        p.numel() * p.element_size()
        for name, p in decoder.named_parameters()
        if not any(c in name for c in cached)
    )
    head = model.get_output_embeddings().weight
    if head.data_ptr() != decoder.embed_tokens.weight.data_ptr():
        size += head.numel() * head.element_size()
    return size


def kv_bytes_per_step(
    model, encoder_lens: list[int], decoder_len: int, dtype, kv_cache_dtype="auto"
):
    """K and V read by one decode step: every layer's self (decoder_len) and cross (encoder) rows.
    An 8-bit cache reads one byte per element and a float32 scale per cached head vector."""
    c = model.config
    if kv_cache_dtype in ("fp8", "int8"):
        scale = 4 / (c.d_model // c.decoder_attention_heads)
        self_element, cross_element = 1 + scale, 1 + scale
    else:
        self_element = cross_element = torch.empty((), dtype=dtype).element_size()
    per_row = c.decoder_layers * 2 * c.d_model
    return int(per_row * sum(n * cross_element + decoder_len * self_element for n in encoder_lens))


def scriba_run(engine: Engine, prompts, new_tokens: int, device) -> tuple[float, float, list[list[int]]]:
    """(wall seconds, median full-batch decode step seconds, token ids)."""
    # EOS never chosen, as min_new_tokens
    params = SamplingParams(max_tokens=new_tokens, min_tokens=new_tokens, ignore_eos=True)
    sync(device)
    start = time.perf_counter()
    for i, p in enumerate(prompts):
        engine.add_request(str(i), p, params)
    steps, outputs = [], {}
    kinds = {"admitting": [0, 0.0], "decoding": [0, 0.0]}  # steps and seconds by what they scheduled
    schedule, scheduled = engine.scheduler.schedule, []
    engine.scheduler.schedule = lambda: scheduled.append(out := schedule()) or out
    while engine.has_unfinished_requests():
        t0 = time.perf_counter()
        advanced = engine.step()  # ends reading a step's tokens: no sync needed (async: a step late)
        elapsed = time.perf_counter() - t0
        admits = scheduled and (scheduled[-1].prefills or scheduled[-1].encodes or scheduled[-1].prompts)
        kind = kinds["admitting" if admits else "decoding"]
        kind[0], kind[1] = kind[0] + 1, kind[1] + elapsed
        for out in advanced:
            outputs[out.request_id] = out
        # A decode step of the full batch: every request advanced, none of them from its prompt.
        if len(advanced) == len(prompts) and min(len(o.outputs[0].token_ids) for o in advanced) >= 2:
            steps.append(elapsed)
    wall = time.perf_counter() - start
    del engine.scheduler.schedule
    decode = statistics.median(steps) if steps else float("nan")
    split = ", ".join(f"{n} {k} steps {t:.3f} s" for k, (n, t) in kinds.items())
    return wall, decode, split, [outputs[str(i)].outputs[0].token_ids for i in range(len(prompts))]


def hf_run(model, new_tokens: int, device, encoder_call, **inputs) -> tuple[float, float, torch.Tensor]:
    """(wall seconds, per-token decode seconds, sequences) of batched greedy generate()."""
    sync(device)
    start = time.perf_counter()
    with torch.inference_mode():
        encoder_call()
    sync(device)
    encoder = time.perf_counter() - start
    start = time.perf_counter()
    with torch.inference_mode():
        out = GenerationMixin.generate(
            model,
            **inputs,
            do_sample=False,
            num_beams=1,
            min_new_tokens=new_tokens,
            max_new_tokens=new_tokens,
            forced_eos_token_id=None,
        )
    sync(device)
    wall = time.perf_counter() - start
    return wall, max(wall - encoder, 0.0) / new_tokens, out


def device_busy(events) -> float:
    """Seconds the device ran kernels and copies: the device's own events only (an eager op's
    'self CUDA' time repeats its kernels', so summing every event counted those twice)."""
    on_device = [e for e in events if e.device_type != torch.autograd.DeviceType.CPU]
    return sum(e.self_device_time_total for e in on_device) * 1e-6


def profile_decode(engine: Engine, prompts, device, steps: int = 20) -> float:
    """Exposed host time per decode step (s): `steps` full-batch decode steps timed without a
    profiler, less the device's busy time a step under the torch profiler over `steps` more
    (the profiler's own host work, CUPTI's first start above all, would count as exposed: the
    profiled figure is printed too). Prints the top kernels."""
    # Long enough that no request finishes while the last ones are still being admitted.
    params = SamplingParams(max_tokens=448, min_tokens=448, ignore_eos=True)
    ids = [f"profile-{i}" for i in range(len(prompts))]
    for request_id, p in zip(ids, prompts):
        engine.add_request(request_id, p, params)
    # Until every request decodes: under EngineConfig.encoder_stream a step's outputs leave out
    # the requests whose encoder still runs, which would put their admission in the timed steps.
    tokens = {}
    while len(tokens) < len(ids) or min(tokens.values()) < 2:
        tokens.update(
            (o.request_id, len(o.outputs[0].token_ids)) for o in engine.step() if o.request_id in ids
        )
    plain = timed_steps(engine, device, steps)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.device(device).type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        wall = timed_steps(engine, device, steps)
    events = prof.key_averages()
    busy = device_busy(events) / steps
    log(
        f"profile of {steps} decode steps: {wall * 1e3:.2f} ms per step, device busy {busy * 1e3:.2f} ms, "
        f"exposed host {(wall - busy) * 1e3:.2f} ms; the {steps} steps before, unprofiled: "
        f"{plain * 1e3:.2f} ms per step, exposed host {(plain - busy) * 1e3:.2f} ms"
    )
    log("```")
    log(events.table(sort_by="self_device_time_total", row_limit=12, max_name_column_width=60))
    log(events.table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=60))
    log("```")
    for request_id in ids:
        engine.abort(request_id)
    return max(plain - busy, 0.0)


def timed_steps(engine: Engine, device, steps: int) -> float:
    """Wall seconds a step over `steps` engine steps, the device idle at both ends."""
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        engine.step()
    sync(device)
    return (time.perf_counter() - start) / steps


def profile_admission(engine: Engine, prompts, device) -> None:
    """A torch profiler over the admission of every prompt (2 new tokens each): wall against
    the device's busy time, and the host calls that took longest."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.device(device).type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        wall, _, split, _ = scriba_run(engine, prompts, 2, device)
    events = prof.key_averages()
    busy = device_busy(events)
    log(f"profile of the admission (2 new tokens): {wall:.3f} s, device busy {busy:.3f} s; {split}")
    log("```")
    log(events.table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=60))
    log(events.table(sort_by="self_device_time_total", row_limit=8, max_name_column_width=60))
    log("```")


def free(device) -> None:
    gc.collect()
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def report(name, batch, new_tokens, scriba, hf, floor, audio_seconds=None) -> None:
    """scriba: (wall, step, host or None, step split); hf: (wall, step, agreeing sequences) or None."""
    tokens = batch * new_tokens

    def rtf(wall: float) -> str:
        return f"  real-time factor {audio_seconds / wall:8.0f}" if audio_seconds else ""

    log(f"## {name}: batch {batch}, {new_tokens} new tokens each")
    log(f"Scriba       {scriba[0]:8.3f} s  {tokens / scriba[0]:9.0f} tok/s" + rtf(scriba[0]))
    if hf:
        log(f"transformers {hf[0]:8.3f} s  {tokens / hf[0]:9.0f} tok/s" + rtf(hf[0]))
        log(f"ratio (Scriba / transformers throughput): {hf[0] / scriba[0]:.2f}x")
    theirs = f", transformers {hf[1] * 1e3:.2f} ms" if hf else ""
    log(
        f"decode step: Scriba {scriba[1] * 1e3:.2f} ms{theirs}, floor "
        f"{floor * 1e3:.2f} ms -> Scriba at {scriba[1] / floor:.2f}x the floor"
    )
    if scriba[2] is not None:
        log(
            f"exposed host time per decode step (unprofiled step less profiled device time): "
            f"{scriba[2] * 1e3:.2f} ms"
        )
    log(f"Scriba's steps (host time of each step() call): {scriba[3]}")
    if hf:
        log(
            f"greedy tokens identical to transformers: {hf[2]}/{batch} "
            "sequences (float16 numerics may differ on random weights)"
        )
    log()


# --variants: engine settings measured one after another on the same weights and inputs
VARIANTS = {
    "async": ("on", "auto"),
    "sync": ("off", "auto"),
    "fp8": ("on", "fp8"),
    "fp8-sync": ("off", "fp8"),
    "int8": ("on", "int8"),
}
# Suffixes: "-eager-encoder" runs the encoder without its CUDA graphs; "-packed-encoder" its
# attention as packed varlen flash (the kernel before equal_length_attention), not dense SDPA;
# "+encoder-stream" EngineConfig.encoder_stream (the encoder on its own CUDA stream, beside decode);
# "+decode-priority" the engine's steps on a high-priority stream (its kernels start first as SMs free
# up while the encoder's are also waiting; bench_overlap_gpu.py's priority case, in the engine);
# "+fp8-encoder" EngineConfig.encoder_quantization="fp8" (the encoder's products on fp8 tensor cores).
SUFFIXES = (
    "-eager-encoder",
    "-packed-encoder",
    "+encoder-stream",
    "+decode-priority",
    "+fp8-encoder",
)


def base_variant(name: str) -> str:
    for suffix in SUFFIXES:
        name = name.replace(suffix, "")
    return name


def variants(args) -> list[tuple[str, str, str]]:
    """(label, async_scheduling, kv_cache_dtype) per engine to measure."""
    if not args.variants:
        return [("", args.async_scheduling, args.kv_cache_dtype)]
    names = args.variants.split(",")
    base = {n: base_variant(n) for n in names}
    unknown = [n for n in names if base[n] not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown --variants {unknown}; choose from {sorted(VARIANTS)}")
    return [(n, *VARIANTS[base[n]]) for n in names]


def run_scriba(args, folder, prompts, async_scheduling, kv_cache_dtype, label=""):
    """(wall, decode step, exposed host time or None, step split, tokens) of the engine the variant
    `label` names (SUFFIXES); the engine is freed after."""
    encoder_stream = "+encoder-stream" in label if label else None  # None: the engine's default
    engine = Engine(
        folder,
        device=args.device,
        dtype=args.dtype,
        max_num_seqs=max(args.batch, 1),
        async_scheduling={"on": True, "off": False}.get(async_scheduling),
        kv_cache_dtype=kv_cache_dtype,
        encoder_stream=encoder_stream,
        encoder_quantization="fp8" if "+fp8-encoder" in label else None,
    )
    if "-eager-encoder" in label:
        engine.runner.model.encoder_graphs = None
    steps_stream = contextlib.nullcontext()
    if "+decode-priority" in label and torch.device(args.device).type == "cuda":
        steps_stream = torch.cuda.stream(torch.cuda.Stream(priority=-1))
    with steps_stream:
        scriba_run(engine, prompts[: min(4, args.batch)], 4, args.device)  # warm-up
        wall, step, split, tokens = scriba_run(engine, prompts, args.new_tokens, args.device)
        host = profile_decode(engine, prompts, args.device) if args.profile else None
        if args.profile_admission:
            profile_admission(engine, prompts, args.device)
    del engine
    free(args.device)  # both KV caches do not fit beside each other
    return wall, step, host, split, tokens


def run_variants(args, folder, prompts) -> list[tuple[str, str, tuple, list[list[int]]]]:
    """(label, kv_cache_dtype, (wall, step, host), tokens) per --variants entry."""
    results = []
    for label, async_scheduling, kv_cache_dtype in variants(args):
        dense = backends.CudaBackend.encoder_attention
        if "-packed-encoder" in label:  # TorchBackend's rule on this backend: packed varlen flash
            backends.CudaBackend.encoder_attention = classmethod(
                backends.TorchBackend.encoder_attention.__func__
            )
        try:
            wall, step, host, split, tokens = run_scriba(
                args, folder, prompts, async_scheduling, kv_cache_dtype, label
            )
        finally:
            backends.CudaBackend.encoder_attention = dense
        results.append((label, kv_cache_dtype, (wall, step, host, split), tokens))
    return results


def report_variants(name, args, results, hf_result, floor_of, audio_seconds=None) -> None:
    """One report per variant; each later variant's tokens compared with the first's."""
    first_label, _, _, first_tokens = results[0]
    for label, kv_cache_dtype, scriba, tokens in results:
        title = f"{name} ({label})" if label else name
        hf = None
        if hf_result:
            hf = (*hf_result[:2], sum(a == b for a, b in zip(tokens, hf_result[2])))
        floor = floor_of(kv_cache_dtype)
        report(title, args.batch, args.new_tokens, scriba, hf, floor, audio_seconds)
        if label != first_label:
            same = sum(a == b for a, b in zip(tokens, first_tokens))
            log(f"greedy tokens identical to ({first_label}): {same}/{args.batch} sequences")
            log()


def bench_whisper(args, folder, bandwidth) -> None:
    dtype = getattr(torch, args.dtype)
    hf = make_model("whisper", folder, args.tiny, dtype, args.device).eval()
    torch.manual_seed(1)
    features = torch.randn(args.batch, hf.config.num_mel_bins, 3000).mul(0.5)
    prompts = [
        {"input_features": f.numpy(), "language": "en", "task": "transcribe", "timestamps": False}
        for f in features
    ]
    results = run_variants(args, folder, prompts)
    hf_result = None
    if not args.skip_transformers:
        feats = features.to(args.device, dtype)
        prompt = torch.tensor([WHISPER_PROMPT] * args.batch, device=args.device)
        run = lambda n: hf_run(  # noqa: E731
            hf,
            n,
            args.device,
            lambda: hf.model.encoder(feats),
            input_features=feats,
            decoder_input_ids=prompt,
        )
        run(2)  # warm-up
        h_wall, h_step, h_out = run(args.new_tokens)
        hf_result = (h_wall, h_step, h_out[:, len(WHISPER_PROMPT) :].tolist())
    encoder_lens, decoder_len = [1500] * args.batch, len(WHISPER_PROMPT) + args.new_tokens // 2
    weights = decoder_bytes(hf)

    def floor_of(kv) -> float:
        return (weights + kv_bytes_per_step(hf, encoder_lens, decoder_len, dtype, kv)) / bandwidth

    name = "whisper-large-v3 shape" if not args.tiny else "tiny Whisper"
    report_variants(name, args, results, hf_result, floor_of, 30.0 * args.batch)
    hf = run = None  # frees the weights (the closures above read hf)
    free(args.device)


def bench_bart(args, folder, bandwidth) -> None:
    dtype = getattr(torch, args.dtype)
    hf = make_model("bart", folder, args.tiny, dtype, args.device).eval()
    gen = torch.Generator().manual_seed(2)
    lengths = torch.randint(200, 1001, (args.batch,), generator=gen).tolist()
    inputs = [torch.randint(4, hf.config.vocab_size, (n,), generator=gen).tolist() for n in lengths]
    results = run_variants(args, folder, [{"prompt_token_ids": ids} for ids in inputs])
    hf_result = None
    if not args.skip_transformers:
        ids, mask = (t.to(args.device) for t in pad_batch(inputs))  # pads with BART's pad id, 1
        prompt = torch.tensor(
            [[hf.config.decoder_start_token_id, hf.config.bos_token_id]] * args.batch, device=args.device
        )
        encode = lambda: hf.model.encoder(input_ids=ids, attention_mask=mask)  # noqa: E731
        run = lambda n: hf_run(  # noqa: E731
            hf, n, args.device, encode, input_ids=ids, attention_mask=mask, decoder_input_ids=prompt
        )
        run(2)
        h_wall, h_step, h_out = run(args.new_tokens)
        hf_result = (h_wall, h_step, h_out[:, 2:].tolist())
    weights, decoder_len = decoder_bytes(hf), 2 + args.new_tokens // 2

    def floor_of(kv) -> float:
        return (weights + kv_bytes_per_step(hf, lengths, decoder_len, dtype, kv)) / bandwidth

    report_variants("bart-large shape" if not args.tiny else "tiny BART", args, results, hf_result, floor_of)
    hf = run = None  # frees the weights (the closures above read hf)
    free(args.device)


def flash_check(device) -> None:
    """The prefill kernel the GPU path uses, against the reference, on packed random sequences."""
    if torch.device(device).type != "cuda":
        log("flash varlen prefill: not on a GPU, the reference runs instead")
        return
    lens = [1, 7, 300, 1500, 64]
    cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32, device=device)
    q, k, v = torch.randn(3, sum(lens), 20, 64, device=device, dtype=torch.float16)
    for causal in (False, True):
        out = varlen_attention_flash(q, k, v, cu, cu, max(lens), max(lens), 0.125, causal)
        ref = varlen_attention_ref(
            q.float(), k.float(), v.float(), cu, cu, max(lens), max(lens), 0.125, causal
        )
        log(
            f"flash varlen prefill vs reference (causal={causal}): max "
            f"abs error {(out.float() - ref).abs().max().item():.1e}"
        )


def parse(argv: list[str]):
    parser = suite_parser("gpu", __doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default=None, help="float16 on a GPU, float32 on the CPU")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--models", default="whisper,bart")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU, batch 4, 8 tokens")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--profile", action="store_true", help="profile 20 decode steps: kernels, host")
    parser.add_argument(
        "--async-scheduling", choices=["auto", "on", "off"], default="auto", help="auto: on with a GPU"
    )
    parser.add_argument("--kv-cache-dtype", default="auto", help="auto (the compute dtype), fp8 or int8")
    parser.add_argument("--profile-admission", action="store_true", help="profile the admitting steps")
    parser.add_argument(
        "--variants",
        help=f"several engines on the same weights, e.g. async,sync,fp8 (from {', '.join(VARIANTS)}, with the"
        f" suffixes {', '.join(SUFFIXES)}); overrides --async-scheduling and --kv-cache-dtype",
    )
    parser.add_argument(
        "--skip-transformers", action="store_true", help="Scriba only (its cache does not fit at batch 256)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.tiny, args.device, args.batch, args.new_tokens = True, "cpu", 4, 8
    args.dtype = args.dtype or ("float16" if args.device.startswith("cuda") else "float32")
    return args


def main(argv: list[str]) -> int:
    global OUT_PATH
    args = parse(argv)
    OUT_PATH = args.out
    if args.out:
        open(args.out, "w").close()
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    bandwidth = copy_bandwidth(args.device)
    log(f"# python -m benchmarks gpu {' '.join(argv)}")
    log(f"# commit {commit()}; {versions()}")
    log(f"# host: {cpu_name()}; device {name}, {args.dtype}; copy bandwidth {bandwidth / 1e9:.0f} GB/s")
    flash_check(args.device)
    log()
    for kind in args.models.split(","):
        with tempfile.TemporaryDirectory() as folder:
            {"whisper": bench_whisper, "bart": bench_bart}[kind](args, folder, bandwidth)
    return 0
