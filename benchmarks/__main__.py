"""One entry point over Scriba's benchmark suites, as `vllm bench` is over vLLM's:

    python -m benchmarks SUITE [options]      (python -m benchmarks SUITE --help: its options)

Every suite prints a header (the command, the commit, the library versions, the host's vector
extensions) and takes `--out FILE` to keep what it printed, and `--smoke` for a run of seconds
on tiny inputs (what CI runs, so that no suite rots). benchmarks/README.md says what each one
measures, how to install the peers and where the speech comes from.
"""

from __future__ import annotations

import importlib
import sys

# suite -> (module, what it measures)
SUITES = {
    "field": ("field", "Whisper on this CPU against faster-whisper and OpenVINO GenAI"),
    "longform": ("longform", "long recordings: Scriba's modes, VAD on and off, against transformers"),
    "server": ("server", "scriba serve against faster-whisper-server and vLLM under 1-16 clients"),
    "realtime": ("realtime", "Realtime transcription sessions at real-time pace: delays, kept up, WER"),
    "cold-start": ("cold_start", "a first transcript in a fresh process, and where its time goes"),
    "summarize": ("summarize", "BART summarization: Scriba against transformers generate()"),
    "diarization": ("diarization", "who spoke when: DER and speaker counts, and the time it adds"),
    "multilingual": ("multilingual", "the multilingual base per language and task against faster-whisper"),
    "gpu": ("gpu", "the GPU path against transformers on real shapes (RTFx, floors, host time)"),
    "gpu-tune": ("gpu_tune", "launch settings of the Triton paged decode on this GPU"),
    "export-hf": ("export_hf", "an offline Whisper as a Hugging Face folder (for the peers' exporters)"),
    "fetch-data": ("fetch_data", "download LibriSpeech test-clean into the suites' --data layout"),
}


def usage() -> str:
    width = max(map(len, SUITES))
    rows = "\n".join(f"  {name:<{width}}  {what}" for name, (_, what) in SUITES.items())
    return f"usage: python -m benchmarks SUITE [options]\n\nsuites:\n{rows}\n"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip() + "\n\n" + usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUITES:
        print(f"benchmarks: unknown suite {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"benchmarks.{SUITES[name][0]}")
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
