"""The engine options every command that runs a model takes: EngineConfig's options as flags. Every
flag defaults to None, "not asked for": config.resolve_config fills what is not given from the
model's profile on this machine and EngineConfig's own defaults, so no default is written here."""

from __future__ import annotations

import argparse
import dataclasses

from scriba.config import CHOICES, GROUPS, OPTIONS

# option -> (flag, what it means); the values come from config.CHOICES
FLAGS = {
    "device": ("--device", "where the model runs: auto (a GPU if present), cpu or cuda[:N]"),
    "dtype": ("--dtype", "compute dtype (float32: the exact mode, token for token transformers')"),
    "quantization": ("--quantization", "int8 weights and activations in the Linear layers (CPU)"),
    "kv_cache_dtype": ("--kv-cache-dtype", "the KV cache's dtype (fp8, int8: a scale per cached vector)"),
    "encoder_runtime": ("--encoder-runtime", "what runs an audio model's encoder on the CPU"),
    "encoder_padding": ("--encoder-padding", "cached: a short clip's padding from a silent window"),
    "decoder_runtime": ("--decoder-runtime", "what runs the decoder's steps of a few rows on the CPU"),
    "num_threads": ("--threads", "CPU threads (default: one per physical core)"),
}
PROFILED = ("quantization", "kv_cache_dtype", "encoder_runtime")  # models/profiles.py sets them


def default_of(option: str):
    """EngineConfig's own default for an option."""
    group = GROUPS[OPTIONS[option]]
    return next(f.default for f in dataclasses.fields(group) if f.name == option)


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """Where and how the model runs: the same flags on every command that runs one."""
    group = parser.add_argument_group("engine (EngineConfig; docs/engine.md)")
    for option, (flag, meaning) in FLAGS.items():
        default = "the model's profile" if option in PROFILED else default_of(option)
        kind = int if option == "num_threads" else str
        shown = "" if option == "num_threads" else f" (default: {default})"
        group.add_argument(
            flag, dest=option, default=None, type=kind, choices=CHOICES.get(option), help=meaning + shown
        )


def engine_options(args: argparse.Namespace) -> dict:
    """The engine options given on the command line (those not given are left to the profile)."""
    return {option: value for option in FLAGS if (value := getattr(args, option)) is not None}
