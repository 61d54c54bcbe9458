"""BART summarization's engine work: Scriba against transformers generate() on a random-weight BART
of bart-base's shape (no BART checkpoint can be had offline; the shape sets the speed).

The same requests (mixed encoder lengths, a fixed number of new tokens: Scriba with
`ignore_eos`, transformers with no EOS to stop on) go through Scriba, transformers batched
(one padded batch), and transformers one request at a time, in one run. Both are warmed up
on the whole workload first; the best of --repeats runs counts. Prints generated
tokens/s for each and the ratios, and checks that the greedy tokens agree.

    python -m benchmarks summarize            # 32 requests, lengths 16..1024, 64 new tokens
    python -m benchmarks summarize --num-requests 8 --skip-serial [--out FILE]
    python -m benchmarks summarize --smoke    # a tiny BART, 4 requests
"""

from __future__ import annotations

import random
import tempfile
import time

import torch
from transformers import BartConfig, BartForConditionalGeneration

from benchmarks.report import Report, suite_parser
from scriba import Engine, SamplingParams

BART_BASE = dict(
    vocab_size=50265,
    d_model=768,
    encoder_layers=6,
    decoder_layers=6,
    encoder_attention_heads=12,
    decoder_attention_heads=12,
    encoder_ffn_dim=3072,
    decoder_ffn_dim=3072,
    max_position_embeddings=1024,
    bos_token_id=0,
    pad_token_id=1,
    eos_token_id=2,
    decoder_start_token_id=2,
    forced_bos_token_id=0,
)


def make_prompts(num: int, min_len: int, max_len: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(4, 50000) for _ in range(rng.randint(min_len, max_len))] for _ in range(num)]


def pad_batch(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded input ids and attention mask, as transformers takes a batch."""
    ids = torch.full((len(prompts), max(map(len, prompts))), BART_BASE["pad_token_id"])
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, : len(p)] = torch.tensor(p)
        mask[i, : len(p)] = 1
    return ids, mask


def hf_generate(model, prompts: list[list[int]], new_tokens: int) -> list[list[int]]:
    ids, mask = pad_batch(prompts)
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        decoder_input_ids=torch.tensor([[2, 0]] * len(prompts)),
        max_new_tokens=new_tokens,
        do_sample=False,
        num_beams=1,
        eos_token_id=None,
        forced_eos_token_id=None,
    )
    return out[:, 2:].tolist()


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


TINY = dict(BART_BASE, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=1000)


def parse(argv: list[str]):
    parser = suite_parser("summarize", __doc__)
    parser.add_argument("--num-requests", type=int, default=32)
    parser.add_argument("--min-len", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=1024, help="up to BART's 1024 input positions")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of each; the best counts")
    parser.add_argument("--skip-serial", action="store_true", help="skip transformers one request at a time")
    parser.add_argument("--smoke", action="store_true", help="a tiny BART, 4 short requests, one run")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.smoke:
        args.num_requests, args.max_len, args.new_tokens, args.repeats = 4, 64, 8, 1
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    say = Report("summarize", argv)
    torch.manual_seed(args.seed)
    shape = TINY if args.smoke else BART_BASE
    model = BartForConditionalGeneration(BartConfig(**shape)).eval()
    folder = tempfile.mkdtemp(prefix="bench-bart-")
    model.save_pretrained(folder)
    engine = Engine(folder, device="cpu", dtype="float32", max_num_seqs=256)
    prompts = make_prompts(args.num_requests, args.min_len, args.max_len, args.seed)
    if args.smoke:
        prompts = [[t % shape["vocab_size"] for t in p] for p in prompts]
    params = SamplingParams(max_tokens=args.new_tokens, ignore_eos=True)
    total = args.num_requests * args.new_tokens
    # Both warmed up on the whole workload (first passes pay page faults and allocator growth),
    # then the best of --repeats timed runs of each.
    requests = [{"prompt_token_ids": p} for p in prompts]
    best = lambda fn: min((timed(fn) for _ in range(args.repeats)), key=lambda r: r[1])  # noqa: E731
    engine.generate(requests, params)
    outs, t_scriba = best(lambda: engine.generate(requests, params))
    with torch.inference_mode():
        hf_generate(model, prompts, args.new_tokens)
        hf_batched, t_batched = best(lambda: hf_generate(model, prompts, args.new_tokens))
        t_serial = None
        if not args.skip_serial:
            _, t_serial = timed(lambda: [hf_generate(model, [p], args.new_tokens) for p in prompts])
    same = sum(o.outputs[0].token_ids == ref for o, ref in zip(outs, hf_batched))
    lengths = [len(p) for p in prompts]
    say(f"torch threads {torch.get_num_threads()}; random BART, d_model {shape['d_model']}, float32, CPU")
    say(
        f"requests: {args.num_requests}, encoder lengths {min(lengths)}..{max(lengths)} "
        f"(mean {sum(lengths) / len(lengths):.0f}), {args.new_tokens} new tokens each"
    )
    say(f"scriba                     {t_scriba:8.2f} s  {total / t_scriba:8.1f} tok/s")
    say(f"transformers batched       {t_batched:8.2f} s  {total / t_batched:8.1f} tok/s")
    if t_serial is not None:
        say(f"transformers one-by-one    {t_serial:8.2f} s  {total / t_serial:8.1f} tok/s")
    say(f"ratio scriba / transformers batched:    {t_batched / t_scriba:.2f}x")
    if t_serial is not None:
        say(f"ratio scriba / transformers one-by-one: {t_serial / t_scriba:.2f}x")
    say(f"greedy outputs identical to transformers: {same}/{len(prompts)}")
    say.save(args.out)
    return 0 if same == len(prompts) else 1
