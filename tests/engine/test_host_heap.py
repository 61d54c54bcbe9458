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


ARENA_PROBE = """
import ctypes, threading
from scriba.engine.host_heap import reuse_freed_memory
reuse_freed_memory()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
together = threading.Barrier(12)
def worker():  # a request thread: allocates while the others are alive too
    block = libc.malloc(1 << 20)
    together.wait()
    libc.free(block)
threads = [threading.Thread(target=worker) for _ in range(12)]
[t.start() for t in threads]
[t.join() for t in threads]
libc.malloc_stats()  # one "Arena N:" paragraph per arena, on stderr
"""


def _arenas(tuning: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["SCRIBA_HEAP_TUNING"] = tuning
    run = subprocess.run([sys.executable, "-c", ARENA_PROBE], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return sum(line.startswith("Arena ") for line in run.stderr.splitlines())


def test_request_threads_share_a_few_arenas():
    from scriba.engine.host_heap import ARENAS

    assert _arenas("0") > ARENAS + 4  # glibc's default: a new arena per thread, up to 8 per core
    assert 1 <= _arenas("1") <= ARENAS
