"""The OpenVINO encoder's precision (models/openvino_encoder/precision.py): both candidates of the host's
kind (bf16 and int8-bf16 where bfloat16 is native, int8 and f32 elsewhere) timed once, the faster
kept and remembered per machine and encoder shape; a later engine compiles only the remembered
one."""

import json

import pytest
import torch

from scriba.models.openvino_encoder import precision as encoder_precision
from scriba.models.openvino_encoder import runtime as openvino_encoder
from scriba.models.openvino_encoder.precision import (
    MEASURED,
    MEASURED_BF16,
    choices_file,
    fastest,
    remembered,
)
from scriba.models.openvino_encoder.runtime import OpenVINOEncoder
from scriba.models.registry import load_model


@pytest.fixture
def clock(monkeypatch, tmp_path):
    """A fake perf_counter that only the fake encoders move, and a cache of the test's own."""
    monkeypatch.setenv("SCRIBA_CACHE", str(tmp_path))
    now = [0.0]
    monkeypatch.setattr(encoder_precision.time, "perf_counter", lambda: now[0])
    return now


def fake_builds(clock, seconds: dict[str, float]):
    built = []

    def build(precision):
        built.append(precision)

        def encoder(features):
            assert features.shape == (1, 80, 3000)
            clock[0] += seconds[precision]

        return encoder

    return build, built


CASES = [(False, p) for p in MEASURED] + [(True, p) for p in MEASURED_BF16]


@pytest.mark.parametrize("native_bf16, faster", CASES)
def test_the_faster_candidate_is_chosen_and_remembered(clock, native_bf16, faster):
    candidates = MEASURED_BF16 if native_bf16 else MEASURED
    seconds = {p: 0.1 if p == faster else 0.3 for p in candidates}
    build, built = fake_builds(clock, seconds)
    chosen, _ = fastest(build, native_bf16, 80, 3000, "cpu A|tiny")
    assert chosen == faster and sorted(built) == sorted(candidates)
    saved = json.load(open(choices_file()))["cpu A|tiny"]
    assert saved == {"precision": faster, "seconds_per_window": seconds}

    build, built = fake_builds(clock, seconds)
    assert fastest(build, native_bf16, 80, 3000, "cpu A|tiny")[0] == faster and built == [faster]
    build, built = fake_builds(clock, seconds)  # another machine or shape measures again
    assert fastest(build, native_bf16, 80, 3000, "cpu B|tiny")[0] == faster and len(built) == 2
    assert set(json.load(open(choices_file()))) == {"cpu A|tiny", "cpu B|tiny"}


def test_a_choice_of_the_other_kind_is_measured_again(clock):
    """A remembered int8 or f32 is no answer where bfloat16 is native (nor the reverse)."""
    build, built = fake_builds(clock, {"int8": 0.1, "f32": 0.3})
    assert fastest(build, False, 80, 3000, "cpu A|tiny")[0] == "int8"
    build, built = fake_builds(clock, {"bf16": 0.2, "int8-bf16": 0.1})
    assert fastest(build, True, 80, 3000, "cpu A|tiny")[0] == "int8-bf16" and len(built) == 2
    assert remembered("cpu A|tiny") == "int8-bf16"


@pytest.mark.parametrize("content", ["{not json", '["a list"]', '{"cpu A|tiny": {"precision": "fp4"}}'])
def test_an_unreadable_or_foreign_file_means_measure_again(clock, content):
    with open(choices_file(), "w") as f:
        f.write(content)
    assert remembered("cpu A|tiny") is None
    build, built = fake_builds(clock, {"int8": 0.2, "f32": 0.1})
    assert fastest(build, False, 80, 3000, "cpu A|tiny")[0] == "f32" and len(built) == 2
    assert remembered("cpu A|tiny") == "f32"


@pytest.mark.parametrize("native_bf16", [False, True])
def test_the_encoder_measures_once_then_compiles_the_remembered_graph(
    tiny_whispers, monkeypatch, tmp_path, native_bf16
):
    """The real graphs, as on an AVX2-only host and on one with bfloat16 dot products: timed
    once, the choice reused, outputs alike."""
    monkeypatch.setenv("SCRIBA_CACHE", str(tmp_path))
    monkeypatch.setattr(openvino_encoder, "native_bf16", lambda core: native_bf16)
    candidates = MEASURED_BF16 if native_bf16 else MEASURED
    folder, hf = tiny_whispers["multilingual"]
    model, _ = load_model(folder, "cpu", torch.float32)
    first = OpenVINOEncoder(model.model.encoder, num_threads=2)
    assert first.precision in candidates
    [entry] = json.load(open(choices_file())).values()
    assert entry["precision"] == first.precision and set(entry["seconds_per_window"]) == set(candidates)

    def no_timing(*args):
        raise AssertionError("measured again")

    monkeypatch.setattr(encoder_precision, "seconds_per_window", no_timing)
    second = OpenVINOEncoder(model.model.encoder, num_threads=2)
    assert second.precision == first.precision
    features = torch.randn(1, 80, 3000, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = hf.model.encoder(features).last_hidden_state[0]
    got = second(features)[0]
    assert float((got - expected).norm() / expected.norm()) < 0.06  # the bounds in test_openvino_encoder
