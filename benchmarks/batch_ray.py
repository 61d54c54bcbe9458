"""`scriba batch` throughput on this machine: files/s with 1 and 2 engine workers on a local
Ray, against `scriba transcribe` of the same files in one process without Ray (same run).

The corpus is the dev set's short clips, copied `--copies` times under new names. Each job runs
as a user runs it and is timed whole (imports, Ray's start, the engines' loading included):
`scriba batch FOLDER -o OUT.jsonl --workers N`, and `scriba transcribe FILES --format json
--output-dir DIR`. For batch, the time to its first row (OUT polled every 50 ms) is shown too.

    python benchmarks/batch_ray.py [--copies 4] [--workers 1 2] [--files-per-batch 16]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "dev_speech", "short")


def corpus(folder: str, copies: int) -> list[str]:
    clips = sorted(glob.glob(os.path.join(DATA, "*")))
    for k in range(copies):
        for clip in clips:
            shutil.copy(clip, os.path.join(folder, f"{k}_{os.path.basename(clip)}"))
    return sorted(glob.glob(os.path.join(folder, "*")))


def run_job(folder: str, out: str, workers: int, files_per_batch: int) -> tuple[float, float, int]:
    """(whole seconds, seconds to the first row, rows)."""
    command = [
        sys.executable,
        "-m",
        "scriba.app.cli.main",
        "batch",
        folder,
        "-o",
        out,
        "--workers",
        str(workers),
    ]
    command += ["--files-per-batch", str(files_per_batch)]
    start, first = time.perf_counter(), None
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while job.poll() is None:
        if first is None and _rows(out):
            first = time.perf_counter() - start
        time.sleep(0.05)
    whole = time.perf_counter() - start
    assert job.returncode == 0, "the job failed"
    return whole, first or whole, _rows(out)


def _rows(path: str) -> int:
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for line in f if line.endswith("\n"))


def one_process(paths: list[str], out_dir: str) -> float:
    """Seconds for `scriba transcribe` of every file, whole."""
    command = [sys.executable, "-m", "scriba.app.cli.main", "transcribe", *paths, "--format", "json"]
    start = time.perf_counter()
    subprocess.run(command + ["--output-dir", out_dir], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--files-per-batch", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "clips")
        os.makedirs(folder)
        paths = corpus(folder, args.copies)
        clips = len(paths) // args.copies
        print(f"{len(paths)} files ({clips} dev clips x {args.copies}), {os.cpu_count()} CPUs")
        for workers in args.workers:
            out = os.path.join(tmp, f"out{workers}.jsonl")
            whole, first, rows = run_job(folder, out, workers, args.files_per_batch)
            print(
                f"scriba batch --workers {workers}: {rows} rows in {whole:.1f} s = "
                f"{rows / whole:.2f} files/s "
                f"(first row after {first:.1f} s)"
            )
        seconds = one_process(paths, os.path.join(tmp, "json"))
        print(
            f"scriba transcribe, one process, no Ray: {len(paths)} files in {seconds:.1f} s = "
            f"{len(paths) / seconds:.2f} files/s"
        )


if __name__ == "__main__":
    main()
