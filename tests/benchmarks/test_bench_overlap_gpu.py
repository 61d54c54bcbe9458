"""benchmarks/bench_overlap_gpu.py stays runnable (its CPU smoke path) and its overlap figure is
what its own times give."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import bench_overlap_gpu  # noqa: E402


def test_the_smoke_run_reports_times_and_their_overlap(tmp_path):
    out = tmp_path / "overlap.txt"
    bench_overlap_gpu.main(["--seqs", "4", "--windows", "2", "--steps", "2", "--out", str(out)])
    rows = [line for line in out.read_text().splitlines() if re.match(r"\| \d", line)]
    assert len(rows) == 1  # the CPU: no carveouts
    ms = [float(x) for x in re.findall(r"([\d.]+) ms", rows[0])]
    overlaps = [float(x) for x in re.findall(r"\((-?[\d.]+)\)", rows[0])]
    enc, dec, serial, both, urgent = ms
    assert min(ms) > 0 and len(overlaps) == 2
    # the figures as printed: times to 0.01 ms (three of them, 0.005 each), the overlap to 0.01
    rounding = 3 * 0.005 / min(enc, dec) + 0.005
    for together, overlap in zip((both, urgent), overlaps):
        assert abs(overlap - (enc + dec - together) / min(enc, dec)) <= rounding + 1e-9


def test_the_encoder_proxy_is_a_pre_norm_transformer_layer():
    import torch

    shape = bench_overlap_gpu.SMALL | {"layers": 1}
    torch.manual_seed(0)
    (w,) = bench_overlap_gpu.encoder_layers(shape, "cpu", torch.float64)
    x = torch.randn(2, shape["positions"], shape["d_model"], dtype=torch.float64)
    layer = torch.nn.TransformerEncoderLayer(
        shape["d_model"],
        shape["heads"],
        shape["ffn"],
        0.0,
        "gelu",
        batch_first=True,
        norm_first=True,
        bias=True,
        dtype=torch.float64,
    ).eval()
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2):
            norm.weight.fill_(1), norm.bias.zero_()
        layer.self_attn.in_proj_weight.copy_(w["qkv"]), layer.self_attn.in_proj_bias.zero_()
        layer.self_attn.out_proj.weight.copy_(w["out"]), layer.self_attn.out_proj.bias.zero_()
        layer.linear1.weight.copy_(w["fc1"]), layer.linear1.bias.copy_(w["bias"])
        layer.linear2.weight.copy_(w["fc2"]), layer.linear2.bias.zero_()
        expected = layer(x)
    assert torch.allclose(bench_overlap_gpu.encoder(x, [w], shape), expected, atol=1e-10)
