"""`scriba batch`: many files through a pool of engines on Ray Data, one row per file.

    files/globs/folders/manifests -> paths -> (skip those OUT already has)
      -> Ray Data: blocks of paths -> Transcriber actors (one engine each; each call reads and
         transcribes a batch of files together) -> rows appended to OUT as they arrive

A worker that dies is restarted by Ray and its batch run again; rows reach OUT only from the
driver, once per file, so every file is transcribed exactly once in the output.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass

from scriba.app.cluster import ray_runtime
from scriba.app.cluster.inputs import expand_inputs, is_remote
from scriba.app.cluster.results_file import ResultsFile
from scriba.app.cluster.transcriber import Transcriber, error_row
from scriba.transcription.options import TranscribeOptions


@dataclass
class BatchPlan:
    workers: int | None = None  # engine actors (default: one per GPU, else one)
    cpus_per_worker: float | None = None  # default: the cluster's CPUs shared among the workers
    files_per_batch: int = 16  # files one engine call transcribes together
    ray_address: str | None = None  # None: start a local Ray


@dataclass
class BatchReport:
    done: int  # rows written in this run
    failed: int  # of them, files that failed
    skipped: int  # already in the output
    seconds: float

    def line(self, output: str) -> str:
        rate = self.done / self.seconds if self.seconds else 0.0
        files = f"{self.done} file{'s' * (self.done != 1)}"
        return (
            f"{files} in {self.seconds:.1f} s ({rate:.2f} files/s), {self.failed} failed, "
            f"{self.skipped} already done -> {output}"
        )


def run_batch(inputs, output, options: TranscribeOptions | None = None, plan=None, progress=None):
    """Transcribe every input into `output` (.jsonl or .parquet) with `options`; returns a
    BatchReport."""
    plan, started = plan or BatchPlan(), time.perf_counter()
    results = ResultsFile(output)
    paths = expand_inputs(inputs)
    finished = results.finished()
    todo = [p for p in paths if p not in finished]
    missing = [p for p in todo if not is_remote(p) and not os.path.isfile(p)]
    found = [p for p in todo if is_remote(p) or os.path.isfile(p)]
    results.open(set(todo))
    failed = 0
    try:
        for path in missing:
            results.write(error_row(path, f"no such file: {path}"))
        bar = _bar(len(todo), progress)
        bar.update(len(missing))
        for row in _transcribed_rows(found, options or TranscribeOptions(), plan):
            results.write(row)
            failed += bool(row.get("error"))
            bar.update(1)
        bar.close()
    finally:
        results.close()
    failed += len(missing)
    return BatchReport(len(todo), failed, len(paths) - len(todo), time.perf_counter() - started)


def _transcribed_rows(paths, options: TranscribeOptions, plan: BatchPlan):
    """Rows as the workers finish them (not in input order)."""
    if not paths:
        return
    ray = ray_runtime.connect(plan.ray_address)
    workers, resources, config = _worker_resources(ray, plan, options.engine)
    options = dataclasses.replace(options, engine=config, on_error="report")
    workers = min(workers, _blocks(paths, plan))  # no idle engines for a short job
    dataset = ray.data.from_items([{"path": p} for p in paths], override_num_blocks=_blocks(paths, plan))
    dataset = dataset.map_batches(
        Transcriber,
        fn_constructor_kwargs={"options": options},
        batch_size=plan.files_per_batch,
        # Two calls at once per engine: one's files fill the batch while the other's last finish
        compute=ray.data.ActorPoolStrategy(
            size=workers, max_concurrent_calls_per_actor=2, enable_true_multi_threading=True
        ),
        **resources,
    )
    # No prefetching: a block is written as soon as it is done, not when the next one is
    for batch in dataset.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=0):
        yield from (json.loads(row) for row in batch["row"])


def _worker_resources(ray, plan: BatchPlan, engine_config: dict):
    """(workers, Ray resources per worker, engine config): one GPU each where the cluster has
    GPUs, else an equal share of its CPUs, which the engine uses as its threads."""
    gpus = ray_runtime.cluster_gpus(ray)
    device = str(engine_config.get("device") or "auto")
    if device.startswith("cuda") or (device == "auto" and gpus):
        workers = plan.workers or max(gpus, 1)
        return workers, {"num_gpus": 1, "num_cpus": plan.cpus_per_worker or 1}, engine_config
    workers = plan.workers or 1
    cpus = plan.cpus_per_worker or max(ray_runtime.cluster_cpus(ray) // workers, 1)
    threads = engine_config.get("num_threads") or max(int(cpus), 1)
    config = {**engine_config, "device": "cpu", "num_threads": threads}
    return workers, {"num_cpus": cpus}, config


def _blocks(paths: list[str], plan: BatchPlan) -> int:
    return max(1, -(-len(paths) // plan.files_per_batch))


class _NoBar:
    def update(self, n: int) -> None: ...
    def close(self) -> None: ...


def _bar(total: int, progress: bool | None):
    """A tqdm bar of files on stderr (default: when stderr is a terminal)."""
    if progress is False or (progress is None and not sys.stderr.isatty()):
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="file", desc="transcribing", file=sys.stderr)
