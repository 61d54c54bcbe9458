"""Models on demand (runtime/loops.py): an unload waits for the callers holding the model, a
caller that asks meanwhile waits and loads it again, and the process gives the memory back."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import paths

import scriba
from scriba.runtime.loops import acquire_loop, get_loop, loaded_models, release_loop, resident, unload

SILENCE = {"audio": (np.zeros(16000, np.float32), 16000)}


def test_an_unload_waits_for_the_leases_and_a_new_caller_reloads(tiny_whispers):
    model = tiny_whispers["english"][0]
    held = acquire_loop(model, num_kv_blocks=200)
    assert model in loaded_models() and [r.leases for r in resident() if r.model == model] == [1]
    unloaded = threading.Event()
    threading.Thread(target=lambda: unload(model) and unloaded.set(), daemon=True).start()
    time.sleep(0.5)
    assert not unloaded.is_set()  # the leased model stays: its caller still decodes with it
    out = held.generate([SILENCE], [scriba.SamplingParams(max_tokens=2)])
    assert out[0].finished
    asked = []
    threading.Thread(target=lambda: asked.append(get_loop(model, num_kv_blocks=200)), daemon=True).start()
    release_loop(held)
    assert unloaded.wait(30) and not held._thread.is_alive()
    deadline = time.time() + 60
    while not asked and time.time() < deadline:
        time.sleep(0.05)
    assert asked and asked[0] is not held
    assert asked[0].generate([SILENCE], [scriba.SamplingParams(max_tokens=2)])[0].finished
    assert unload(model) and not unload(model) and model not in loaded_models()


def test_a_transcription_holds_its_model_until_it_ends(tiny_whispers):
    model = tiny_whispers["english"][0]
    segments, _ = scriba.transcribe_stream(np.zeros(16000 * 40, np.float32), model=model, vad_filter=False)
    assert [r.leases for r in resident() if r.model == model] == [1]
    list(segments)
    assert [r.leases for r in resident() if r.model == model] == [0]
    scriba.transcribe(np.zeros(16000, np.float32), model=model)
    assert [r.leases for r in resident() if r.model == model] == [0] and unload(model)


MEMORY = """
import gc, os, sys
import numpy as np
import scriba
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20
scriba.transcribe(np.zeros(16000, np.float32)); scriba.unload(); gc.collect()
before, after = rss(), []
for _ in range(3):
    loaded = scriba.transcribe(sys.argv[1]).text
    scriba.unload(); gc.collect(); after.append(rss())
print(before, max(after), scriba.loaded_models(), loaded)
"""


def test_the_memory_of_an_unloaded_model_goes_back():
    """A loaded tiny.en adds about 350 MB; unloaded three times, the process stays within 100 MB
    of its size before (docs/server.md states the margin)."""
    out = subprocess.run([sys.executable, "-c", MEMORY, paths.JFK], capture_output=True, text=True,
                         timeout=300, env=os.environ | {"PYTHONWARNINGS": "ignore"})
    before, after, models, *text = out.stdout.split(maxsplit=3)
    assert models == "[]" and "fellow Americans" in text[0], out.stderr
    assert float(after) - float(before) < 100, (before, after)
