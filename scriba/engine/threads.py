"""How many threads CPU inference should use: one per physical core this process may run on.

torch's default counts the machine's cores, which overshoots in two common places: a
container limited by a CPU quota (a 2-vCPU Space on a 64-core host gets 64 threads fighting
for 2 CPUs), and SMT, where two threads share one core's vector units. We count the cores in
the process's affinity mask (hyperthread siblings once) and cap them by the cgroup quota.
Several engines in one process share torch's one intra-op pool, so they add no threads.
"""

from __future__ import annotations

import math
import os

SYS_CPU = "/sys/devices/system/cpu"
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"  # cgroup v2: "<quota> <period>" or "max <period>"


def physical_cores(cpus: set[int], sys_cpu: str = SYS_CPU) -> int:
    """Distinct (package, core) pairs among `cpus`; a CPU without topology counts alone."""
    cores = set()
    for cpu in cpus:
        topology = os.path.join(sys_cpu, f"cpu{cpu}", "topology")
        try:
            with open(os.path.join(topology, "physical_package_id")) as f:
                package = f.read().strip()
            with open(os.path.join(topology, "core_id")) as f:
                cores.add((package, f.read().strip()))
        except OSError:
            cores.add(("cpu", str(cpu)))
    return len(cores)


def cgroup_cpu_limit(cpu_max: str = CGROUP_CPU_MAX) -> int | None:
    """CPUs allowed by the cgroup v2 quota (rounded up), or None where there is no quota."""
    try:
        with open(cpu_max) as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return max(1, math.ceil(int(quota) / int(period)))


def inference_threads(sys_cpu: str = SYS_CPU, cpu_max: str = CGROUP_CPU_MAX) -> int:
    """Physical cores of this process's CPUs, capped by the container's CPU quota."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    cores = physical_cores(cpus, sys_cpu)
    limit = cgroup_cpu_limit(cpu_max)
    return max(1, min(cores, limit) if limit else cores)


def set_cpu_threads(config) -> None:
    """torch's intra-op threads: `num_threads` (ExecutionConfig), else one per usable physical core; an
    explicit OMP_NUM_THREADS is the user's choice and is kept (and written back to the config)."""
    import torch  # here, so the counting above is importable without torch

    if config.execution_config.num_threads is None and "OMP_NUM_THREADS" in os.environ:
        config.execution_config.num_threads = torch.get_num_threads()
        return
    config.execution_config.num_threads = config.execution_config.num_threads or inference_threads()
    if torch.get_num_threads() != config.execution_config.num_threads:
        torch.set_num_threads(config.execution_config.num_threads)
