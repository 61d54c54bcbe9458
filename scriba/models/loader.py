"""Find a checkpoint (local folder or Hugging Face hub id) and load its weights by name.

Loading is strict: a tensor the model does not have, a parameter the checkpoint lacks, or a
shape that differs is an error that names the weights. Fused projections (`qkv_proj`,
`kv_proj`) are filled shard by shard from the checkpoint's q_proj / k_proj / v_proj.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import struct
from collections.abc import Iterator

import torch
from torch import nn

from scriba.models.offline import offline_model_path


def is_ctranslate2_folder(path: str) -> bool:
    """A CTranslate2 (faster-whisper) model folder: model.bin with its spec header."""
    if not os.path.isfile(os.path.join(path, "model.bin")):
        return False
    with open(os.path.join(path, "model.bin"), "rb") as f:
        head = f.read(64)
    return len(head) >= 8 and 4 <= struct.unpack_from("<I", head)[0] <= 6 and b"Spec" in head


_WEIGHT_PATTERNS = ["*.json", "*.safetensors", "*.bin", "*.model", "*.txt", "*.tiktoken"]
_SHARDS = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "kv_proj": ("k_proj", "v_proj")}


def resolve_model_path(model: str, revision: str | None = None) -> str:
    """An offline model's short name (`tiny.en`, `base`: models/offline.py) as its folder; a
    local folder as is; otherwise download (or find in the cache) the hub repo `model`."""
    offline = offline_model_path(model)
    if offline is not None:
        return offline
    if os.path.isdir(model):
        return model
    if os.path.isabs(model) or model.startswith(("./", "../", "~")):
        raise OSError(f"could not find model {model!r}: there is no such folder")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(model, revision=revision, allow_patterns=_WEIGHT_PATTERNS)
    except Exception as e:  # offline, unknown repo, gated, ...
        raise OSError(f"could not find model {model!r}: {_why_not_found(model, e)}") from None


def _why_not_found(model: str, error: Exception) -> str:
    from huggingface_hub.errors import LocalEntryNotFoundError

    if isinstance(error, LocalEntryNotFoundError):  # not cached, and the hub cannot be reached
        return (
            "it is not a local folder or in the Hugging Face cache, and the hub cannot be reached; "
            f"get it with `scriba download {model}` where there is internet, or pass a local folder"
        )
    reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return (
        f"it is not a local folder and the Hugging Face hub could not provide it "
        f"({type(error).__name__}: {reason}); pass a local folder with config.json and the weights"
    )


def model_availability(model: str, revision: str | None = None, timeout: float = 5.0) -> tuple[str, str]:
    """Whether `model` can be loaded here, without loading it: ("local", folder) for a folder
    or a cached hub repo, ("hub", "") when the hub has it, ("missing", one sentence why) else."""
    from huggingface_hub import model_info

    if os.path.isdir(model):
        return "local", model
    if os.path.isabs(model) or model.startswith(("./", "../", "~")):
        return "missing", f"there is no folder {model!r}"
    cached = _cached_snapshot(model, revision)
    if cached is not None:
        return "local", cached
    try:
        model_info(model, revision=revision, timeout=timeout)
        return "hub", ""
    except Exception as e:  # offline, unknown, gated
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError

        if isinstance(e, RepositoryNotFoundError):
            return "missing", f"the Hugging Face hub has no model {model!r}"
        if isinstance(e, HfHubHTTPError) and getattr(e, "response", None) is not None:
            return "missing", _why_not_found(model, e)
        return "missing", _why_not_found(model, LocalEntryNotFoundError("the hub cannot be reached"))


def _cached_snapshot(model: str, revision: str | None) -> str | None:
    """The folder of `model` in the Hugging Face cache, or None when it is not there."""
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(
            model, revision=revision, allow_patterns=["config.json"], local_files_only=True
        )
    except Exception:  # noqa: BLE001 - not cached (or not a valid repo id): the hub is asked next
        return None


def download_model(model: str, revision: str | None = None, folder: str | None = None) -> str:
    """Fetch the hub repo `model`'s config, tokenizer and weights for offline use: into the
    Hugging Face cache (where every Scriba command finds it), or into `folder`. Returns the path."""
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(model, revision=revision, allow_patterns=_WEIGHT_PATTERNS, local_dir=folder)
    except Exception as e:
        from huggingface_hub.errors import LocalEntryNotFoundError

        if isinstance(e, LocalEntryNotFoundError):
            raise OSError(f"could not download {model!r}: the Hugging Face hub cannot be reached") from None
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise OSError(f"could not download {model!r}: {reason}") from None


def iterate_checkpoint(path: str) -> Iterator[tuple[str, torch.Tensor]]:
    """(name, tensor) for every tensor of the folder's safetensors or pytorch_model.bin files."""
    for index_name, single_name in (
        ("model.safetensors.index.json", "model.safetensors"),
        ("pytorch_model.bin.index.json", "pytorch_model.bin"),
    ):
        index = os.path.join(path, index_name)
        if os.path.exists(index):
            with open(index) as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        elif os.path.exists(os.path.join(path, single_name)):
            files = [single_name]
        else:
            continue
        for file in files:
            yield from _read_file(os.path.join(path, file))
        return
    raise FileNotFoundError(f"no model.safetensors or pytorch_model.bin (or their index) in {path}")


