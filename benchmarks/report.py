"""What a suite prints, headed by what produced it: the command, the commit, the library versions and
the host's CPU with the vector extensions that decide its matrix speed. `--out` writes the same lines
to a results file."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import subprocess

# The libraries whose versions a result depends on (those installed are named in the header).
LIBRARIES = (
    "scriba", "torch", "transformers", "numba", "openvino", "onnxruntime", "triton",
    "faster-whisper", "ctranslate2", "openvino-genai", "vllm", "whisper-live",
)  # fmt: skip
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_name() -> str:
    """The CPU's model name and vector extensions (the same "AMD EPYC" may be an AVX2-only Zen 3
    or a Zen 4 with AVX-512, VNNI and bfloat16)."""
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return platform.processor() or platform.machine()
    fields = (line.split(":", 1) for line in info.splitlines() if ":" in line)
    lines = {key.strip(): value.strip() for key, value in fields}
    flags = set(lines.get("flags", "").split())
    extensions = ", ".join(f for f in VECTOR_FLAGS if f in flags) or "no AVX2"
    return f"{lines.get('model name', platform.machine())} ({extensions})"


def commit() -> str:
    """The checkout's commit, with "+changes" when the working tree differs from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def versions() -> str:
    found = []
    for name in LIBRARIES:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


class Report:
    """report(line) prints a line at once and keeps it; save(path) writes every line kept."""

    def __init__(self, suite: str, argv: list[str]) -> None:
        self.lines: list[str] = []
        self(f"# python -m benchmarks {suite} {' '.join(argv)}".rstrip())
        self(f"# commit {commit()}; Python {platform.python_version()}; {versions()}")
        self(f"# host: {cpu_name()}, {len(os.sched_getaffinity(0))} CPUs")

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def save(self, path: str | None) -> None:
        if path:
            with open(path, "w") as f:
                f.write("\n".join(self.lines) + "\n")


def suite_parser(suite: str, doc: str, data: bool = False) -> argparse.ArgumentParser:
    """A suite's options: its first doc line as the description, `--data` where it reads speech."""
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks {suite}", description=doc.splitlines()[0])
    if data:
        parser.add_argument("--data", default=None, help="a folder in data.py's layout (default: jfk.flac)")
    return parser
