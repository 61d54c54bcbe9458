"""BART and mBART for conditional generation, on packed tokens and the paged KV cache.

Module and parameter names mirror Hugging Face's `modeling_bart.py` / `modeling_mbart.py`
so checkpoints load by name; self-attention q/k/v are fused (`qkv_proj`) and cross-attention
k/v are fused (`kv_proj`). BART is post-layer-norm; mBART is pre-layer-norm with a final
`layer_norm` after the encoder and the decoder stacks.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from scriba.kernels.metadata import AttentionMetadata
from scriba.models.base import EncoderDecoderModel
from scriba.models.layers import EncoderDecoderLayer

POSITION_OFFSET = 2  # BART's learned positions are stored shifted by 2


class BartStack(nn.Module):
    """The encoder or the decoder: token + learned position embeddings, then layers."""

    def __init__(self, config, shared: nn.Embedding | None, is_decoder: bool, pre_norm: bool):
        super().__init__()
        num_layers = config.decoder_layers if is_decoder else config.encoder_layers
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        # Tied checkpoints share model.shared; untied ones have a table per stack.
        self.embed_tokens = shared if shared is not None else nn.Embedding(config.vocab_size, config.d_model)
        self.embed_positions = nn.Embedding(config.max_position_embeddings + POSITION_OFFSET, config.d_model)
        self.layernorm_embedding = nn.LayerNorm(config.d_model)
        self.layers = nn.ModuleList(
            EncoderDecoderLayer(config, is_decoder, pre_norm) for _ in range(num_layers)
        )
        self.layer_norm = nn.LayerNorm(config.d_model) if pre_norm else None

    def embed(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """[tokens] ids and positions -> [tokens, d_model]: what the first layer takes."""
        hidden = self.embed_tokens(input_ids) * self.embed_scale
        return self.layernorm_embedding(hidden + self.embed_positions(positions + POSITION_OFFSET))

    def forward(
        self, input_ids: torch.Tensor, positions: torch.Tensor, meta: AttentionMetadata, encoder_hidden=None
    ) -> torch.Tensor:
        hidden = self.embed(input_ids, positions)
        for layer in self.layers:
            hidden = layer(hidden, meta, encoder_hidden)
        return hidden if self.layer_norm is None else self.layer_norm(hidden)


class BartModel(nn.Module):
    def __init__(self, config, pre_norm: bool):
        super().__init__()
        shared = None
        if is_tied(config):
            self.shared = shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = BartStack(config, shared, is_decoder=False, pre_norm=pre_norm)
        self.decoder = BartStack(config, shared, is_decoder=True, pre_norm=pre_norm)


def is_tied(config) -> bool:
    """transformers ties lm_head and both embed_tokens to model.shared unless told not to."""
    return getattr(config, "tie_word_embeddings", True)


class BartForConditionalGeneration(EncoderDecoderModel):
    pre_norm = False

    def __init__(self, config, generation_config=None):
        super().__init__(config, generation_config)
        self.model = BartModel(config, pre_norm=self.pre_norm)
        self.register_buffer("final_logits_bias", torch.zeros(1, config.vocab_size))
        if not is_tied(config):
            self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)

    # -- limits and the decoder-prompt hooks ----------------------------------------------
    @property
    def max_encoder_len(self) -> int:
        return self.config.max_position_embeddings

    def dummy_encoder_inputs(self, num: int, dtype: torch.dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
        """`num` full-length encoder inputs (memory profiling): token ids and positions, packed."""
        positions = torch.arange(self.max_encoder_len, device=device).repeat(num)
        return torch.zeros(num * self.max_encoder_len, dtype=torch.long, device=device), positions

    @property
    def max_decoder_len(self) -> int:
        return self.config.max_position_embeddings

    @property
    def decoder_start_token_id(self) -> int:
        # As transformers' generate(): generation_config.json first, then config.json, then bos.
        start = getattr(self.generation_config, "decoder_start_token_id", None)
        if start is None:
            start = self.config.decoder_start_token_id
        return self.config.bos_token_id if start is None else start

    def default_decoder_prompt(self) -> list[int]:
        """`<DEC><BOS>`: transformers starts from <DEC> and forces <BOS> as the first token."""
        return [self.decoder_start_token_id, self.config.bos_token_id]

    def prepare_decoder_prompt(self, token_ids: list[int]) -> list[int]:
        """A given decoder prompt gets <DEC> prepended unless it already starts with it."""
        start = self.decoder_start_token_id
        return list(token_ids) if token_ids[:1] == [start] else [start, *token_ids]

    # -- weights ----------------------------------------------------------------------------
    def checkpoint_name(self, name: str) -> str | None:
        """Map a checkpoint tensor name to ours (None = an alias of a tied weight: skip)."""
        if not name.startswith(("model.", "lm_head.", "final_logits_bias")):
            name = "model." + name  # a `BartModel` checkpoint has no `model.` prefix
        if is_tied(self.config):
            if name.endswith("embed_tokens.weight"):
                return "model.shared.weight"
            if name == "lm_head.weight":
                return None  # the same tensor as model.shared
        elif name == "model.shared.weight":
            return None  # untied: the stacks' own tables are used, shared is not
        return name

    optional_weights = frozenset({"final_logits_bias"})

    # -- forward ----------------------------------------------------------------------------
    def forward(
        self,
        input_ids: torch.Tensor,  # [num_decoder_tokens]
        positions: torch.Tensor,  # [num_decoder_tokens]
        meta: AttentionMetadata,
        encoder_inputs: torch.Tensor | None = None,  # [num_encoder_tokens] token ids
        encoder_positions: torch.Tensor | None = None,
    ) -> torch.Tensor:  # [num_decoder_tokens, d_model]
        encoder_hidden = None
        if meta.num_encoder_tokens:
            encoder_hidden = self.model.encoder(encoder_inputs, encoder_positions, meta)
        return self.model.decoder(input_ids, positions, meta, encoder_hidden)

    def write_cross_kv(
        self,
        encoder_inputs: torch.Tensor,  # [num_encoder_tokens] token ids
        meta: AttentionMetadata,
        encoder_positions: torch.Tensor | None = None,  # [num_encoder_tokens]
    ) -> None:
        """The encoder, and every decoder layer's cross-attention K/V of its states into the
        cache at meta.cross_slot_mapping; the decoder is not run (EngineConfig.encoder_stream)."""
        hidden = self.model.encoder(encoder_inputs, encoder_positions, meta)
        for layer in self.model.decoder.layers:
            layer.encoder_attn.write_cross_kv(layer.encoder_attn.kv_proj(hidden), meta)

    def output_projection(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(weight [vocab, d_model], bias [vocab]) of the logits."""
        weight = self.model.shared.weight if is_tied(self.config) else self.lm_head.weight
        return weight, self.final_logits_bias.reshape(-1)


class MBartForConditionalGeneration(BartForConditionalGeneration):
    """mBART: BART with pre-layer-norm and final layer norms on both stacks."""

    pre_norm = True

    def default_decoder_prompt(self) -> list[int]:
        """<DEC>, then the forced first token (a language code) when the config names one."""
        forced = getattr(self.generation_config, "forced_bos_token_id", None)
        if forced is None:
            forced = getattr(self.config, "forced_bos_token_id", None)
        return [self.decoder_start_token_id] + ([] if forced is None else [forced])
