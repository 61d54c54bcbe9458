"""Ray, found and started: a clear message where it is not installed, a local Ray by default."""

from __future__ import annotations

import logging

INSTALL_HINT = "this needs Ray: pip install 'scriba[ray]'"


def need_ray():
    """The `ray` module, or an ImportError that says how to get it."""
    try:
        import ray
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return ray


def connect(address: str | None = None, num_cpus: int | None = None):
    """Join the Ray cluster at `address` ("auto": the one this machine belongs to), or start a
    local one (with `num_cpus` CPUs: default all). Ray's own progress bars and INFO logs stay
    quiet: `scriba batch` draws its own bar."""
    ray = need_ray()
    if not ray.is_initialized():
        # Starting our own local Ray is routine: its note on token authentication is not for users.
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
        local = {"include_dashboard": False, "num_cpus": num_cpus} if address is None else {}
        ray.init(address=address, logging_level=logging.WARNING, **local)
    import ray.data

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "bars disabled": we know
    return ray


def cluster_gpus(ray) -> int:
    return int(ray.cluster_resources().get("GPU", 0))


def cluster_cpus(ray) -> int:
    return int(ray.cluster_resources().get("CPU", 1))
