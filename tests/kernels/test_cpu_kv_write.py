"""kernels/cpu_kv_write.py against torch's write (kv_cache.write_kv_cache_ref): the same cache,
bit for bit (rounded to float16 or bfloat16 as torch rounds, ties included), from the strided K/V
views the layers pass; other caches are left to the torch path."""

import pytest
import torch

from scriba.engine.kv_pools import new_kv_cache
from scriba.kernels.backend import NumbaBackend
from scriba.kernels.cpu_kv_write import load_kernel, write_rounded
from scriba.kernels.kv_cache import write_kv_cache_ref

HEADS, DIM = 3, 16


def fused_kv(tokens: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V as the chunks of a fused projection's rows (strided views), with halfway values."""
    rows = torch.randn(tokens, 2 * HEADS * DIM, generator=torch.Generator().manual_seed(seed)) * 4
    rows[0, :8] = torch.tensor(
        [1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8, 0.0, -0.0, 65504.0, 1e-8]
    )
    k, v = rows.chunk(2, dim=-1)
    return k.view(tokens, HEADS, DIM), v.view(tokens, HEADS, DIM)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_write_equals_torch_s(dtype):
    k, v = fused_kv(40, seed=0)
    slots = torch.randperm(64, generator=torch.Generator().manual_seed(1))[:40]
    got, expected = (new_kv_cache(8, 8, HEADS, DIM, head_major=True, dtype=dtype) for _ in range(2))
    load_kernel(got)
    assert write_rounded(k, v, got, slots)
    write_kv_cache_ref(k, v, expected, slots)
    assert torch.equal(got.view(torch.int16), expected.view(torch.int16))  # bits: -0.0 and ties too
    assert int((got.float().abs().sum(dim=(-1, -2)) > 0).sum()) == 80
    NumbaBackend.write_kv_cache(k, v, got, slots)  # the backend's write takes this path
    assert torch.equal(got.view(torch.int16), expected.view(torch.int16))


def test_other_caches_are_left_to_torch():
    k, v = fused_kv(4, seed=2)
    slots = torch.tensor([3, 9, 0, 5])
    others = [
        new_kv_cache(2, 8, HEADS, DIM, head_major=True),  # float32
        new_kv_cache(2, 8, HEADS, DIM, head_major=False, dtype=torch.float16),  # token-major
    ]
    for cache in others:
        assert not write_rounded(k, v, cache, slots) and not cache.float().abs().sum()
        NumbaBackend.write_kv_cache(k, v, cache, slots)
        expected = torch.zeros_like(cache)
        write_kv_cache_ref(k, v, expected, slots)
        assert torch.equal(cache, expected)
    cache = new_kv_cache(2, 8, HEADS, DIM, head_major=True, dtype=torch.float16)
    with pytest.raises(ValueError, match="slot_mapping"):
        write_rounded(k, v, cache, slots[:3])
