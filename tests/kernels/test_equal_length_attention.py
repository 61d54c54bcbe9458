"""An audio encoder's windows (all one length) as dense attention against the packed reference:
on CUDA when there is a GPU (where cuDNN's kernel runs first), else on the CPU's SDPA. The inputs
are the engine's own layout: q, k and v sliced from one fused QKV projection, rows strided."""

import pytest
import torch

from scriba.kernels import backend as backends
from scriba.kernels.metadata import AttentionMetadata
from scriba.kernels.varlen_attention import equal_length_attention, varlen_attention_ref

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TOLERANCE = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def fused_qkv(windows: int, length: int, heads: int, head_dim: int, dtype, seed: int = 0):
    """q, k, v: [windows * length, heads, head_dim] views of one [rows, 3 * heads * head_dim]."""
    gen = torch.Generator().manual_seed(seed)
    qkv = torch.randn(windows * length, 3 * heads * head_dim, generator=gen).to(DEVICE, dtype)
    return [part.view(-1, heads, head_dim) for part in qkv.split(heads * head_dim, dim=1)]


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("windows,length", [(1, 1500), (3, 1500), (4, 37)])
def test_matches_the_packed_reference(dtype, windows, length):
    q, k, v = fused_qkv(windows, length, heads=2, head_dim=64, dtype=dtype)
    cu = torch.arange(windows + 1, dtype=torch.int32, device=DEVICE) * length
    wide = [t.float() for t in (q, k, v)]
    expected = varlen_attention_ref(*wide, cu, cu, length, length, 0.125, causal=False)
    out = equal_length_attention(q, k, v, length, 0.125)
    assert out.shape == q.shape and out.dtype == dtype
    torch.testing.assert_close(out.float(), expected, atol=TOLERANCE[dtype], rtol=TOLERANCE[dtype])
    # each window attends to its own rows only: changing window 0's keys leaves the others alone
    if windows > 1:
        k[:length] = 0
        again = equal_length_attention(q, k, v, length, 0.125)
        assert torch.equal(again[length:], out[length:]) and not torch.equal(again[:length], out[:length])


def test_rows_that_are_not_whole_windows_are_refused():
    q, k, v = fused_qkv(2, 10, heads=2, head_dim=8, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"must be \[sequences \* 7, heads, head_dim\]"):
        equal_length_attention(q, k, v, 7, 1.0)


def test_the_metadata_names_the_length_its_encoder_sequences_share():
    def meta(*bounds):
        cu = torch.tensor(bounds, dtype=torch.int32)
        longest = max(b - a for a, b in zip(bounds, bounds[1:]))
        return AttentionMetadata(None, bounds[-1], cu, longest)

    assert meta(0, 1500, 3000, 4500).encoder_equal_len == 1500
    assert meta(0, 1500, 2000).encoder_equal_len == 0 and meta(0, 7).encoder_equal_len == 7
    assert AttentionMetadata(None).encoder_equal_len == 0  # no encoder this step


def test_the_cuda_backend_takes_the_dense_path_only_for_windows_of_one_length(monkeypatch):
    calls = []
    monkeypatch.setattr(backends, "flash_runs", lambda *args: True)  # as on a GPU in float16
    monkeypatch.setattr(backends, "varlen_attention_flash", varlen_attention_ref)
    monkeypatch.setattr(backends.CudaBackend, "varlen_attention", staticmethod(varlen_attention_ref))
    monkeypatch.setattr(
        backends,
        "equal_length_attention",
        lambda *args: calls.append(args[3]) or equal_length_attention(*args),
    )
    q, k, v = fused_qkv(2, 30, heads=2, head_dim=16, dtype=torch.float32)
    cu = torch.tensor([0, 30, 60], dtype=torch.int32, device=DEVICE)
    meta = AttentionMetadata(backends.CudaBackend, 60, cu, 30)
    dense = backends.CudaBackend.encoder_attention(q, k, v, meta, 0.25)
    assert calls == [30]
    packed = backends.TorchBackend.encoder_attention(q, k, v, meta, 0.25)
    torch.testing.assert_close(dense, packed, atol=2e-5, rtol=2e-5)
    uneven = AttentionMetadata(backends.CudaBackend, 60, torch.tensor([0, 20, 60], dtype=torch.int32), 40)
    backends.CudaBackend.encoder_attention(q, k, v, uneven, 0.25)  # lengths that differ: packed
    assert calls == [30]
