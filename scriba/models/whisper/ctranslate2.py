"""Read CTranslate2 (faster-whisper) Whisper folders: model.bin + config.json + tokenizer.json.

The reader turns the CTranslate2 variables into a state dict with Hugging Face's names (fused
projections split into q/k/v), and builds the two configs that Hugging Face's folders carry
(checkpoint_config.py: transformers' field names, no transformers import) from the tensor shapes
and the tokenizer's control tokens. The same state dict loads into Scriba's model or into
transformers' WhisperForConditionalGeneration.

model.bin layout (binary version >= 4, little-endian): u32 version, string spec name, u32 spec
revision, u32 variable count, then per variable: string name, u8 rank, u32 dims[rank],
u8 dtype, u32 byte count, raw bytes; then u32 alias count and (alias, target) string pairs.
A string is a u16 length (with its NUL) and the bytes.

Quantized folders (saved as int8, int8_float16 or int8_float32) hold each Linear, convolution
and embedding weight as int8 with a float32 `weight_scale` per output row: weight = int8 /
scale. The reader dequantizes them for the float state dict and also hands the int8 weights
and scales on, so the int8 CPU mode runs the checkpoint's own integers (models/quantize.py).
"""

from __future__ import annotations

import json
import os
import re
import struct

import torch

from scriba.models.whisper.checkpoint_config import WhisperConfig, WhisperGenerationConfig
from scriba.models.whisper.language_names import LANGUAGES

_DTYPES = {
    0: torch.float32,
    1: torch.int8,
    2: torch.int16,
    3: torch.int32,
    4: torch.float16,
    5: torch.bfloat16,
}


def read_model_bin(file: str) -> tuple[str, dict[str, torch.Tensor]]:
    """(spec name, {variable name: tensor}) with aliases resolved."""
    with open(file, "rb") as f:
        data = bytearray(os.fstat(f.fileno()).st_size)
        f.readinto(data)
    offset = 0

    def take(fmt: str):
        nonlocal offset
        values = struct.unpack_from(fmt, data, offset)
        offset += struct.calcsize(fmt)
        return values[0] if len(values) == 1 else values

    def string() -> str:
        nonlocal offset
        n = take("<H")
        text = data[offset : offset + n - 1].decode()
        offset += n
        return text

    version = take("<I")
    if not 4 <= version <= 6:
        raise ValueError(f"{file}: CTranslate2 binary version {version} is not supported (4 to 6 are)")
    spec, _revision, count = string(), take("<I"), take("<I")
    variables: dict[str, torch.Tensor] = {}
    for _ in range(count):
        name = string()
        rank = take("<B")
        dims = [take("<I") for _ in range(rank)]
        dtype_id, num_bytes = take("<B"), take("<I")
        if dtype_id not in _DTYPES:
            raise ValueError(f"{file}: variable {name} has unknown dtype id {dtype_id}")
        dtype = _DTYPES[dtype_id]
        if num_bytes:
            # copied out of the file's buffer: aligned for the kernels, and the buffer is freed
            tensor = torch.frombuffer(
                data, dtype=dtype, count=num_bytes // dtype.itemsize, offset=offset
            ).clone()
        else:
            tensor = torch.empty(0, dtype=dtype)
        offset += num_bytes
        variables[name] = tensor.reshape(dims)
    for _ in range(take("<I") if offset < len(data) else 0):
        alias, target = string(), string()
        variables[alias] = variables[target]
    return spec, variables


def _linear(out: dict, variables: dict, src: str, dst: str | list[str], int8: dict) -> None:
    """Copy src/weight and src/bias to one HF linear, or split them evenly over several. An
    int8 weight (with src/weight_scale) is also put, split alike, in `int8` as (int8, scale)."""
    names = [dst] if isinstance(dst, str) else dst
    for part in ("weight", "bias"):
        tensor = variables.get(f"{src}/{part}")
        if tensor is None:
            continue
        for name, piece in zip(names, tensor.chunk(len(names), dim=0)):
            if part == "bias" and name.endswith("k_proj"):
                continue  # Whisper's k projection has no bias (CTranslate2 stores zeros)
            out[f"{name}.{part}"] = piece.contiguous()
    if f"{src}/weight_int8" in variables:
        pieces = zip(
            *(variables[f"{src}/{v}"].chunk(len(names), dim=0) for v in ("weight_int8", "weight_scale"))
        )
        for name, (q, scale) in zip(names, pieces):
            int8[f"{name}.weight"] = (q.contiguous(), scale.contiguous())


