"""How engines are laid on a cluster: one per GPU where there are GPUs, else a share of the CPUs
(used as the engine's threads); the same for Serve replicas. No Ray cluster is started."""

from __future__ import annotations

from scriba.app.cluster import serve
from scriba.app.cluster.batch import BatchPlan, _worker_resources


class Cluster:
    """Stands in for the `ray` module: only cluster_resources() is asked."""

    def __init__(self, cpus: int, gpus: int = 0):
        self.resources = {"CPU": float(cpus), **({"GPU": float(gpus)} if gpus else {})}

    def cluster_resources(self):
        return self.resources


def test_batch_takes_one_engine_per_gpu():
    workers, resources, config = _worker_resources(Cluster(32, gpus=4), BatchPlan(), {})
    assert (workers, resources, config) == (4, {"num_gpus": 1, "num_cpus": 1}, {})


def test_batch_on_cpus_shares_them_out_as_threads():
    int8 = {"quantization": "int8"}
    workers, resources, config = _worker_resources(Cluster(16), BatchPlan(workers=4), int8)
    assert (workers, resources) == (4, {"num_cpus": 4})
    assert config == {"quantization": "int8", "device": "cpu", "num_threads": 4}
    # --device cpu on a GPU cluster, and --threads, are the user's to choose
    workers, resources, config = _worker_resources(Cluster(8, gpus=2), BatchPlan(), {"device": "cpu"})
    assert (workers, resources, config["num_threads"]) == (1, {"num_cpus": 8}, 8)
    _, _, config = _worker_resources(Cluster(8), BatchPlan(workers=2), {"num_threads": 1})
    assert config["num_threads"] == 1


def deployment(plan, gpus, cpus):
    served = {"whisper": [None], "summarizer": None, "allow": [], "max_loaded": 2, "engine_config": {}}
    return serve.build(served, {"api_key": "k"}, plan, gpus, cpus)._bound_deployment


def test_serve_replicas_take_a_gpu_each_or_share_the_cpus():
    on_gpus = deployment(serve.ReplicaPlan(replicas=2), gpus=2, cpus=16)
    assert on_gpus.ray_actor_options == {"num_cpus": 1, "num_gpus": 1}
    assert on_gpus.num_replicas == 2 and on_gpus._deployment_config.max_ongoing_requests == 256
    on_cpus = deployment(serve.ReplicaPlan(replicas=2), gpus=0, cpus=16)
    assert on_cpus.ray_actor_options == {"num_cpus": 8, "num_gpus": 0}
    served_args, settings = on_cpus.init_args
    assert served_args["device"] == "cpu" and served_args["num_threads"] == 8 and settings == {"api_key": "k"}


def test_serve_autoscaling_settings_reach_the_deployment():
    plan = serve.ReplicaPlan(replicas=None, min_replicas=1, max_replicas=4, target_ongoing_requests=8)
    scaling = deployment(plan, gpus=4, cpus=32)._deployment_config.autoscaling_config
    assert (scaling.min_replicas, scaling.max_replicas, scaling.target_ongoing_requests) == (1, 4, 8)
