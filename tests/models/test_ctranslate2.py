"""The CTranslate2 reader: the file format, and clear errors for what it does not read."""

import json
import shutil
import struct

import pytest
import torch

from scriba.models.ctranslate2 import is_ctranslate2_folder, load_ctranslate2_whisper, read_model_bin
from scriba.models.registry import default_model_path

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


def test_quantized_model_is_refused_with_a_hint(tmp_path):
    src = default_model_path()
    _, variables = read_model_bin(f"{src}/model.bin")
    name = "encoder/layer_0/ffn/linear_0"
    variables[f"{name}/weight"] = variables[f"{name}/weight"].to(torch.int8)
    variables[f"{name}/weight_scale"] = torch.ones(variables[f"{name}/weight"].shape[0])
    write_model_bin(tmp_path / "model.bin", "WhisperSpec", variables)
    for f in ("config.json", "tokenizer.json"):
        shutil.copy(f"{src}/{f}", tmp_path / f)
    with pytest.raises(ValueError, match="quantized .* --quantization float16"):
        load_ctranslate2_whisper(str(tmp_path))


def test_tokenizer_without_whisper_tokens_is_refused(tmp_path):
    src = default_model_path()
    shutil.copy(f"{src}/model.bin", tmp_path / "model.bin")
    shutil.copy(f"{src}/config.json", tmp_path / "config.json")
    tok = json.load(open(f"{src}/tokenizer.json"))
    tok["added_tokens"] = [t for t in tok["added_tokens"] if t["content"] != "<|notimestamps|>"]
    json.dump(tok, open(tmp_path / "tokenizer.json", "w"))
    with pytest.raises(ValueError, match="lacks Whisper's control tokens"):
        load_ctranslate2_whisper(str(tmp_path))
