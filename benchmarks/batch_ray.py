"""`scriba batch` throughput on this machine: files/s with 1 and 2 engine workers on a local
Ray, against offline batched transcribe() of the same files in one process (same run).

The corpus is the dev set's short clips, copied `--copies` times under new names. For each
worker count the job runs as a user runs it (`scriba batch FOLDER -o OUT.jsonl --workers N`) and
is timed whole (Ray's start and the engines' loading included) and in its steady part (from its
first row to its last, rows polled from OUT every 50 ms).

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
    """(whole seconds, files/s from the first rows to the last, rows)."""
    command = [sys.executable, "-m", "scriba.app.cli", "batch", folder, "-o", out, "--workers", str(workers)]
    command += ["--files-per-batch", str(files_per_batch)]
    start, first, first_rows, rows = time.perf_counter(), None, 0, 0
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while job.poll() is None:
        rows = _rows(out)
        if rows and first is None:
            first, first_rows = time.perf_counter(), rows
        time.sleep(0.05)
    end = time.perf_counter()
    assert job.returncode == 0, "the job failed"
    rows = _rows(out)
    steady = (rows - first_rows) / (end - first) if first and end > first else 0.0
    return end - start, steady, rows


def _rows(path: str) -> int:
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for line in f if line.endswith("\n"))


def offline(paths: list[str]) -> float:
    """Seconds for transcribe() of every file in one call, the model already loaded."""
    import scriba

    scriba.transcribe(paths[:2])
    start = time.perf_counter()
    scriba.transcribe(paths)
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
            whole, steady, rows = run_job(folder, out, workers, args.files_per_batch)
            print(
                f"scriba batch --workers {workers}: {rows} rows; whole job {whole:.1f} s = "
                f"{rows / whole:.2f} files/s; steady (after the first rows) {steady:.2f} files/s"
            )
        seconds = offline(paths)
        print(f"offline transcribe() of the same files, one process: {len(paths) / seconds:.2f} files/s")


if __name__ == "__main__":
    main()
