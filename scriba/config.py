"""One EngineConfig, grouped by concern as vLLM's is (model, cache, scheduler, execution), validated
once; and one resolution of the defaults for a model on a machine (`resolve_config`), which every
surface (Engine, transcribe(), summarize(), the CLI, the server, the web app, Ray) builds its
engines through. A field's comment says what the setting means; docs/engine.md and
docs/performance.md say what each choice measured."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

_DTYPES = ("auto", "float32", "float16", "bfloat16")
_KV_CACHE_DTYPES = (*_DTYPES, "fp8", "int8")
_PREEMPTION_MODES = ("recompute", "swap")
_BACKENDS = ("auto", "torch", "numba", "triton", "cuda")
_QUANTIZATIONS = ("int8",)  # as scriba.models.quantize.QUANTIZATIONS (config imports no torch)
_ENCODER_RUNTIMES = ("torch", "openvino")
_ENCODER_QUANTIZATIONS = ("fp8",)  # as scriba.models.fp8_linear.ENCODER_QUANTIZATIONS
_ENCODER_PADDINGS = ("computed", "cached")
_DECODER_RUNTIMES = ("auto", "torch", "numba")


@dataclass
class ModelConfig:
    """What runs: the checkpoint and the precision of its weights and products."""

    model: str | None = None  # a hub id, a folder, an offline name ("tiny.en", "base"); None: tiny.en
    tokenizer: str | None = None  # None: the model's own
    revision: str | None = None  # the hub revision to download
    # The compute dtype. "auto": float16 on a GPU, float32 on the CPU (float32: the exact mode, the
    # one the transformers oracle checks token for token).
    dtype: str = "auto"
    # None: weights in `dtype`. "int8": int8 weights and dynamically quantized int8 activations in
    # every Linear layer and the logits (CPU, float32 activations; models/quantize.py).
    quantization: str | None = None
    seed: int = 0  # the engine's sampling generator; a request's own seed overrides it


@dataclass
class CacheConfig:
    """The paged KV cache: its blocks, their dtype, and how many there are."""

    block_size: int = 16  # positions a block
    num_kv_blocks: int | None = None  # None: sized from memory for max_num_seqs full-length requests
    num_cpu_blocks: int | None = None  # the host swap pool; None: from swap_space_gb
    # "auto": the compute dtype. "float16"/"bfloat16" under float32 on the CPU: decode attention
    # reads half the bytes. "fp8" (e4m3) or "int8": 8-bit codes with a scale per cached vector
    # (kernels/kv8.py), on the CPU or a GPU, under any compute dtype.
    kv_cache_dtype: str = "auto"
    kv_cache_memory_fraction: float = 0.25  # CPU: the share of available memory for the pool
    gpu_memory_utilization: float = 0.9  # GPU: the share of its memory for weights, activations and KV
    swap_space_gb: float = 1.0  # the host swap pool, when num_cpu_blocks is None


@dataclass
class SchedulerConfig:
    """Continuous batching: how much a step takes and what happens when blocks run out."""

    max_num_seqs: int | None = None  # decoder sequences a step; None: 256 on a GPU, 64 on the CPU
    max_num_batched_tokens: int = 16384  # encoder and decoder tokens a step
    preemption_mode: str = "recompute"  # "recompute" or "swap" a preempted request's blocks
    # Schedule and pack step k + 1 while step k runs, its sampled tokens feeding step k + 1 on the
    # device. None: on a GPU only (on the CPU nothing runs while the host packs).
    async_scheduling: bool | None = None


@dataclass
class ExecutionConfig:
    """Where and by what the model runs."""

    device: str = "auto"  # "auto" (a GPU if present), "cpu" or "cuda[:N]"
    # CPU threads for torch's intra-op pool. None: one per physical core this process may use,
    # within its container's CPU quota (engine/threads.py), unless OMP_NUM_THREADS is set.
    num_threads: int | None = None
    # "torch" anywhere; "numba" (its decode attention) on the CPU in float32; "cuda" (flash prefill +
    # Triton) or "triton" on a GPU. "auto": "cuda" on a GPU, "numba" on a float32 CPU.
    attention_backend: str = "auto"
    cuda_graphs: bool = True  # on a GPU, replay decode steps from CUDA graphs (a Triton backend)
    # What executes an audio model's encoder: "torch", its own modules; "openvino", a graph built
    # from the same weights and compiled for this CPU in the precision it runs fastest (CPU,
    # float32 activations; models/openvino_encoder/runtime.py).
    encoder_runtime: str = "torch"
    # A window's padding past its audio: "computed", every position encoded (exact); "cached", a
    # short clip's padding taken from one silent window (models/openvino_encoder/; not exact).
    encoder_padding: str = "computed"
    # None: the encoder's products in `dtype`. "fp8": its feed-forward products in e4m3 for a GPU's
    # fp8 tensor cores (models/fp8_linear.py); with encoder_runtime="torch".
    encoder_quantization: str | None = None
    # Admitted requests' encoder runs apart from the decode steps (on a GPU on a CUDA stream of its
    # own; engine/encoder_stream.py). None: on a GPU only.
    encoder_stream: bool | None = None
    # What executes the decode-only steps of a few rows: "numba", the whole decoder as one call over
    # the int8 weights and the paged cache (models/decoder_step/; CPU); "torch", the modules.
    # "auto": "numba" where it runs, else "torch".
    decoder_runtime: str = "auto"


# option -> the values it takes (what the CLI and the server offer)
CHOICES = {
    "dtype": _DTYPES,
    "quantization": _QUANTIZATIONS,
    "kv_cache_dtype": _KV_CACHE_DTYPES,
    "preemption_mode": _PREEMPTION_MODES,
    "attention_backend": _BACKENDS,
    "encoder_runtime": _ENCODER_RUNTIMES,
    "encoder_padding": _ENCODER_PADDINGS,
    "encoder_quantization": _ENCODER_QUANTIZATIONS,
    "decoder_runtime": _DECODER_RUNTIMES,
}
GROUPS = {
    "model_config": ModelConfig,
    "cache_config": CacheConfig,
    "scheduler_config": SchedulerConfig,
    "execution_config": ExecutionConfig,
}
# option name -> its group: every field name is unique across the groups
OPTIONS = {f.name: group for group, cls in GROUPS.items() for f in dataclasses.fields(cls)}


@dataclass
class EngineConfig:
    """Everything the engine needs to know, in four groups, checked once in `__post_init__`, where
    "auto" and None settings resolve for the device. `EngineConfig.create(**options)` builds it from
    flat option names (the names `Engine`, `transcribe()` and the CLI take)."""

    model_config: ModelConfig = field(default_factory=ModelConfig)
    cache_config: CacheConfig = field(default_factory=CacheConfig)
    scheduler_config: SchedulerConfig = field(default_factory=SchedulerConfig)
    execution_config: ExecutionConfig = field(default_factory=ExecutionConfig)

    @classmethod
    def create(cls, **options) -> EngineConfig:
        """From flat options (`EngineConfig.create(device="cpu", block_size=32)`); an unknown name is
        a one-line TypeError naming the nearest known one."""
        grouped: dict[str, dict] = {group: {} for group in GROUPS}
        for name, value in options.items():
            if name not in OPTIONS:
                raise unknown_option(name, set(OPTIONS))
            grouped[OPTIONS[name]][name] = value
        return cls(**{group: GROUPS[group](**values) for group, values in grouped.items()})

    def options(self) -> dict:
        """Every setting by its flat name (what `create` takes back)."""
        return {name: getattr(getattr(self, group), name) for name, group in OPTIONS.items()}

    def __post_init__(self) -> None:
        _check_model(self.model_config)
        _check_cache(self.cache_config)
        _check_scheduler(self.scheduler_config)
        _check_device(self.execution_config)
        on_gpu = self.on_gpu
        _check_quantization(self.model_config, on_gpu)
        if self.model_config.dtype == "auto":
            self.model_config.dtype = "float16" if on_gpu else "float32"
        _check_kv_cache_dtype(self.cache_config.kv_cache_dtype, self.model_config.dtype, on_gpu)
        _check_execution(self.execution_config, self.model_config.dtype, on_gpu)
        scheduler, execution = self.scheduler_config, self.execution_config
        if scheduler.max_num_seqs is None:
            scheduler.max_num_seqs = 256 if on_gpu else 64
        if scheduler.async_scheduling is None:
            scheduler.async_scheduling = on_gpu
        if execution.encoder_stream is None:
            execution.encoder_stream = on_gpu
        cache = self.cache_config
        if cache.num_cpu_blocks is None and not on_gpu and scheduler.preemption_mode != "swap":
            cache.num_cpu_blocks = 0  # swapping to the device's own memory gains nothing

    @property
    def on_gpu(self) -> bool:
        return self.execution_config.device.startswith("cuda")

    @property
    def torch_dtype(self):
        import torch

        return getattr(torch, self.model_config.dtype)

    @property
    def torch_kv_cache_dtype(self):
        import torch

        kv = self.cache_config.kv_cache_dtype
        if kv == "fp8":
            return torch.float8_e4m3fn
        return self.torch_dtype if kv == "auto" else getattr(torch, kv)


def _one_of(name: str, value, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _check_positive(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_model(model: ModelConfig) -> None:
    _one_of("dtype", model.dtype, _DTYPES)
    if model.quantization is not None and model.quantization not in _QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {_QUANTIZATIONS} or None, got {model.quantization!r}")


def _check_cache(cache: CacheConfig) -> None:
    _check_positive("block_size", cache.block_size)
    if cache.num_kv_blocks is not None:
        _check_positive("num_kv_blocks", cache.num_kv_blocks)
    if cache.num_cpu_blocks is not None and cache.num_cpu_blocks < 0:
        raise ValueError(f"num_cpu_blocks must be >= 0, got {cache.num_cpu_blocks}")
    _one_of("kv_cache_dtype", cache.kv_cache_dtype, _KV_CACHE_DTYPES)
    for name in ("kv_cache_memory_fraction", "gpu_memory_utilization"):
        if not 0 < getattr(cache, name) <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {getattr(cache, name)}")
    if cache.swap_space_gb < 0:
        raise ValueError(f"swap_space_gb must be >= 0, got {cache.swap_space_gb}")


def _check_scheduler(scheduler: SchedulerConfig) -> None:
    if scheduler.max_num_seqs is not None:
        _check_positive("max_num_seqs", scheduler.max_num_seqs)
    _check_positive("max_num_batched_tokens", scheduler.max_num_batched_tokens)
    _one_of("preemption_mode", scheduler.preemption_mode, _PREEMPTION_MODES)


def _check_device(execution: ExecutionConfig) -> None:
    device = execution.device
    if device != "auto" and device.split(":")[0] not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {device!r}")
    if device == "auto":
        execution.device = "cuda" if cuda_available() else "cpu"
    elif device.startswith("cuda") and not cuda_available():
        raise ValueError(f"device {device!r} was asked for, but torch sees no CUDA GPU; use device='cpu'")
    if execution.num_threads is not None:
        _check_positive("num_threads", execution.num_threads)


def _check_quantization(model: ModelConfig, on_gpu: bool) -> None:
    if model.quantization is None:
        return
    if on_gpu:
        raise ValueError("quantization='int8' runs on the CPU only; on a GPU use dtype float16 or bfloat16")
    if model.dtype not in ("auto", "float32"):
        raise ValueError(f"quantization='int8' computes in float32; got dtype={model.dtype!r}")


def _check_kv_cache_dtype(kv: str, dtype: str, on_gpu: bool) -> None:
    half_under_float32 = kv in ("float16", "bfloat16") and (dtype, on_gpu) == ("float32", False)
    if kv not in ("auto", "fp8", "int8", dtype) and not half_under_float32:
        raise ValueError(
            f"kv_cache_dtype={kv!r} with dtype={dtype!r}: the cache is in the compute dtype, "
            "or float16 or bfloat16 under float32 on the CPU, or 8-bit (fp8, int8)"
        )


def _check_execution(execution: ExecutionConfig, dtype: str, on_gpu: bool) -> None:
    _one_of("attention_backend", execution.attention_backend, _BACKENDS)
    _one_of("encoder_runtime", execution.encoder_runtime, _ENCODER_RUNTIMES)
    _one_of("encoder_padding", execution.encoder_padding, _ENCODER_PADDINGS)
    _one_of("decoder_runtime", execution.decoder_runtime, _DECODER_RUNTIMES)
    if execution.encoder_runtime == "openvino" and (on_gpu or dtype != "float32"):
        raise ValueError(
            "encoder_runtime='openvino' runs on the CPU with dtype float32 (it picks its own precision)"
        )
    if execution.encoder_padding == "cached" and execution.encoder_runtime != "openvino":
        raise ValueError("encoder_padding='cached' needs encoder_runtime='openvino'")
    quantization = execution.encoder_quantization
    if quantization is not None and quantization not in _ENCODER_QUANTIZATIONS:
        raise ValueError(
            f"encoder_quantization must be one of {_ENCODER_QUANTIZATIONS} or None, got {quantization!r}"
        )
    if quantization is not None and execution.encoder_runtime != "torch":
        raise ValueError(f"encoder_quantization={quantization!r} needs encoder_runtime='torch'")
    if execution.decoder_runtime == "numba" and on_gpu:
        raise ValueError("decoder_runtime='numba' runs on the CPU only")


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def unknown_option(name: str, known: set[str]) -> TypeError:
    """A one-line error for a misspelled option, naming the nearest known one."""
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1)
    return TypeError(f"unknown option {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))


def resolve_config(model: str | None = None, **options) -> EngineConfig:
    """The configuration `model` runs with on this machine: the options asked for over its profile
    (`profile_defaults`), validated once. Options given as None (or "auto" for the dtype) are
    left to the profile and the config's own defaults."""
    from scriba.models.profiles import profile_defaults

    given = {k: v for k, v in options.items() if v is not None}
    for name in given:
        if name not in OPTIONS:
            raise unknown_option(name, set(OPTIONS) - {"model"})
    return EngineConfig.create(model=model, **{**profile_defaults(model, given), **given})
