"""Large freed blocks (a step's logits) are reused from the heap instead of being mapped and
page-faulted afresh every step."""

import os
import subprocess
import sys

PROBE = """
import ctypes, resource
from scriba.engine.host_heap import reuse_freed_memory
print(reuse_freed_memory())
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
size = 256 * 51864 * 4  # a step's logits: 256 rows of Whisper's vocabulary, float32 (53 MB)
faults = []
for _ in range(5):  # a step: the logits and a temporary of the same size, written, freed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [libc.malloc(size) for _ in range(2)]
    for block in blocks:
        ctypes.memset(block, 1, size)
        libc.free(block)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(max(faults[-2:]))
"""


def _faults(tuning: str) -> tuple[str, int]:
    env = {**os.environ, "SCRIBA_HEAP_TUNING": tuning}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    applied, faults = out.stdout.split()
    return applied, int(faults)


def test_freed_logits_are_reused_not_refaulted():
    applied, tuned = _faults("1")
    off, untuned = _faults("0")
    assert (applied, off) == ("True", "False")
    pages = 2 * 256 * 51864 * 4 // 4096
    assert untuned > pages // 2  # glibc maps it afresh every time
    assert tuned < pages // 20  # the heap's pages are already there
