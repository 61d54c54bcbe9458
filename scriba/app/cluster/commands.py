"""The command line's Ray commands: `scriba batch` and `scriba serve --ray`. Ray itself is
imported only when one of them runs, so the rest of the command line works without it."""

from __future__ import annotations

import argparse
import sys

from scriba.app.cli.engine_options import add_engine_options, engine_options
from scriba.app.cli.transcribe_flags import add_transcribe_flags, transcribe_options


def add_ray_serve_options(parser: argparse.ArgumentParser) -> None:
    ray = parser.add_argument_group("on Ray Serve (pip install 'scriba[ray]')")
    ray.add_argument("--ray", action="store_true", help="serve as a Ray Serve deployment")
    ray.add_argument("--replicas", type=int, default=None, help="a fixed number of replicas (default 1)")
    ray.add_argument("--min-replicas", type=int, default=None, help="autoscale from this many ...")
    ray.add_argument("--max-replicas", type=int, default=None, help="... up to this many")
    ray.add_argument("--target-ongoing-requests", type=float, default=32, help="autoscaling aims at this")
    ray.add_argument("--max-ongoing-requests", type=int, default=256, help="per replica")
    ray.add_argument("--cpus-per-replica", type=float, default=None, help="default: the CPUs shared out")
    ray.add_argument("--ray-address", default=None, help="auto or HOST:PORT (default: a local Ray)")


def add_batch_parser(sub) -> None:
    bt = sub.add_parser(
        "batch", help="transcribe many files on Ray (a local Ray, or a cluster) into one JSONL/Parquet file"
    )
    bt.add_argument("inputs", nargs="+", help="audio files, folders, globs, manifests (.txt)")
    bt.add_argument("--output", "-o", required=True, help="OUT.jsonl or OUT.parquet (rows there are kept)")
    bt.add_argument("--workers", type=int, default=None, help="engines (default: one per GPU, else one)")
    bt.add_argument("--cpus-per-worker", type=float, default=None, help="default: the CPUs shared out")
    bt.add_argument("--files-per-batch", type=int, default=16, help="files one engine call takes together")
    bt.add_argument("--ray-address", default=None, help="auto or HOST:PORT (default: a local Ray)")
    add_transcribe_flags(bt)
    add_engine_options(bt)


def run_batch(args: argparse.Namespace) -> int:
    from scriba.app.cluster.ray_runtime import need_ray

    need_ray()  # before any work: say at once when Ray is missing
    from scriba.app.cluster.batch import BatchPlan
    from scriba.app.cluster.batch import run_batch as batch

    engine = engine_options(args)
    options = transcribe_options(args, engine)  # checked here: a typo fails once, not in every file's row
    plan = BatchPlan(args.workers, args.cpus_per_worker, args.files_per_batch, args.ray_address)
    report = batch(args.inputs, args.output, options, plan)
    print(report.line(args.output), file=sys.stderr)
    return 0


def run_serve_on_ray(args: argparse.Namespace, config: dict, allow: list[str]) -> int:
    from scriba.app.cluster.ray_runtime import need_ray

    if args.ui:
        raise ValueError("--ui is not served on Ray (a page's session needs one process): run `scriba ui`")
    need_ray()
    import signal
    import time

    from scriba.app.cluster import serve as on_ray

    autoscale = args.min_replicas is not None or args.max_replicas is not None
    if autoscale and args.replicas is not None:
        raise ValueError("give either --replicas or --min-replicas/--max-replicas, not both")
    low = args.min_replicas or 1
    plan = on_ray.ReplicaPlan(
        replicas=None if autoscale else (args.replicas or 1),
        min_replicas=low,
        max_replicas=max(args.max_replicas or low, low),
        target_ongoing_requests=args.target_ongoing_requests,
        max_ongoing_requests=args.max_ongoing_requests,
        cpus_per_replica=args.cpus_per_replica,
        ray_address=args.ray_address,
    )
    served = {"whisper": args.model or [], "summarizer": args.summarizer, "allow": allow}
    served |= {"max_loaded": args.max_loaded, "ttl": args.model_ttl, "preload": args.preload or ()}
    served |= {"engine_config": config}
    on_ray.start(served, {"api_key": args.api_key}, plan, args.host, args.port)
    where = f"http://{args.host}:{args.port}/v1"
    print(f"scriba: serving on Ray Serve at {where} (Ctrl-C stops)", file=sys.stderr)
    # Ctrl-C and SIGTERM stop it cleanly, also when started as a shell's background job (which
    # inherits SIGINT ignored: Python then never raises KeyboardInterrupt).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        while True:
            time.sleep(3600)
    finally:
        on_ray.serve.shutdown()
