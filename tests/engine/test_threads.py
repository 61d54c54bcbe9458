"""CPU thread count: physical cores of the process's CPUs, within the container's quota."""

import os

import pytest
import torch

from scriba import Engine
from scriba.config import EngineConfig
from scriba.engine.threads import cgroup_cpu_limit, inference_threads, physical_cores


def fake_sys(tmp_path, cores: dict[int, tuple[int, int]]) -> str:
    """/sys/devices/system/cpu with cpuN/topology/{physical_package_id, core_id}."""
    for cpu, (package, core) in cores.items():
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")
    return str(tmp_path)


def test_hyperthread_siblings_count_once(tmp_path):
    sys_cpu = fake_sys(tmp_path, {0: (0, 0), 1: (0, 1), 2: (0, 0), 3: (0, 1), 4: (1, 0)})
    assert physical_cores({0, 1, 2, 3}, sys_cpu) == 2
    assert physical_cores({0, 2}, sys_cpu) == 1
    assert physical_cores({0, 4}, sys_cpu) == 2  # same core id, another package
    assert physical_cores({0, 7}, sys_cpu) == 2  # no topology for cpu7: counted on its own


@pytest.mark.parametrize(
    "text, limit", [("200000 100000", 2), ("150000 100000", 2), ("50000 100000", 1), ("max 100000", None)]
)
def test_cgroup_quota_in_cpus(tmp_path, text, limit):
    (tmp_path / "cpu.max").write_text(text + "\n")
    assert cgroup_cpu_limit(str(tmp_path / "cpu.max")) == limit
    assert cgroup_cpu_limit(str(tmp_path / "absent")) is None


def test_threads_are_cores_capped_by_the_quota(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    sys_cpu = fake_sys(tmp_path / "sys", {cpu: (0, i) for i, cpu in enumerate(cpus)})  # one core each
    (tmp_path / "cpu.max").write_text("100000 100000\n")
    assert inference_threads(sys_cpu, str(tmp_path / "none")) == len(cpus)
    assert inference_threads(sys_cpu, str(tmp_path / "cpu.max")) == 1
    siblings = fake_sys(tmp_path / "smt", {cpu: (0, 0) for cpu in cpus})  # all on one core
    assert inference_threads(siblings, str(tmp_path / "none")) == 1


def test_engine_sets_torch_threads(tiny_bart, monkeypatch):
    path, _ = tiny_bart
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        engine = Engine(path, device="cpu", num_threads=1, num_kv_blocks=50)
        assert engine.config.execution_config.num_threads == 1
        assert torch.get_num_threads() == 1
        engine = Engine(path, device="cpu", num_kv_blocks=50)
        assert engine.config.execution_config.num_threads == inference_threads() == torch.get_num_threads()
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        torch.set_num_threads(1)
        engine = Engine(path, device="cpu", num_kv_blocks=50)
        assert engine.config.execution_config.num_threads == 1  # the user's choice
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("value", [0, -2, 1.5])
def test_bad_thread_counts_are_refused(value):
    with pytest.raises(ValueError, match="num_threads must be a positive integer"):
        EngineConfig.create(device="cpu", num_threads=value)
