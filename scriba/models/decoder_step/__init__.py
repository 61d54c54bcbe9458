"""The CPU decoder step as one unit: `step.py` runs a decode-only step of a few rows of a pre-norm
decoder as one numba call over its int8 weights and the paged cache (NumbaDecoderStep,
EngineConfig's decoder_runtime="numba"), `kernel.py` is that call (numba, with LLVM IR for the
VNNI products it shares with kernels/cpu_vnni.py)."""

from scriba.models.decoder_step.step import MAX_ROWS, NumbaDecoderStep, int8_linear, unsupported

__all__ = ["MAX_ROWS", "NumbaDecoderStep", "int8_linear", "unsupported"]
