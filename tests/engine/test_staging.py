"""HostStaging: a step's integer arrays laid out in one buffer and moved in one copy. Oracle:
the arrays themselves. On the CPU the buffered layout is forced on; on a GPU it is the
default (pinned host buffer, device views)."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scriba.engine.staging import HostStaging

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

one_array = st.tuples(st.sampled_from([np.int32, np.int64]), st.integers(0, 40), st.integers(0, 3))
shapes = st.lists(one_array, min_size=1, max_size=8)  # (dtype, rows, columns or 0 for 1-D)


@settings(max_examples=40, deadline=None)
@given(shapes, st.integers(0, 2**31 - 1))
def test_uploaded_views_equal_the_arrays(specs, seed):
    rng = np.random.default_rng(seed)
    staging = HostStaging(DEVICE, capacity=16, buffered=True)  # small: the buffers must grow
    for step in range(2):  # the second step reuses the buffers
        arrays = {}
        for i, (dtype, rows, cols) in enumerate(specs):
            shape = (rows, cols) if cols else (rows,)
            arrays[f"a{i}"] = rng.integers(-(2**31), 2**31 - 1, size=shape).astype(dtype)
        out = staging.upload(arrays)
        assert staging.copies == step + 1
        for name, a in arrays.items():
            t = out[name]
            assert t.device.type == torch.device(DEVICE).type and tuple(t.shape) == a.shape
            assert t.dtype == torch.from_numpy(a).dtype
            np.testing.assert_array_equal(t.cpu().numpy(), a)


def test_unbuffered_cpu_wraps_without_copying():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    out = HostStaging("cpu").upload({"a": a})
    assert out["a"].data_ptr() == a.ctypes.data and HostStaging("cpu").copies == 0
