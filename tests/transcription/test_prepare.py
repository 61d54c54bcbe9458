"""`scriba prepare`: after it, a first transcription compiles and loads no kernel of its own.

The oracle is what numba holds: each kernel's signatures in the process (compiled, or read from
numba's cache). In a fresh process, `scriba prepare` then a transcription with word timestamps, the
VAD and sampled fallbacks: no kernel gains a signature during the transcription.
"""

import subprocess
import sys

import paths

FIRST_RUN = """
import sys
from numba.core.dispatcher import Dispatcher
from scriba.app.cli.main import main


def kernels():
    \"\"\"Each of Scriba's numba kernels with the signatures it holds in this process.\"\"\"
    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("scriba"):
            for attribute, value in vars(module).items():
                if isinstance(value, Dispatcher):
                    found[f"{name}.{attribute}"] = set(value.signatures)
    return found


assert main(["prepare", "--model", "tiny.en"]) == 0
before = kernels()
import scriba
result = scriba.transcribe(sys.argv[1], word_timestamps=True, vad_filter=True, temperature=(0.0, 0.4),
                           best_of=2, compression_ratio_threshold=0.5)
assert result.segments[0].words, "word timestamps were asked for"
after = kernels()
print("KERNELS", len(after))
print("LOADED", ",".join(sorted(k for k in after if after[k] - before.get(k, set()))))
"""


def first_run(code: str) -> list[str]:
    run = subprocess.run([sys.executable, "-c", code, paths.JFK], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_a_transcription_after_prepare_loads_no_kernel():
    lines = first_run(FIRST_RUN)
    assert lines[0].startswith("compiling the CPU kernels for this machine")
    assert any(line.strip().startswith("tiny.en: ready (") for line in lines)
    assert int(lines[-2].split()[1]) >= 8  # the decoder step's, attention's, the rules', words', VAD's
    assert lines[-1] == "LOADED ", f"loaded by the first transcription: {lines[-1][len('LOADED '):]}"


def test_a_kernel_prepare_did_not_load_is_seen():
    """The check above can fail: a kernel taking a type prepare never gave it is seen."""
    code = FIRST_RUN.replace("after = kernels()", "from scriba.transcription.words import dtw\n"
                             "dtw(np.zeros((2, 3), np.float32))\nafter = kernels()")
    lines = first_run(code.replace("import sys\n", "import sys\nimport numpy as np\n", 1))
    assert lines[-1] == "LOADED scriba.transcription.words._dtw_trace"
