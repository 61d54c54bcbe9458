"""The CPU's flags as the kernels' choices read them, and the cap that hides what is newer than
AVX2 (an AVX2-only host's choices on a newer CPU)."""

import pytest

from scriba.kernels import cpu_features


@pytest.fixture
def fresh_flags():
    cpu_features.cpu_flags.cache_clear()
    yield
    cpu_features.cpu_flags.cache_clear()


def test_the_flags_are_proc_cpuinfo_s(fresh_flags, monkeypatch):
    monkeypatch.delenv("SCRIBA_MAX_CPU_ISA", raising=False)
    with open("/proc/cpuinfo") as f:
        line = next(line for line in f if line.startswith("flags"))
    assert cpu_features.cpu_flags() == frozenset(line.split(":", 1)[1].split())
    assert "sse2" in cpu_features.cpu_flags()  # every x86-64 CPU


def test_capped_to_avx2_nothing_newer_shows(fresh_flags, monkeypatch):
    monkeypatch.setenv("SCRIBA_MAX_CPU_ISA", "avx2")
    flags = cpu_features.cpu_flags()
    assert not [f for f in flags if f.startswith(("avx512", "avx_vnni", "amx"))]
    assert not cpu_features.native_bfloat16()
    with open("/proc/cpuinfo") as f:
        line = next(line for line in f if line.startswith("flags"))
    assert ("avx2" in flags) == ("avx2" in line.split())  # what AVX2 hosts have stays
