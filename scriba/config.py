"""One EngineConfig, validated once, passed everywhere."""

from __future__ import annotations

from dataclasses import dataclass

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
class EngineConfig:
    """Everything the engine needs to know, checked in `__post_init__`.

    `device` and `dtype` may be "auto": they resolve to the GPU (float16) when one is
    present, else the CPU (float32). `num_kv_blocks=None` sizes the KV pool from memory, for
    at most `max_num_seqs` requests of full length. On the CPU the swap pool is only made
    for preemption_mode="swap" (swapping to the device's own memory gains nothing otherwise).
    """

    model: str | None = None
    tokenizer: str | None = None  # defaults to `model`
    revision: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    seed: int = 0
    # KV cache
    block_size: int = 16
    num_kv_blocks: int | None = None
    num_cpu_blocks: int | None = None
    kv_cache_memory_fraction: float = 0.25  # CPU: of available memory, when num_kv_blocks is None
    gpu_memory_utilization: float = 0.9  # GPU: the share of its memory for weights, activations and KV
    swap_space_gb: float = 1.0  # CPU swap pool, when num_cpu_blocks is None
    # Scheduling
    max_num_seqs: int | None = None  # decoder sequences per step: 256 on a GPU, 64 on the CPU
    max_num_batched_tokens: int = 16384
    preemption_mode: str = "recompute"
    # Schedule and pack step k + 1 while step k runs: its sampled tokens feed step k + 1 on the
    # device and are read back a step later (Engine.step). None: on a GPU only (on the
    # CPU nothing runs while the host packs, so there is nothing to hide). Steps with beam search
    # or an n > 1 request's first token are read back at once.
    async_scheduling: bool | None = None
    # Admitted requests' encoder (and their cross-attention K/V writes) run apart from the decode
    # steps: on a GPU on a CUDA stream of their own, so the running requests decode while the next
    # windows encode; a request's prompt joins the first step after its encoder finished
    # (engine/encoder_stream.py). On the CPU the encoder runs when admitted, the prompt a step
    # later. None: on a GPU only (an H200, whisper-large-v3's shape, batch 256: RTFx 1,395 -> 1,695,
    # the admission's host work hidden; benchmarks/results/gpu_h200_2026-11-28_session30.txt).
    encoder_stream: bool | None = None
    # "torch" anywhere; "numba" (its decode attention) on the CPU in float32; "cuda" (flash
    # prefill + Triton) or "triton" on a GPU. "auto": "cuda" on a GPU, "numba" on a float32 CPU.
    attention_backend: str = "auto"
    cuda_graphs: bool = True  # on a GPU, replay decode steps from CUDA graphs (needs a Triton backend)
    # None: weights in `dtype`. "int8": int8 weights and dynamic int8 activations in every Linear
    # layer and the logits (CPU, float32 activations); see models/quantize.py.
    quantization: str | None = None
    # The KV cache's dtype. "auto": the compute dtype. "bfloat16" under float32 on the CPU: decode
    # attention reads half the bytes, through kernels/cpu_paged_attention.py (1.05-1.31x faster
    # with int8; not the default: it cost the multilingual base one word too many in Spanish).
    # "fp8" (e4m3) or "int8": 8-bit codes with a scale per cached vector (kernels/kv8.py): a
    # quarter of float32's bytes, on the CPU or a GPU, under any compute dtype.
    kv_cache_dtype: str = "auto"
    # CPU threads for torch's intra-op pool. None: one per physical core this process may use,
    # within its container's CPU quota (engine/threads.py), unless OMP_NUM_THREADS is set.
    num_threads: int | None = None
    # What executes an audio model's encoder (a pure function of its features). "torch": the model's
    # own modules. "openvino": a graph built from the same weights and compiled by OpenVINO for this
    # CPU (where it has bfloat16 dot products, bfloat16 or int8 weights with dynamically quantized
    # activations and bfloat16 around them; elsewhere those int8 products or float32: whichever is
    # faster, timed once per machine); CPU only, float32 activations (whisper/openvino_encoder.py).
    encoder_runtime: str = "torch"
    # A window's padding past its audio. "computed": every position encoded (exact). "cached":
    # in a window with up to 15 s of audio, only the audio's positions and 5 s past them, the rest
    # taken from one silent window (a short clip's encoder 2-3x cheaper, not exact: a few words
    # and segment ends change; whisper/cached_padding.py); with encoder_runtime="openvino" only.
    encoder_padding: str = "computed"
    # None: the encoder's products in `dtype`. "fp8": its feed-forward layers' products in e4m3,
    # weights scaled per channel, activations per row (models/fp8_linear.py): for a GPU's fp8
    # tensor cores (an H100's); on a CPU the same arithmetic, slower, to measure its precision.
    # With encoder_runtime="torch".
    encoder_quantization: str | None = None
    # What executes the decoder's decode-only steps of a few rows (a lone request's). "numba": the
    # whole stack and the logits as one numba call each over the int8 weights and the paged cache
    # (models/decoder_step.py; CPU, quantization="int8", a pre-norm decoder, a float32, float16,
    # bfloat16 or int8 cache); "torch": the modules. "auto": "numba" where it runs, else "torch".
    decoder_runtime: str = "auto"

    def __post_init__(self) -> None:
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, got {self.dtype!r}")
        if self.preemption_mode not in _PREEMPTION_MODES:
            raise ValueError(
                f"preemption_mode must be one of {_PREEMPTION_MODES}, got {self.preemption_mode!r}"
            )
        if self.attention_backend not in _BACKENDS:
            raise ValueError(f"attention_backend must be one of {_BACKENDS}, got {self.attention_backend!r}")
        if self.device != "auto" and self.device.split(":")[0] not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {self.device!r}")
        _check_positive("block_size", self.block_size)
        if self.max_num_seqs is not None:
            _check_positive("max_num_seqs", self.max_num_seqs)
        _check_positive("max_num_batched_tokens", self.max_num_batched_tokens)
        if self.num_threads is not None:
            _check_positive("num_threads", self.num_threads)
        if self.num_kv_blocks is not None:
            _check_positive("num_kv_blocks", self.num_kv_blocks)
        if self.num_cpu_blocks is not None and self.num_cpu_blocks < 0:
            raise ValueError(f"num_cpu_blocks must be >= 0, got {self.num_cpu_blocks}")
        if not 0 < self.kv_cache_memory_fraction <= 1:
            raise ValueError(
                f"kv_cache_memory_fraction must be in (0, 1], got {self.kv_cache_memory_fraction}"
            )
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.swap_space_gb < 0:
            raise ValueError(f"swap_space_gb must be >= 0, got {self.swap_space_gb}")
        if self.device == "auto":
            self.device = "cuda" if _cuda_available() else "cpu"
        elif self.device.startswith("cuda") and not _cuda_available():
            raise ValueError(
                f"device {self.device!r} was asked for, but torch sees no CUDA GPU; use device='cpu'"
            )
        on_gpu = self.device.startswith("cuda")
        self._check_quantization(on_gpu)
        if self.dtype == "auto":
            self.dtype = "float16" if on_gpu else "float32"
        self._check_kv_cache_dtype(on_gpu)
        self._check_encoder_runtime(on_gpu)
        if self.decoder_runtime not in _DECODER_RUNTIMES:
            raise ValueError(
                f"decoder_runtime must be one of {_DECODER_RUNTIMES}, got {self.decoder_runtime!r}"
            )
        if self.decoder_runtime == "numba" and on_gpu:
            raise ValueError("decoder_runtime='numba' runs on the CPU only")
        if self.max_num_seqs is None:
            self.max_num_seqs = 256 if on_gpu else 64
        if self.async_scheduling is None:
            self.async_scheduling = on_gpu
        if self.encoder_stream is None:
            self.encoder_stream = on_gpu
        if self.num_cpu_blocks is None and not on_gpu and self.preemption_mode != "swap":
            self.num_cpu_blocks = 0

    def _check_quantization(self, on_gpu: bool) -> None:
        if self.quantization is None:
            return
        if self.quantization not in _QUANTIZATIONS:
            raise ValueError(
                f"quantization must be one of {_QUANTIZATIONS} or None, got {self.quantization!r}"
            )
        if on_gpu:
            raise ValueError(
                "quantization='int8' runs on the CPU only; on a GPU use dtype float16 or bfloat16"
            )
        if self.dtype not in ("auto", "float32"):
            raise ValueError(f"quantization='int8' computes in float32; got dtype={self.dtype!r}")

    def _check_kv_cache_dtype(self, on_gpu: bool) -> None:
        kv = self.kv_cache_dtype
        if kv not in _KV_CACHE_DTYPES:
            raise ValueError(f"kv_cache_dtype must be one of {_KV_CACHE_DTYPES}, got {kv!r}")
        half_under_float32 = kv in ("float16", "bfloat16") and (self.dtype, on_gpu) == ("float32", False)
        if kv not in ("auto", "fp8", "int8", self.dtype) and not half_under_float32:
            raise ValueError(
                f"kv_cache_dtype={kv!r} with dtype={self.dtype!r}: the cache is in the compute dtype, "
                "or float16 or bfloat16 under float32 on the CPU, or 8-bit (fp8, int8)"
            )

    def _check_encoder_runtime(self, on_gpu: bool) -> None:
        if self.encoder_runtime not in _ENCODER_RUNTIMES:
            raise ValueError(
                f"encoder_runtime must be one of {_ENCODER_RUNTIMES}, got {self.encoder_runtime!r}"
            )
        if self.encoder_runtime == "openvino" and (on_gpu or self.dtype != "float32"):
            raise ValueError(
                "encoder_runtime='openvino' runs on the CPU with dtype float32 (it picks its own precision)"
            )
        if self.encoder_padding not in _ENCODER_PADDINGS:
            raise ValueError(
                f"encoder_padding must be one of {_ENCODER_PADDINGS}, got {self.encoder_padding!r}"
            )
        if self.encoder_padding == "cached" and self.encoder_runtime != "openvino":
            raise ValueError("encoder_padding='cached' needs encoder_runtime='openvino'")
        quantization = self.encoder_quantization
        if quantization is not None and quantization not in _ENCODER_QUANTIZATIONS:
            raise ValueError(
                f"encoder_quantization must be one of {_ENCODER_QUANTIZATIONS} or None, got {quantization!r}"
            )
        if quantization is not None and self.encoder_runtime != "torch":
            raise ValueError(f"encoder_quantization={quantization!r} needs encoder_runtime='torch'")

    @property
    def torch_dtype(self):
        import torch

        return getattr(torch, self.dtype)

    @property
    def torch_kv_cache_dtype(self):
        import torch

        if self.kv_cache_dtype == "fp8":
            return torch.float8_e4m3fn
        return self.torch_dtype if self.kv_cache_dtype == "auto" else getattr(torch, self.kv_cache_dtype)


def _check_positive(name: str, value: int) -> None:
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()
