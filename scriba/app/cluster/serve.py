"""`scriba serve --ray`: the OpenAI-compatible server (server/app.py) as a Ray Serve deployment.

Each replica builds the same FastAPI app with its own engines (one GPU, or a share of the CPUs),
and loads its first model before it counts as ready. Serve's proxy spreads requests over the
replicas; within a replica they join one continuous batch, so a replica takes many requests at
once (max_ongoing_requests), not Serve's default of a few. Autoscaling follows Serve's
settings: a fixed number of replicas, or between a minimum and a maximum, aiming at a number of
ongoing requests per replica.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ray import serve

from scriba.app.cluster import ray_runtime


@dataclass
class ReplicaPlan:
    replicas: int | None = 1  # a fixed number (None: autoscale between the two below)
    min_replicas: int = 1
    max_replicas: int = 1
    target_ongoing_requests: float = 32  # per replica, what autoscaling aims at
    max_ongoing_requests: int = 256  # per replica; past it requests wait at the proxy
    cpus_per_replica: float | None = None  # default: the CPUs shared out (1 with a GPU)
    ray_address: str | None = None
    options: dict = field(default_factory=dict)  # Ray Serve deployment options, as given


@serve.ingress()
class ScribaReplica:
    """One replica: the server's app over its own engines (the app is built on the replica)."""

    def __init__(self, served_args: dict, settings_args: dict):
        from scriba.app.server.models import ServedModels

        self.served = ServedModels(**served_args)
        self.served.loop(self.served.whisper[0])  # ready only once the first model is loaded
        self.settings_args = settings_args

    def __serve_build_asgi_app__(self):
        from scriba.app.server.app import ServerSettings, asgi_app

        return asgi_app(self.served, ServerSettings(**self.settings_args), preload=False)


def build(served_args: dict, settings_args: dict, plan: ReplicaPlan, gpus: int, cpus: int):
    """The bound Serve application: resources and scaling per `plan` on a cluster with these
    GPUs and CPUs (each replica takes a GPU when there are any)."""
    most = plan.replicas or plan.max_replicas
    share = plan.cpus_per_replica or (1 if gpus else max(cpus // most, 1))
    actor = {"num_cpus": share, "num_gpus": 1 if gpus else 0}
    config = dict(served_args.get("engine_config", {}))
    if not gpus:
        config = {**config, "device": "cpu", "num_threads": config.get("num_threads") or max(int(share), 1)}
    served_args = {k: v for k, v in served_args.items() if k != "engine_config"} | config
    scaling = (
        {"num_replicas": plan.replicas}
        if plan.replicas
        else {
            "autoscaling_config": {
                "min_replicas": plan.min_replicas,
                "max_replicas": plan.max_replicas,
                "target_ongoing_requests": plan.target_ongoing_requests,
            }
        }
    )
    deployment = serve.deployment(ScribaReplica).options(
        name="scriba",
        ray_actor_options=actor,
        max_ongoing_requests=plan.max_ongoing_requests,
        **scaling,
        **plan.options,
    )
    return deployment.bind(served_args, settings_args)


def start(served_args: dict, settings_args: dict, plan: ReplicaPlan, host: str, port: int):
    """Deploy on the cluster (or a local Ray) and return once every replica is ready."""
    ray = ray_runtime.connect(plan.ray_address)
    serve.start(http_options={"host": host, "port": port})
    gpus, cpus = ray_runtime.cluster_gpus(ray), ray_runtime.cluster_cpus(ray)
    app = build(served_args, settings_args, plan, gpus, cpus)
    serve.run(app, name="scriba", route_prefix="/")
