"""engine/kernel_preload.py: the compiled kernels a first CPU step needs (numba's paged decode
attention for the cache's dtype, Whisper's timestamp rules) are loaded on a thread while the
first request is read. Oracle: the kernels' own dispatchers, in a fresh process (where nothing
was loaded before): the first transcription adds no overload to what the preload loaded."""

import subprocess
import sys

import pytest

SCRIPT = """
import sys, threading
import scriba
from scriba import Engine
from scriba.kernels import cpu_paged_attention as attention
from scriba.whisper import timestamp_rules_cpu as rules

engine = Engine(kv_cache_dtype=sys.argv[1])
for t in threading.enumerate():
    if t.name == "scriba-kernel-preload":
        t.join()
kernel = attention._attention_kernel if sys.argv[1] == "auto" else attention._attention_kernel_8bit
kernels = [kernel, rules._apply]
loaded = [list(k.overloads) for k in kernels]
out = engine.generate([{"audio": "assets/jfk.flac"}], scriba.SamplingParams(max_tokens=8))
assert out[0].outputs[0].token_ids, out
print([len(sigs) for sigs in loaded], [list(k.overloads) == sigs for k, sigs in zip(kernels, loaded)])
"""


@pytest.mark.parametrize("kv_cache_dtype", ["auto", "int8"])
def test_the_first_step_finds_its_kernels_loaded(kv_cache_dtype):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, kv_cache_dtype], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.split("\n")[-2] == "[1, 1] [True, True]"
