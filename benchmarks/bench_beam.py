"""Beam-4 summarization: Scriba vs transformers generate() on a random bart-base-shaped BART.

The settings are facebook/bart-large-cnn's (4 beams, length penalty 2.0, no-repeat 3-gram,
early stopping), with --new-tokens as the length limit (a random model rarely ends on its
own). The same requests (mixed input lengths, as articles are) go through Scriba and through
transformers batched, in one run, both warmed up first; the best of --repeats runs counts.
Prints requests/s, the ratio, and how many best hypotheses agree with transformers'.

    python benchmarks/bench_beam.py                      # 16 requests, lengths 128..1024, 48 tokens
    python benchmarks/bench_beam.py --num-requests 8 --repeats 1
    python benchmarks/bench_beam.py --device cuda --dtype float16 --num-requests 128   # on a GPU
"""

from __future__ import annotations

import argparse
import os
import tempfile

import torch
from bench_bart import BART_BASE, make_prompts, pad_batch, timed
from machine import cpu_name
from transformers import BartConfig, BartForConditionalGeneration

from scriba import Engine, SamplingParams

CNN = dict(length_penalty=2.0, no_repeat_ngram_size=3, early_stopping=True)


def hf_beam(model, prompts, new_tokens: int) -> list[list[int]]:
    ids, mask = pad_batch(prompts)
    out = model.generate(
        input_ids=ids.to(model.device),
        attention_mask=mask.to(model.device),
        num_beams=4,
        max_new_tokens=new_tokens + 1,
        min_length=0,  # + 1: the forced <BOS>
        forced_bos_token_id=0,
        forced_eos_token_id=None,
        do_sample=False,
        **CNN,
    )
    eos = BART_BASE["eos_token_id"]
    rows = []
    for row in out.tolist():
        gen = row[2:]  # after <DEC><BOS>
        rows.append(
            gen[: gen.index(eos) + 1] if eos in gen else [t for t in gen if t != BART_BASE["pad_token_id"]]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--num-requests", type=int, default=16)
    parser.add_argument("--min-len", type=int, default=128)
    parser.add_argument("--max-len", type=int, default=1024)
    parser.add_argument("--new-tokens", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: both sides on the GPU")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = BartForConditionalGeneration(BartConfig(**BART_BASE)).eval()
    folder = tempfile.mkdtemp(prefix="bench-beam-")
    model.save_pretrained(folder)
    model = model.to(args.device, getattr(torch, args.dtype))
    engine = Engine(folder, device=args.device, dtype=args.dtype)
    prompts = make_prompts(args.num_requests, args.min_len, args.max_len, args.seed)
    params = SamplingParams(beam_width=4, max_tokens=args.new_tokens, **CNN)
    requests = [{"prompt_token_ids": p} for p in prompts]
    best = lambda fn: min((timed(fn) for _ in range(args.repeats)), key=lambda r: r[1])  # noqa: E731

    engine.generate(requests, params)
    outs, t_scriba = best(lambda: engine.generate(requests, params))
    with torch.inference_mode():
        hf_beam(model, prompts, args.new_tokens)
        ref, t_hf = best(lambda: hf_beam(model, prompts, args.new_tokens))
    same = sum(o.outputs[0].token_ids == r for o, r in zip(outs, ref))
    lengths = [len(p) for p in prompts]
    n = len(prompts)
    print(
        f"machine: {cpu_name()}, {os.cpu_count()} cores, "
        f"{torch.get_num_threads()} torch threads, torch {torch.__version__}"
    )
    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    print(f"model: random bart-base shape (d_model 768, 6+6 layers), {args.dtype}, {where}")
    print(
        f"requests: {n}, encoder lengths {min(lengths)}..{max(lengths)} "
        f"(mean {sum(lengths) / n:.0f}); 4 beams, "
        f"length penalty 2.0, no-repeat 3-gram, early stopping, up to {args.new_tokens} tokens"
    )
    print(f"scriba                  {t_scriba:8.2f} s  {n / t_scriba:6.2f} requests/s")
    print(f"transformers batched    {t_hf:8.2f} s  {n / t_hf:6.2f} requests/s")
    print(f"ratio scriba / transformers: {t_hf / t_scriba:.2f}x")
    print(f"best hypotheses identical to transformers': {same}/{n}")


if __name__ == "__main__":
    main()
