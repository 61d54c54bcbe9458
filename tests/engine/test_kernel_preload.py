"""engine/kernel_preload.py: the compiled kernels a first CPU step needs (numba's paged decode
attention for the cache's dtype, Whisper's timestamp rules; with int8 weights the numba decode
step and its logits) are loaded on a thread while the
first request is read. Oracle: the kernels' own dispatchers, in a fresh process (where nothing
was loaded before): the first transcription adds no overload to what the preload loaded."""

import subprocess
import sys

import pytest

SCRIPT = """
import sys, threading
import scriba
from scriba import Engine
from scriba.models.decoder_step import kernel as step
from scriba.kernels import cpu_paged_attention as attention
from scriba.kernels import cpu_vnni as products
from scriba.whisper import timestamp_rules_cpu as rules

exact = {} if sys.argv[2] else {"dtype": "float32"}  # no quantization asked: the exact mode
engine = Engine(kv_cache_dtype=sys.argv[1], quantization=sys.argv[2] or None, **exact)
for t in threading.enumerate():
    if t.name == "scriba-kernel-preload":
        t.join()
kernel = attention.attention_kernel if sys.argv[1] == "auto" else attention.attention_kernel_8bit
kernels = [kernel, rules._apply]
if engine.runner.decode_step is not None:  # its logits: VNNI products where the host has them
    vnni = engine.runner.decode_step.products == "vnni"
    kernels += [step.decoder_step, products.vnni_matvec if vnni else step.int8_matvec]
loaded = [list(k.overloads) for k in kernels]
out = engine.generate([{"audio": "assets/jfk.flac"}], scriba.SamplingParams(max_tokens=8))
assert out[0].outputs[0].token_ids, out
print([len(sigs) for sigs in loaded], [list(k.overloads) == sigs for k, sigs in zip(kernels, loaded)])
"""


@pytest.mark.parametrize(
    "kv_cache_dtype, quantization, loaded",
    [("auto", "", "[1, 1] [True, True]"), ("int8", "int8", "[1, 1, 1, 1] [True, True, True, True]")],
)
def test_the_first_step_finds_its_kernels_loaded(kv_cache_dtype, quantization, loaded):
    args = [sys.executable, "-c", SCRIPT, kv_cache_dtype, quantization]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.split("\n")[-2] == loaded