def _num_layers(variables: dict, stack: str) -> int:
    return len({m.group(1) for k in variables if (m := re.match(rf"{stack}/layer_(\d+)/", k))})


def _norm(out: dict, variables: dict, src: str, dst: str) -> None:
    out[f"{dst}.weight"] = variables[f"{src}/gamma"]
    out[f"{dst}.bias"] = variables[f"{src}/beta"]


def dequantize(variables: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The variables with every int8 `X/weight` (rows scaled by `X/weight_scale`, as CTranslate2
    stores int8, int8_float16 and int8_float32 models) also as float32 `X/weight` = int8 / scale;
    the int8 originals under `X/weight_int8`."""
    out = dict(variables)
    for name, scale in variables.items():
        if name.endswith("/weight_scale"):
            base = name[: -len("_scale")]
            q = variables[base]
            out[base] = q.float() / scale.float().view(-1, *[1] * (q.dim() - 1))
            out[base + "_int8"] = q
    return out


def whisper_state_dict(variables: dict[str, torch.Tensor]) -> tuple[dict, dict]:
    """CTranslate2 WhisperSpec variables -> (state dict with Hugging Face's
    WhisperForConditionalGeneration names, {HF name: (int8 weight, CTranslate2 scale)} for the
    int8 linears and token embedding of a quantized model, empty for a float one)."""
    variables = dequantize(variables)
    out: dict[str, torch.Tensor] = {}
    int8: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for stack in ("encoder", "decoder"):
        hf = f"model.{stack}"
        _norm(out, variables, f"{stack}/layer_norm", f"{hf}.layer_norm")
        out[f"{hf}.embed_positions.weight"] = variables[f"{stack}/position_encodings/encodings"]
        num_layers = _num_layers(variables, stack)
        for i in range(num_layers):
            src, dst = f"{stack}/layer_{i}", f"{hf}.layers.{i}"
            _norm(out, variables, f"{src}/self_attention/layer_norm", f"{dst}.self_attn_layer_norm")
            _linear(
                out,
                variables,
                f"{src}/self_attention/linear_0",
                [f"{dst}.self_attn.{p}_proj" for p in "qkv"],
                int8,
            )
            _linear(out, variables, f"{src}/self_attention/linear_1", f"{dst}.self_attn.out_proj", int8)
            if stack == "decoder":
                _norm(out, variables, f"{src}/attention/layer_norm", f"{dst}.encoder_attn_layer_norm")
                _linear(out, variables, f"{src}/attention/linear_0", f"{dst}.encoder_attn.q_proj", int8)
                _linear(
                    out,
                    variables,
                    f"{src}/attention/linear_1",
                    [f"{dst}.encoder_attn.{p}_proj" for p in "kv"],
                    int8,
                )
                _linear(out, variables, f"{src}/attention/linear_2", f"{dst}.encoder_attn.out_proj", int8)
            _norm(out, variables, f"{src}/ffn/layer_norm", f"{dst}.final_layer_norm")
            _linear(out, variables, f"{src}/ffn/linear_0", f"{dst}.fc1", int8)
            _linear(out, variables, f"{src}/ffn/linear_1", f"{dst}.fc2", int8)
    for conv in ("conv1", "conv2"):
        out[f"model.encoder.{conv}.weight"] = variables[f"encoder/{conv}/weight"]
        out[f"model.encoder.{conv}.bias"] = variables[f"encoder/{conv}/bias"]
    embed = out["model.decoder.embed_tokens.weight"] = variables["decoder/embeddings/weight"]
    if "decoder/embeddings/weight_int8" in variables:
        int8["model.decoder.embed_tokens.weight"] = (
            variables["decoder/embeddings/weight_int8"],
            variables["decoder/embeddings/weight_scale"],
        )
    projection = variables.get("decoder/projection/weight")  # usually an alias of the embedding
    out["proj_out.weight"] = (
        projection if projection is not None and projection.is_floating_point() else embed
    )
    return out, int8


def _special_tokens(path: str) -> dict[str, int]:
    with open(os.path.join(path, "tokenizer.json")) as f:
        added = json.load(f).get("added_tokens", [])
    return {t["content"]: t["id"] for t in added}


def whisper_configs(
    path: str, variables: dict[str, torch.Tensor]
) -> tuple[WhisperConfig, WhisperGenerationConfig]:
    """The model's and its generation's configs for a CTranslate2 Whisper folder."""
    with open(os.path.join(path, "config.json")) as f:
        ct2 = json.load(f)
    specials = _special_tokens(path)
    missing = [t for t in ("<|endoftext|>", "<|startoftranscript|>", "<|notimestamps|>") if t not in specials]
    if missing:
        raise ValueError(f"{path}/tokenizer.json lacks Whisper's control tokens {missing}")
    embed = variables["decoder/embeddings/weight"]
    vocab_size, d_model = embed.shape
    num_layers = {s: _num_layers(variables, s) for s in ("encoder", "decoder")}
    heads = {s: int(variables[f"{s}/num_heads"].item()) for s in ("encoder", "decoder")}
    eot, sot = specials["<|endoftext|>"], specials["<|startoftranscript|>"]
    config = WhisperConfig(
        vocab_size=vocab_size,
        num_mel_bins=variables["encoder/conv1/weight"].shape[1],
        d_model=d_model,
        encoder_layers=num_layers["encoder"],
        decoder_layers=num_layers["decoder"],
        encoder_attention_heads=heads["encoder"],
        decoder_attention_heads=heads["decoder"],
        encoder_ffn_dim=variables["encoder/layer_0/ffn/linear_0/weight"].shape[0],
        decoder_ffn_dim=variables["decoder/layer_0/ffn/linear_0/weight"].shape[0],
        max_source_positions=variables["encoder/position_encodings/encodings"].shape[0],
        max_target_positions=variables["decoder/position_encodings/encodings"].shape[0],
        eos_token_id=eot,
        bos_token_id=eot,
        pad_token_id=eot,
        decoder_start_token_id=sot,
        suppress_tokens=ct2.get("suppress_ids"),
        begin_suppress_tokens=ct2.get("suppress_ids_begin"),
    )
    is_multilingual = vocab_size >= 51865
    gen = dict(
        decoder_start_token_id=sot,
        eos_token_id=eot,
        bos_token_id=eot,
        pad_token_id=eot,
        max_length=config.max_target_positions,
        no_timestamps_token_id=specials["<|notimestamps|>"],
        prev_sot_token_id=specials.get("<|startofprev|>"),
        is_multilingual=is_multilingual,
        suppress_tokens=ct2.get("suppress_ids"),
        begin_suppress_tokens=ct2.get("suppress_ids_begin"),
        max_initial_timestamp_index=50,
        alignment_heads=ct2.get("alignment_heads"),
    )
    if is_multilingual:
        gen["lang_to_id"] = {
            t: i for t, i in specials.items() if re.fullmatch(r"<\|[a-z]{2,3}\|>", t) and t[2:-2] in LANGUAGES
        }
        gen["task_to_id"] = {"translate": specials["<|translate|>"], "transcribe": specials["<|transcribe|>"]}
    return config, WhisperGenerationConfig(**gen)


def load_ctranslate2_whisper(path: str):
    """(HF-named state dict in float32 or the file's float type, WhisperConfig,
    WhisperGenerationConfig); an int8 model's weights are dequantized (see
    `load_ctranslate2_whisper_int8` for the int8)."""
    state_dict, _, config, generation_config = load_ctranslate2_whisper_int8(path)
    return state_dict, config, generation_config


def load_ctranslate2_whisper_int8(path: str):
    """(state dict, {HF name: (int8 weight [out, in], CTranslate2 scale [out])}, WhisperConfig,
    WhisperGenerationConfig): a float model has no int8 weights; an int8 one has its scales, where a
    weight equals int8 / scale row by row."""
    spec, variables = read_model_bin(os.path.join(path, "model.bin"))
    if spec != "WhisperSpec":
        raise ValueError(f"{path}: CTranslate2 model of type {spec}; Scriba reads WhisperSpec models only")
    config, generation_config = whisper_configs(path, variables)
    return *whisper_state_dict(variables), config, generation_config
