"""benchmarks/tune_states_decode.py stays runnable before a GPU runs it: at a tiny shape on CPU
tensors (Triton's interpreter), every launch of its grid runs against the torch form, and the
fastest at the largest batch is written for the engine's benchmark (--states-launch)."""

import itertools
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import tune_states_decode as tune  # noqa: E402


def test_every_launch_runs_within_tolerance_and_the_fastest_is_kept(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(tune, "DEVICE", "cpu")
    for name, value in dict(HEADS=4, HEAD_DIM=16, D_MODEL=64, LENGTH=40).items():
        monkeypatch.setattr(tune, name, value)
    ticks = itertools.count(1)
    monkeypatch.setattr(tune, "timed", lambda fn: (fn(), next(ticks) * 1e-6)[1])  # each later one slower
    default = dict(tune.states_attention.LAUNCH)
    best = str(tmp_path / "best_{kind}.json")
    tune.main(["--batches", "2,3", "--kinds", "float16,fp8", "--best-out", best])
    out = capsys.readouterr().out
    launches = len(list(itertools.product(*tune.GRID.values())))
    assert out.count(f": {launches} launches ran;") == 4, out
    errors = [float(error) for error in re.findall(r"err (\S+)", out)]
    assert len(errors) == 4 * launches and max(errors) < 2e-2, errors
    assert out.count("one layer, states kernel:") == 4 and out.count("projected K/V (fp8 paged decode)") == 2
    first = dict(zip(tune.GRID, next(itertools.product(*tune.GRID.values()))))
    for kind in ("float16", "fp8"):
        assert json.loads((tmp_path / f"best_{kind}.json").read_text()) == first
    assert tune.states_attention.LAUNCH == default  # restored after each kind's layer costs
