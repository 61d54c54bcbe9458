"""Whisper for conditional generation: log-mel features in, tokens out, on the paged KV cache.

Names mirror Hugging Face's `modeling_whisper.py` (model.encoder.conv1/conv2/embed_positions,
model.decoder.embed_tokens/embed_positions, pre-layer-norm layers, final layer_norm on each
stack). The output projection is tied to the decoder's token embedding; k_proj has no bias.
"""

from __future__ import annotations

import torch
from torch import nn

from scriba.kernels.metadata import AttentionMetadata
from scriba.models.base import EncoderDecoderModel
from scriba.models.layers import EncoderDecoderLayer
from scriba.models.whisper.tokens import WhisperTokens


class WhisperEncoder(nn.Module):
    """Two convolutions (the second strides by 2), sinusoidal positions, pre-norm layers."""

    def __init__(self, config):
        super().__init__()
        dim = config.d_model
        self.conv1 = nn.Conv1d(config.num_mel_bins, dim, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, kernel_size=3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(config.max_source_positions, dim)
        self.layers = nn.ModuleList(
            EncoderDecoderLayer(config, False, True, k_bias=False) for _ in range(config.encoder_layers)
        )
        self.layer_norm = nn.LayerNorm(dim)

    def forward(self, features: torch.Tensor, meta: AttentionMetadata) -> torch.Tensor:
        """features [num_requests, mel_bins, 2 * positions] -> [num_requests * positions, d_model]."""
        act = nn.functional.gelu
        hidden = act(self.conv2(act(self.conv1(features)))).transpose(1, 2)
        hidden = (hidden + self.embed_positions.weight).flatten(0, 1)
        for layer in self.layers:
            hidden = layer(hidden, meta)
        return self.layer_norm(hidden)


class WhisperDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.embed_positions = nn.Embedding(config.max_target_positions, config.d_model)
        self.layers = nn.ModuleList(
            EncoderDecoderLayer(config, True, True, k_bias=False) for _ in range(config.decoder_layers)
        )
        self.layer_norm = nn.LayerNorm(config.d_model)

    def embed(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """[tokens] ids and positions -> [tokens, d_model]: what the first layer takes."""
        return self.embed_tokens(input_ids) + self.embed_positions(positions)

    def embedding_tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """`embed` as two tables whose rows add: (tokens [vocab, d_model], positions [max
        positions, d_model]), for steps that look the rows up themselves (models/decoder_step/)."""
        return self.embed_tokens.weight, self.embed_positions.weight

    def forward(
        self, input_ids, positions, meta: AttentionMetadata, encoder_hidden=None, cross_kv=None
    ) -> torch.Tensor:
        """cross_kv: each layer's cross-attention K/V [encoder tokens, 2 * d_model], made by the
        encoder's runtime, in place of encoder_hidden."""
        hidden = self.embed(input_ids, positions)
        for i, layer in enumerate(self.layers):
            hidden = layer(hidden, meta, encoder_hidden, None if cross_kv is None else cross_kv[i])
        return self.layer_norm(hidden)


class WhisperModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.encoder = WhisperEncoder(config)
        self.decoder = WhisperDecoder(config)


class WhisperForConditionalGeneration(EncoderDecoderModel):
    encodes_audio = True

    def __init__(self, config, generation_config=None):
        super().__init__(config, generation_config)
        self.model = WhisperModel(config)
        self.tokens = WhisperTokens.from_configs(config, generation_config)
        self.encoder_runtime = None  # a compiled encoder (compile_encoder), else the torch modules

    # -- limits and the decoder-prompt hooks ----------------------------------------------
    @property
    def max_encoder_len(self) -> int:
        """Encoder positions per 30 s window (1500): they size the cross-attention table."""
        return self.config.max_source_positions

    @property
    def max_decoder_len(self) -> int:
        return self.config.max_target_positions

    @property
    def num_mel_bins(self) -> int:
        return self.config.num_mel_bins

    @property
    def num_frames(self) -> int:
        """Feature frames per window: the second convolution halves them into positions."""
        return 2 * self.config.max_source_positions

    def encoder_input_shape(self) -> tuple[int, int]:
        return (self.num_mel_bins, self.num_frames)

    def dummy_encoder_inputs(self, num: int, dtype: torch.dtype, device) -> tuple[torch.Tensor, None]:
        """Silent features for `num` windows (memory profiling): [num, mel_bins, frames]."""
        return torch.zeros(num, self.num_mel_bins, self.num_frames, dtype=dtype, device=device), None

    @property
    def num_decoder_heads(self) -> int:
        return self.config.decoder_attention_heads

    @property
    def alignment_heads(self) -> list[tuple[int, int]]:
        """The (layer, head) pairs whose cross-attention follows the audio in time (word
        timestamps): the checkpoint's generation_config, else the last half of the layers."""
        heads = getattr(self.generation_config, "alignment_heads", None)
        if heads:
            return [(int(layer), int(head)) for layer, head in heads]
        layers = self.num_decoder_layers
        return [(lay, h) for lay in range(layers // 2, layers) for h in range(self.num_decoder_heads)]

    def default_decoder_prompt(self) -> list[int]:
        return [self.tokens.sot]

    def prepare_decoder_prompt(self, token_ids: list[int]) -> list[int]:
        """An explicit decoder prompt is used as given, with <|startoftranscript|> put in front
        when it has none (so plain text works); no other control token is added."""
        t = self.tokens
        return list(token_ids) if t.sot in token_ids else [t.sot, *token_ids]

    # -- weights ----------------------------------------------------------------------------
    def checkpoint_name(self, name: str) -> str | None:
        if name == "proj_out.weight":
            return None  # tied to model.decoder.embed_tokens
        return name if name.startswith("model.") else "model." + name

    optional_weights = frozenset({"*qkv_proj.bias:k_proj", "*kv_proj.bias:k_proj"})

    # -- forward ----------------------------------------------------------------------------
    def forward(
        self,
        input_ids: torch.Tensor,  # [num_decoder_tokens]
        positions: torch.Tensor,  # [num_decoder_tokens]
        meta: AttentionMetadata,
        encoder_inputs: torch.Tensor | None = None,  # [num_requests, mel_bins, num_frames]
        encoder_positions: torch.Tensor | None = None,  # unused: every window has all positions
    ) -> torch.Tensor:  # [num_decoder_tokens, d_model]
        encoder_hidden = cross_kv = None
        if meta.num_encoder_tokens and self.encoder_runtime is not None:
            cross_kv = self.encoder_runtime(encoder_inputs)  # each decoder layer's K/V, made with the states
        elif meta.num_encoder_tokens:
            encoder_hidden = self.encode(encoder_inputs, meta)
        return self.model.decoder(input_ids, positions, meta, encoder_hidden, cross_kv)

    def encode(self, features: torch.Tensor, meta: AttentionMetadata) -> torch.Tensor:
        """features [num_requests, mel_bins, num_frames] -> states [num_encoder_tokens, d_model]:
        the torch encoder, replayed from CUDA graphs where they were captured for this many
        windows (engine/encoder_graphs.py)."""
        graphs = self.encoder_graphs
        if graphs is not None and graphs.fits(features):
            return graphs.run(features)
        return self.model.encoder(features, meta)

    def write_cross_kv(
        self, encoder_inputs: torch.Tensor, meta: AttentionMetadata, encoder_positions=None
    ) -> None:
        """A prefill's windows [num_requests, mel_bins, num_frames] through the encoder, and every
        decoder layer's cross-attention K/V of them into the cache, the decoder not run (the
        model runner's numba prefill, or the encoder stream; encoder_positions: unused)."""
        if self.encoder_runtime is not None:
            per_layer = self.encoder_runtime(encoder_inputs)
        else:
            hidden = self.encode(encoder_inputs, meta)
            per_layer = [layer.encoder_attn.kv_proj(hidden) for layer in self.model.decoder.layers]
        for layer, cross_kv in zip(self.model.decoder.layers, per_layer):
            layer.encoder_attn.write_cross_kv(cross_kv, meta)

    def compile_encoder(self, runtime: str, num_threads: int, cached_padding: bool = False) -> None:
        """runtime "openvino": the encoder, and every decoder layer's cross-attention K/V of its
        states, as one OpenVINO graph of the same weights (`cached_padding`: a window's padding
        past its audio from a silent window's, models/openvino_encoder/cached_padding.py); the torch encoder
        layers are dropped (the graph holds its own copy)."""
        if runtime != "openvino":
            return super().compile_encoder(runtime, num_threads, cached_padding)
        from scriba.models.openvino_encoder.runtime import OpenVINOEncoder

        projections = [layer.encoder_attn.kv_proj for layer in self.model.decoder.layers]
        self.encoder_runtime = OpenVINOEncoder(
            self.model.encoder, num_threads, cross_kv=projections, cached_padding=cached_padding
        )
        self.model.encoder.layers = nn.ModuleList()

    def cross_attentions(
        self, token_ids: torch.Tensor, cross_kv: list[torch.Tensor], heads: list[tuple[int, int]]
    ) -> torch.Tensor:
        """[B, len(heads), T, P]: the cross-attention weights of (layer, head) pairs over a batch
        of right-padded decoder sequences `token_ids` [B, T], given the cached cross K/V of
        layers 0..max layer (each [B, 2, P, heads, head_dim]). A plain forward that stops after
        the last layer asked, each layer's weights made for its asked heads only."""
        dec = self.model.decoder
        positions = torch.arange(token_ids.shape[1], device=token_ids.device)
        hidden = dec.embed_tokens(token_ids) + dec.embed_positions(positions)[None]
        asked = [[head for lay, head in heads if lay == layer] for layer in range(len(cross_kv))]
        weights = []
        for layer, kv in enumerate(cross_kv):
            last = layer == len(cross_kv) - 1
            hidden, w = dec.layers[layer].plain_forward(hidden, kv, asked[layer], last)
            weights.append(w)
        return torch.stack([weights[lay][:, asked[lay].index(head)] for lay, head in heads], dim=1)

    def output_projection(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(weight [vocab, d_model], bias or None) of the logits: the tied token embedding."""
        return self.model.decoder.embed_tokens.weight, None
