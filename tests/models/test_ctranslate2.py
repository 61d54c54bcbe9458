"""The CTranslate2 reader: the file format, int8 models (their own integers in the int8 mode), and
clear errors for what it does not read."""

import json
import shutil
import struct

import pytest
import torch
from oracle import JFK, JFK_WORDS, words

from scriba import Engine, SamplingParams
from scriba.models.loader import is_ctranslate2_folder
from scriba.models.registry import default_model_path
from scriba.models.whisper.ctranslate2 import load_ctranslate2_whisper, read_model_bin

DTYPE_IDS = {torch.float32: 0, torch.int8: 1, torch.int16: 2, torch.float16: 4}


def write_model_bin(path, spec: str, variables: dict, aliases: dict = {}, version: int = 6):
    def string(s):
        data = s.encode() + b"\0"
        return struct.pack("<H", len(data)) + data

    out = struct.pack("<I", version) + string(spec) + struct.pack("<II", 1, len(variables))
    for name, t in variables.items():
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        out += string(name) + struct.pack("<B", t.dim()) + b"".join(struct.pack("<I", d) for d in t.shape)
        out += struct.pack("<BI", DTYPE_IDS[t.dtype], len(raw)) + raw
    out += struct.pack("<I", len(aliases)) + b"".join(string(a) + string(b) for a, b in aliases.items())
    path.write_bytes(out)


def test_reads_variables_dtypes_and_aliases(tmp_path):
    variables = {
        "a/weight": torch.randn(3, 4),
        "b/bias": torch.randn(5).half(),
        "n": torch.tensor(6, dtype=torch.int16),
    }
    write_model_bin(tmp_path / "model.bin", "WhisperSpec", variables, {"c/weight": "a/weight"})
    spec, read = read_model_bin(str(tmp_path / "model.bin"))
    assert spec == "WhisperSpec" and set(read) == {"a/weight", "b/bias", "n", "c/weight"}
    for name, t in variables.items():
        assert read[name].dtype == t.dtype and torch.equal(read[name], t)
    assert torch.equal(read["c/weight"], variables["a/weight"])
    assert is_ctranslate2_folder(str(tmp_path))


def test_other_specs_and_versions_are_refused(tmp_path):
    write_model_bin(tmp_path / "model.bin", "TransformerSpec", {"x": torch.zeros(1)})
    with pytest.raises(ValueError, match="TransformerSpec; Scriba reads WhisperSpec models only"):
        load_ctranslate2_whisper(str(tmp_path))
    write_model_bin(tmp_path / "model.bin", "WhisperSpec", {"x": torch.zeros(1)}, version=3)
    with pytest.raises(ValueError, match="binary version 3 is not supported"):
        read_model_bin(str(tmp_path / "model.bin"))


def write_int8_folder(path, float_type: torch.dtype) -> dict:
    """The bundled tiny.en saved as CTranslate2 saves int8 models (checked against
    ctranslate2 4.8's converter: int8, int8_float16, int8_float32): every Linear, convolution
    and embedding weight as int8 with a float32 `weight_scale` of 127 / max|row|; the other
    floats (biases, norms, positions) in `float_type`; the projection an alias of the
    embedding. Returns the variables written."""
    src = default_model_path()
    _, variables = read_model_bin(f"{src}/model.bin")
    aliases = {"decoder/projection/weight": "decoder/embeddings/weight"}
    out = {}
    for name, t in variables.items():
        if name in aliases:
            continue
        if name.endswith("/weight") and t.is_floating_point() and t.dim() >= 2:
            w = t.float()
            scale = 127 / w.flatten(1).abs().amax(1).clamp_min(1e-12)
            out[name] = (w * scale.view(-1, *[1] * (w.dim() - 1))).round().to(torch.int8)
            out[name + "_scale"] = scale
        else:
            out[name] = t.to(float_type) if t.is_floating_point() else t
    write_model_bin(path / "model.bin", "WhisperSpec", out, aliases)
    for f in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copy(f"{src}/{f}", path / f)
    return out


@pytest.mark.parametrize("float_type", [torch.float32, torch.float16], ids=["int8_float32", "int8_float16"])
def test_int8_model_runs_its_own_integers_and_transcribes_jfk(tmp_path, float_type):
    variables = write_int8_folder(tmp_path, float_type)
    state_dict, _, _ = load_ctranslate2_whisper(str(tmp_path))
    fc1 = "encoder/layer_0/ffn/linear_0/weight"
    dequantized = variables[fc1].float() / variables[fc1 + "_scale"][:, None]
    assert torch.equal(state_dict["model.encoder.layers.0.fc1.weight"], dequantized)
    engine = Engine(str(tmp_path))
    assert engine.config.model_config.quantization == "int8"  # the checkpoint's own mode, unasked
    layer = engine.model.model.decoder.layers[1]
    for module, name in [
        (layer.self_attn.qkv_proj, "decoder/layer_1/self_attention/linear_0"),  # fused q, k, v
        (layer.encoder_attn.kv_proj, "decoder/layer_1/attention/linear_1"),
        (layer.fc2, "decoder/layer_1/ffn/linear_1"),
        (engine.model.quantized_head, "decoder/embeddings"),
    ]:
        weight = module.weight()
        assert torch.equal(weight.int_repr(), variables[f"{name}/weight"])
        scales = weight.q_per_channel_scales().float()
        assert torch.allclose(scales, 1 / variables[f"{name}/weight_scale"], rtol=1e-6)
    text = engine.generate([{"audio": JFK}], SamplingParams(max_tokens=60))[0].outputs[0].text
    assert words(text) == JFK_WORDS


def test_tokenizer_without_whisper_tokens_is_refused(tmp_path):
    src = default_model_path()
    shutil.copy(f"{src}/model.bin", tmp_path / "model.bin")
    shutil.copy(f"{src}/config.json", tmp_path / "config.json")
    tok = json.load(open(f"{src}/tokenizer.json"))
    tok["added_tokens"] = [t for t in tok["added_tokens"] if t["content"] != "<|notimestamps|>"]
    json.dump(tok, open(tmp_path / "tokenizer.json", "w"))
    with pytest.raises(ValueError, match="lacks Whisper's control tokens"):
        load_ctranslate2_whisper(str(tmp_path))


def test_int8_model_runs_dequantized_where_int8_cannot(tmp_path):
    """bfloat16 (or a GPU) has no int8 mode: the weights run as int8 / scale in that dtype."""
    variables = write_int8_folder(tmp_path, torch.float32)
    engine = Engine(str(tmp_path), dtype="bfloat16")
    assert engine.config.model_config.quantization is None
    fc1 = engine.model.model.encoder.layers[0].fc1
    assert type(fc1) is torch.nn.Linear and fc1.weight.dtype == torch.bfloat16
    name = "encoder/layer_0/ffn/linear_0/weight"
    expected = (variables[name].float() / variables[name + "_scale"][:, None]).bfloat16()
    assert torch.equal(fc1.weight, expected)