def _read_file(file: str) -> Iterator[tuple[str, torch.Tensor]]:
    if file.endswith(".safetensors"):
        from safetensors import safe_open

        with safe_open(file, framework="pt") as f:
            for name in f.keys():
                yield name, f.get_tensor(name)
    else:
        yield from torch.load(file, map_location="cpu", weights_only=True).items()


_RANDOM_INITS = (
    "uniform_",
    "normal_",
    "trunc_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "xavier_uniform_",
    "xavier_normal_",
)


@contextlib.contextmanager
def skip_random_init():
    """Modules built inside keep their parameters as allocated, without the random values that
    `load_weights` overwrites anyway (drawing them cost tiny.en 0.18 s of a cold start); explicit
    values (zeros, ones, a zeroed shard) are still written. torch.nn.init's random functions are
    swapped for the duration, as transformers' `no_init_weights` does."""
    saved = {name: getattr(nn.init, name) for name in _RANDOM_INITS}
    for name in _RANDOM_INITS:
        setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(nn.init, name, function)


def load_weights(model: nn.Module, weights: Iterator[tuple[str, torch.Tensor]]) -> None:
    """Copy checkpoint tensors into `model` by name; raise on missing/unexpected/mis-shaped.

    The model may define `checkpoint_name(name) -> str | None` (renames; None skips a tied
    alias) and `optional_weights`: patterns ("name" or "name:shard", fnmatch-style) of
    weights that keep their initial value when the checkpoint lacks them.
    """
    params = dict(model.named_parameters())
    params.update(model.named_buffers())
    rename = getattr(model, "checkpoint_name", lambda n: n)
    needed = {(name, shard) for name in params for shard in _shard_names(name)}
    loaded: set[tuple[str, str | None]] = set()
    unexpected, misshaped = [], []
    for ckpt_name, tensor in weights:
        name = rename(ckpt_name)
        if name is None:
            continue
        target = _find_target(name, params)
        if target is None:
            unexpected.append(ckpt_name)
            continue
        param_name, shard = target
        param = params[param_name]
        dest = param.data if shard is None else _shard_view(param.data, param_name, shard)
        if dest.shape != tensor.shape:
            dest_shape = tuple(dest.shape)
            misshaped.append(f"{ckpt_name}: checkpoint {tuple(tensor.shape)}, model {dest_shape}")
            continue
        with torch.no_grad():
            dest.copy_(tensor)
        loaded.add((param_name, shard))
    optional = getattr(model, "optional_weights", frozenset())
    missing = sorted(
        f"{n}" + (f" ({s})" if s else "") for n, s in needed - loaded if not _is_optional(n, s, optional)
    )
    problems = []
    if missing:
        problems.append(
            f"missing from the checkpoint: {missing[:10]}" + (" ..." if len(missing) > 10 else "")
        )
    if unexpected:
        problems.append(f"not in the model: {unexpected[:10]}" + (" ..." if len(unexpected) > 10 else ""))
    if misshaped:
        problems.append(f"shape mismatch: {misshaped[:10]}")
    if problems:
        raise ValueError(f"cannot load weights into {type(model).__name__}: " + "; ".join(problems))


def gather_int8(model: nn.Module, weights) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{model parameter name: (int8 [out, in], scale [out])} from checkpoint (name, (int8,
    scale)) pairs, renamed and fused into the model's projections as `load_weights` does;
    only parameters that the checkpoint gives whole (every shard) are kept."""
    params = dict(model.named_parameters())
    rename = getattr(model, "checkpoint_name", lambda n: n)
    out, filled = {}, {}
    for ckpt_name, (q, scale) in weights:
        target = _find_target(rename(ckpt_name), params) if rename(ckpt_name) else None
        if target is None:
            continue
        name, shard = target
        if name not in out:
            out[name] = (torch.zeros(params[name].shape, dtype=torch.int8), torch.ones(params[name].shape[0]))
            filled[name] = set()
        q_all, scale_all = out[name]
        rows = slice(None) if shard is None else _shard_rows(q_all.shape[0], name, shard)
        q_all[rows], scale_all[rows] = q, scale
        filled[name].add(shard)
    return {n: w for n, w in out.items() if filled[n] == set(_shard_names(n))}


def _is_optional(name: str, shard: str | None, patterns) -> bool:
    key = f"{name}:{shard}" if shard else name
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def _shard_names(name: str) -> tuple[str | None, ...]:
    module = name.rsplit(".", 2)[-2] if name.count(".") >= 1 else ""
    return _SHARDS.get(module, (None,))


def _find_target(name: str, params: dict) -> tuple[str, str | None] | None:
    """Our (parameter, shard) for a checkpoint name: as is, or a shard of a fused projection."""
    if name in params:
        return name, None
    prefix, _, rest = name.rpartition(".")  # "...self_attn.q_proj", "weight"
    owner, _, proj = prefix.rpartition(".")
    for fused, shards in _SHARDS.items():
        fused_name = f"{owner}.{fused}.{rest}"
        if proj in shards and fused_name in params:
            return fused_name, proj
    return None


def _shard_view(tensor: torch.Tensor, name: str, shard: str) -> torch.Tensor:
    return tensor[_shard_rows(tensor.shape[0], name, shard)]


def _shard_rows(rows: int, name: str, shard: str) -> slice:
    shards = _SHARDS[name.rsplit(".", 2)[-2]]
    size = rows // len(shards)
    i = shards.index(shard)
    return slice(i * size, (i + 1) * size)
