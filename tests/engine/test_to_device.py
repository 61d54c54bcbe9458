"""to_device / stack_to_device: the values torch.tensor / torch.stack give, on the device; on a GPU
without a synchronizing copy (sync debug mode set to raise)."""

import contextlib

import pytest
import torch

from scriba.engine.to_device import stack_to_device, to_device

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@contextlib.contextmanager
def no_host_waits():
    if DEVICE == "cuda":
        torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        if DEVICE == "cuda":
            torch.cuda.set_sync_debug_mode("default")


@pytest.mark.parametrize(
    "values, dtype",
    [([3, 1, 4], None), ([0.9, 1.5], None), ([[1, 2, 7], [4, 5, 9]], None), ([5, 6], torch.long), ([], None)],
)
def test_lists_arrive_as_torch_tensor_would_make_them(values, dtype):
    with no_host_waits():
        got = to_device(values, DEVICE, dtype)
    want = torch.tensor(values, dtype=dtype)
    assert got.device.type == DEVICE and got.dtype == want.dtype
    assert torch.equal(got.cpu(), want)


def test_a_cpu_tensor_moves_unchanged_and_stacks_match_torch_stack():
    values = torch.arange(12, dtype=torch.int32).view(3, 4)
    features = [torch.randn(8, 30) for _ in range(3)]
    with no_host_waits():
        moved = to_device(values, DEVICE)
        stacked = stack_to_device(features, DEVICE)
    assert moved.dtype == torch.int32 and torch.equal(moved.cpu(), values)
    assert stacked.shape == (3, 8, 30) and torch.equal(stacked.cpu(), torch.stack(features))
