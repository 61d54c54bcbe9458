"""The options every command that runs a model takes: where and how the model runs."""

from __future__ import annotations

import argparse

DTYPES = ["auto", "float32", "float16", "bfloat16"]
QUANT_HELP = (
    "int8: int8 weights and activations in the Linear layers (CPU only; transcription's default "
    "there unless --dtype is given; docs/performance.md: CPU modes)"
)


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """Where and how the model runs: the same options on every command that runs one."""
    parser.add_argument("--device", default="auto", help="auto (a GPU if present), cpu or cuda[:N]")
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=DTYPES,
        help="compute dtype (auto: float16 on a GPU; on the CPU float32, and int8 Linear layers "
        "for transcription; float32: the exact mode)",
    )
    parser.add_argument("--quantization", default=None, choices=["int8"], help=QUANT_HELP)
    parser.add_argument(
        "--kv-cache-dtype",
        default="auto",
        choices=[*DTYPES, "fp8", "int8"],
        help="KV cache dtype (auto: the compute dtype; float16 or bfloat16 on the CPU: faster "
        "decoding, a few words' cost; fp8 or int8: 8-bit codes with a scale per cached vector)",
    )
    parser.add_argument(
        "--encoder-runtime",
        default=None,
        choices=["torch", "openvino"],
        help="what runs an audio model's encoder on the CPU (default for transcription in int8: "
        "openvino, bfloat16 where the CPU has it; torch: PyTorch's int8 layers)",
    )
    parser.add_argument(
        "--encoder-padding",
        default=None,
        choices=["computed", "cached"],
        help="a window's padding past its audio (computed, the default: every position encoded; "
        "cached, with the openvino encoder: taken from a silent window's states, a short clip's "
        "encoder 2-3x cheaper, a few words changed: docs/performance.md)",
    )
    parser.add_argument(
        "--decoder-runtime",
        default=None,
        choices=["auto", "torch", "numba"],
        help="what runs the decoder's steps of a few rows on the CPU (auto: numba with int8 "
        "weights, one call a step over the int8 codes and the paged cache; torch: the modules)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="CPU threads (default: one per physical core)"
    )


def engine_options(args: argparse.Namespace) -> dict:
    kv = {} if args.kv_cache_dtype == "auto" else {"kv_cache_dtype": args.kv_cache_dtype}
    if args.encoder_runtime:
        kv["encoder_runtime"] = args.encoder_runtime
    if args.encoder_padding:
        kv["encoder_padding"] = args.encoder_padding
    if args.decoder_runtime:
        kv["decoder_runtime"] = args.decoder_runtime
    return {
        "device": args.device,
        "dtype": args.dtype,
        "quantization": args.quantization,
        "num_threads": args.threads,
        **kv,
    }
