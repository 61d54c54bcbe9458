"""The Whisper encoder as an OpenVINO graph (models/openvino_encoder/runtime.py): against transformers'
encoder on the same weights in each precision, window by window, and in the engine on real
speech (the words of jfk.flac), with its settings checked once."""

import paths
import pytest
import torch

from scriba import Engine
from scriba.config import EngineConfig, resolve_config
from scriba.media.load import load_audio
from scriba.models.openvino_encoder.graph import build_encoder_graph
from scriba.models.openvino_encoder.runtime import (
    INT8_BF16_GROUP,
    OpenVINOEncoder,
    _compile,
    import_openvino,
    int8_weights,
)
from scriba.models.registry import load_model

JFK = paths.JFK


def _relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got - expected).norm() / expected.norm())


def _int8_weights(encoder: OpenVINOEncoder) -> int:
    """How many int8 weight tensors the compiled graph holds (the products kept compressed)."""
    ops = encoder.compiled.get_runtime_model().get_ordered_ops()
    return sum(
        op.get_rt_info()["layerType"].astype(str) == "Const"
        and op.get_rt_info()["runtimePrecision"].astype(str) == "i8"
        for op in ops
    )


# f32 is the same arithmetic; bf16 rounds activations to 8 bits of mantissa; int8 quantizes
# weights per row and activations per group of 32 (the figures seen: 3e-7, 0.006, 0.02);
# int8-bf16 the same weights, activations per group of 128, bfloat16 around them (0.009).
PRECISIONS = [("f32", 1e-5), ("bf16", 0.03), ("int8", 0.06), ("int8-bf16", 0.03)]


