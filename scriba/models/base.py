"""What every encoder/decoder model the engine runs shares (BART, mBART, Whisper)."""

from __future__ import annotations

import abc

import torch
from torch import nn


class EncoderDecoderModel(nn.Module, metaclass=abc.ABCMeta):
    """A subclass builds `self.model` (`.encoder` and `.decoder` stacks whose layers hold
    `self_attn.attn` and `encoder_attn.attn`) and says where its logits come from
    (`output_projection`); the engine reads the rest from here."""

    encodes_audio = False  # True: the encoder takes log-mel features, not token ids
    optional_weights: frozenset = frozenset()  # checkpoint tensors that may be missing
    encoder_graphs = None  # where `encoder_input_shape` is fixed: EncoderGraphs set by the model runner

    def __init__(self, config, generation_config=None):
        super().__init__()
        self.config, self.generation_config = config, generation_config
        # An int8 checkpoint's {parameter name: (int8 tensor, scale)} (loader.gather_int8),
        # until models/quantize.py moves them into its quantized modules.
        self.int8_weights: dict = {}
        self.quantized_head: nn.Module | None = None  # the int8 output projection (quantize.py)
        self.packed_head: nn.Module | None = None  # the float32 one in oneDNN's layout (packed_linear.py)

    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    @property
    def num_decoder_layers(self) -> int:
        return len(self.model.decoder.layers)

    def decoder_attention_layers(self) -> list[list[nn.Module]]:
        """Per decoder layer, the attention ops that share that layer's KV cache."""
        return [[layer.self_attn.attn, layer.encoder_attn.attn] for layer in self.model.decoder.layers]

    @abc.abstractmethod
    def output_projection(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(weight [vocab, d_model], bias [vocab] or None) of the logits."""

    def encoder_input_shape(self) -> tuple[int, ...] | None:
        """One request's encoder input shape where every request's is the same (Whisper's log-mel
        window), else None. Such an encoder (run through `encode`) can be replayed from CUDA graphs."""
        return None

    def compile_encoder(self, runtime: str, num_threads: int, cached_padding: bool = False) -> None:
        """Have `runtime` execute the encoder from now on (EngineConfig.encoder_runtime; with
        `cached_padding`, EngineConfig.encoder_padding="cached"); called before int8
        quantization, on the float weights. Only models whose encoder is a pure function of
        dense features (Whisper's log-mel) can."""
        if runtime != "torch":
            raise ValueError(f"{type(self).__name__} runs its encoder in torch only, not {runtime!r}")

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:  # [n, d_model] -> [n, vocab]
        if self.quantized_head is not None:
            return self.quantized_head(hidden)
        if self.packed_head is not None:
            return self.packed_head(hidden)
        weight, bias = self.output_projection()
        logits = torch.nn.functional.linear(hidden, weight)
        return logits if bias is None else logits + bias
