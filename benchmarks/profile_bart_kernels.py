"""Where bench_bart's 32-256 workload spends its time, by kernel kind: one warm run timed and one
profiled of Scriba and of transformers generate() (batched, padded), the same random bart-base weights."""

import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_bart import BART_BASE, hf_generate, make_prompts
from torch.profiler import ProfilerActivity, profile
from transformers import BartConfig, BartForConditionalGeneration

from scriba import Engine, SamplingParams

torch.manual_seed(0)
model = BartForConditionalGeneration(BartConfig(**BART_BASE)).eval()
folder = tempfile.mkdtemp()
model.save_pretrained(folder)
engine = Engine(folder, device="cpu", dtype="float32", max_num_seqs=256)
prompts = make_prompts(32, 32, 256, 0)
reqs = [{"prompt_token_ids": p} for p in prompts]
params = SamplingParams(max_tokens=32, ignore_eos=True)
for name, fn in [
    ("scriba", lambda: engine.generate(reqs, params)),
    ("transformers", lambda: hf_generate(model, prompts, 32)),
]:
    with torch.inference_mode():
        fn()
        t = time.perf_counter()
        fn()
        wall = time.perf_counter() - t
        with profile(activities=[ProfilerActivity.CPU]) as p:
            fn()
    tot = {e.key: e.self_cpu_time_total / 1e6 for e in p.key_averages()}
    g = sum(v for k, v in tot.items() if k in ("aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm"))
    a = sum(v for k, v in tot.items() if "scaled_dot_product" in k or "flash" in k)
    print(f"{name}: wall {wall:.2f} s; GEMM kernels {g:.2f} s; attention kernels {a:.2f} s")