@pytest.mark.parametrize("precision, tolerance", PRECISIONS)
def test_the_graph_computes_transformers_encoder(tiny_whispers, precision, tolerance):
    folder, hf = tiny_whispers["mel128"]
    model, _ = load_model(folder, "cpu", torch.float32)
    encoder = OpenVINOEncoder(model.model.encoder, num_threads=2, precision=precision)
    features = torch.randn(3, 128, 3000, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = hf.model.encoder(features).last_hidden_state  # [3, 1500, d_model]
    got = encoder(features)[0].clone()  # the request's own buffer, reused by the next call
    assert got.shape == (3 * 1500, expected.shape[-1])
    assert _relative_error(got, expected.flatten(0, 1)) < tolerance
    [alone] = encoder(features[1:2])  # a window's states do not depend on its batch
    assert _relative_error(alone, expected[1]) < tolerance
    if precision == "f32":
        assert torch.allclose(alone, got[1500:3000], atol=1e-5)
    # every Linear's weight (4 a layer) stays int8 under the int8 precisions, none otherwise
    expected_int8 = 4 * len(model.model.encoder.layers) if int8_weights(precision) else 0
    assert _int8_weights(encoder) == expected_int8


@pytest.mark.parametrize("precision, tolerance", [("f32", 1e-5), ("bf16", 0.03), ("int8-bf16", 0.03)])
def test_the_graph_makes_each_decoder_layers_cross_kv(tiny_whispers, precision, tolerance):
    """Built with the decoder's K/V projections, the graph's outputs are each decoder layer's
    cross-attention K/V of the states (what the layers' kv_proj would make of them)."""
    folder, hf = tiny_whispers["multilingual"]
    model, _ = load_model(folder, "cpu", torch.float32)
    projections = [layer.encoder_attn.kv_proj for layer in model.model.decoder.layers]
    encoder = OpenVINOEncoder(model.model.encoder, 2, precision, cross_kv=projections)
    features = torch.randn(2, 80, 3000, generator=torch.Generator().manual_seed(1))
    outputs = encoder(features)
    with torch.no_grad():
        states = hf.model.encoder(features).last_hidden_state.flatten(0, 1)  # [2 * 1500, d_model]
        expected = [kv_proj(states) for kv_proj in projections]
    assert len(outputs) == len(projections) > 1 and encoder.projects_cross_kv
    for got, kv in zip(outputs, expected):
        assert got.shape == kv.shape and _relative_error(got, kv) < tolerance


def test_the_engine_transcribes_jfk_with_it():
    engine = Engine(quantization="int8", encoder_runtime="openvino")  # the bundled tiny.en
    assert engine.model.encoder_runtime is not None and len(engine.model.model.encoder.layers) == 0
    [out] = engine.generate([{"audio": load_audio(JFK), "language": "en"}], engine.generation_defaults())
    text = out.outputs[0].text.lower()
    assert "ask not what your country can do for you" in text
    assert "ask what you can do for your country" in text


def test_settings_are_checked_once(tiny_bart):
    with pytest.raises(ValueError, match="encoder_runtime must be one of"):
        EngineConfig.create(encoder_runtime="onnx")
    with pytest.raises(ValueError, match="runs on the CPU with dtype float32"):
        EngineConfig.create(encoder_runtime="openvino", dtype="bfloat16")
    with pytest.raises(ValueError, match="encoder_padding must be one of"):
        EngineConfig.create(encoder_runtime="openvino", encoder_padding="skipped")
    with pytest.raises(ValueError, match="needs encoder_runtime='openvino'"):
        EngineConfig.create(encoder_padding="cached")
    with pytest.raises(ValueError, match="runs its encoder in torch only"):
        Engine(tiny_bart[0], encoder_runtime="openvino")  # BART's encoder reads token ids
    with pytest.raises(ValueError, match="precision must be one of"):
        OpenVINOEncoder(load_model(default_folder(), "cpu", torch.float32)[0].model.encoder, 2, "fp8")


def default_folder() -> str:
    from scriba.models.registry import default_model_path

    return default_model_path()


def test_speech_on_the_cpu_runs_the_encoder_in_openvino_with_int8():
    """The CPU speech profile (models/profiles.py), what every surface resolves for a Whisper model
    on a CPU: int8, the OpenVINO encoder, a float16 KV cache; what is asked for stays; float32 is
    the exact mode, with none of them."""

    def resolved(**options) -> dict:
        settings = resolve_config(None, device="cpu", **options).options()
        return {k: settings[k] for k in ("quantization", "encoder_runtime", "kv_cache_dtype", "dtype")}

    assert resolved() == dict(
        quantization="int8", encoder_runtime="openvino", kv_cache_dtype="float16", dtype="float32"
    )
    padding = resolve_config(None, device="cpu", encoder_padding="cached").execution_config.encoder_padding
    assert padding == "cached"
    assert resolved(kv_cache_dtype="auto")["kv_cache_dtype"] == "auto"  # asked for: kept
    assert resolved(quantization="int8")["encoder_runtime"] == "openvino"
    exact = dict(quantization=None, encoder_runtime="torch", kv_cache_dtype="auto", dtype="float32")
    assert resolved(dtype="float32") == exact
    assert resolved(encoder_runtime="torch") == dict(
        quantization="int8", encoder_runtime="torch", kv_cache_dtype="float16", dtype="float32"
    )


def test_the_command_line_passes_the_runtime_on():
    from scriba.app.cli.engine_options import engine_options
    from scriba.app.cli.main import build_parser

    asked = build_parser().parse_args(["transcribe", "a.wav", "--encoder-runtime", "torch"])
    assert engine_options(asked)["encoder_runtime"] == "torch"
    assert "encoder_runtime" not in engine_options(build_parser().parse_args(["transcribe", "a.wav"]))
    asked = build_parser().parse_args(["transcribe", "a.wav", "--encoder-padding", "computed"])
    assert engine_options(asked)["encoder_padding"] == "computed"


def test_openvino_is_imported_without_its_telemetry():
    """`import openvino` alone sends a usage event over the network (openvino-telemetry);
    Scriba's import leaves OpenVINO on its no-op stub."""
    import subprocess
    import sys

    check = (
        "import sys; from scriba.models.openvino_encoder.runtime import import_openvino; import_openvino(); "
        "assert sys.modules['openvino_telemetry'] is None; "
        "assert 'openvino.tools.ovc.telemetry_stub' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "precision, group, expected",
    [("int8", None, 32), ("int8-bf16", None, INT8_BF16_GROUP), ("int8", 512, 512), ("bf16", None, 0)],
)
def test_each_int8_precision_quantizes_its_activations_in_its_groups(
    tiny_whispers, precision, group, expected
):
    """OpenVINO is given each int8 precision's group size (or the one asked), none for float ones."""
    folder, _ = tiny_whispers["multilingual"]
    model, _ = load_model(folder, "cpu", torch.float32)
    graph = build_encoder_graph(model.model.encoder, int8_weights(precision))
    compiled = _compile(import_openvino().Core(), graph, precision, 2, group)
    assert compiled.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE") == expected
