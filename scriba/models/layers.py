"""The Attention layer, one class for encoder / decoder-self / cross attention."""

from __future__ import annotations

import torch
from torch import nn

from scriba.kernels.metadata import AttentionMetadata, AttentionType

# The activations of BART, mBART and Whisper configs, as transformers computes them (its
# `transformers.activations` import costs 1.8 s of start-up here, for a table of functions).
ACTIVATIONS = {
    "gelu": nn.functional.gelu,
    "relu": nn.functional.relu,
    "gelu_new": lambda x: nn.functional.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: nn.functional.gelu(x, approximate="tanh"),
    "silu": nn.functional.silu,
    "swish": nn.functional.silu,
    "tanh": torch.tanh,
}


def activation(name: str):
    if name not in ACTIVATIONS:
        raise ValueError(f"activation_function {name!r} is not supported (known: {sorted(ACTIVATIONS)})")
    return ACTIVATIONS[name]


class Attention(nn.Module):
    """Scaled dot-product attention over packed tokens; the type picks the data path.

    - ENCODER: non-causal, block-diagonal over the step's encoder sequences; no cache.
    - DECODER: causal; writes K/V to the paged cache by slot; prefill tokens attend over
      their own packed K/V, decode tokens over the cache through their block tables.
    - CROSS: non-causal; when the step has encoder tokens their K/V are written to the
      cross cache and prefill tokens attend to them; decode tokens read the cross cache.

    `kv_cache` ([2, blocks, block_size, heads, head_dim]) is bound by the model runner, and for
    an 8-bit cache its `kv_scales` ([2, blocks, block_size, heads], kernels/kv8.py).
    """

    def __init__(self, num_heads: int, head_dim: int, attn_type: AttentionType, scale: float | None = None):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.attn_type = attn_type
        self.scale = head_dim**-0.5 if scale is None else scale
        self.kv_cache: torch.Tensor | None = None
        self.kv_scales: torch.Tensor | None = None

    def forward(
        self,
        q: torch.Tensor,  # [num_q_tokens, heads * head_dim]
        k: torch.Tensor
        | None,  # [num_kv_tokens, heads * head_dim]; None for a cross step with no encoder tokens
        v: torch.Tensor | None,
        meta: AttentionMetadata,
    ) -> torch.Tensor:  # [num_q_tokens, heads * head_dim]
        ops = meta.backend
        q = q.view(-1, self.num_heads, self.head_dim)
        if k is not None:
            k = k.view(-1, self.num_heads, self.head_dim)
            v = v.view(-1, self.num_heads, self.head_dim)
        if self.attn_type is AttentionType.ENCODER:
            return ops.encoder_attention(q, k, v, meta, self.scale).flatten(1)

        num_prefill = meta.num_prefill_tokens
        parts = []  # prefill rows, then decode rows: a step of one kind returns its op's output as is
        if self.attn_type is AttentionType.DECODER:
            ops.write_kv_cache(k, v, self.kv_cache, meta.slot_mapping, self.kv_scales)
            if num_prefill:
                cu, n = meta.prefill_cu_seqlens, meta.prefill_max_seqlen
                qkv = (q[:num_prefill], k[:num_prefill], v[:num_prefill])
                parts.append(ops.varlen_attention(*qkv, cu, cu, n, n, self.scale, causal=True))
            tables, lens, reads = meta.decode_block_tables, meta.decode_seq_lens, meta.decode_reads
        else:
            if k is not None:
                ops.write_kv_cache(k, v, self.kv_cache, meta.cross_slot_mapping, self.kv_scales)
            if num_prefill:
                if meta.cross_kv_index is not None:  # a request prefilling several sequences
                    k, v = k[meta.cross_kv_index], v[meta.cross_kv_index]
                parts.append(
                    ops.varlen_attention(
                        q[:num_prefill],
                        k,
                        v,
                        meta.prefill_cu_seqlens,
                        meta.cross_cu_seqlens_k,
                        meta.prefill_max_seqlen,
                        meta.cross_max_seqlen_k,
                        self.scale,
                        causal=False,
                    )
                )
            tables, lens, reads = meta.cross_block_tables, meta.cross_seq_lens, meta.cross_reads
        if meta.num_decode_tokens:
            paged = (q[num_prefill:], self.kv_cache, tables, lens, self.scale)
            parts.append(ops.paged_decode_attention(*paged, reads=reads, kv_scales=self.kv_scales))
        out = parts[0] if len(parts) == 1 else torch.cat(parts)
        return out.flatten(1)


class MultiHeadAttention(nn.Module):
    """Projections around `Attention`: one fused QKV for self-attention (encoder or decoder),
    a Q and a fused KV projection for cross-attention, so no input is projected for nothing.

    Parameter names are the fused forms of Hugging Face's q_proj / k_proj / v_proj (the
    loader splits checkpoint tensors into their shards); out_proj keeps its name.
    """

    def __init__(
        self, embed_dim: int, num_heads: int, attn_type: AttentionType, bias: bool = True, k_bias: bool = True
    ):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.attn_type = attn_type
        if attn_type is AttentionType.CROSS:
            self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.kv_proj = nn.Linear(embed_dim, 2 * embed_dim, bias=bias)
        else:
            self.qkv_proj = nn.Linear(embed_dim, 3 * embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.attn = Attention(num_heads, embed_dim // num_heads, attn_type)
        if bias and not k_bias:  # Whisper: k_proj has no bias, so its shard of the fused bias stays 0
            fused = self.kv_proj if attn_type is AttentionType.CROSS else self.qkv_proj
            k_start = 0 if attn_type is AttentionType.CROSS else embed_dim
            with torch.no_grad():
                fused.bias[k_start : k_start + embed_dim].zero_()

    def forward(
        self,
        hidden: torch.Tensor,  # [num_tokens, embed_dim]
        meta: AttentionMetadata,
        encoder_hidden: torch.Tensor | None = None,  # [num_encoder_tokens, embed_dim], cross only
        cross_kv: torch.Tensor | None = None,  # [num_encoder_tokens, 2 * embed_dim]: kv_proj's, made
    ) -> torch.Tensor:
        if self.attn_type is AttentionType.CROSS:
            q = self.q_proj(hidden)
            k = v = None
            if cross_kv is not None:
                k, v = cross_kv.chunk(2, dim=-1)
            elif encoder_hidden is not None and encoder_hidden.shape[0]:
                k, v = self.kv_proj(encoder_hidden).chunk(2, dim=-1)
        else:
            q, k, v = self.qkv_proj(hidden).chunk(3, dim=-1)
        return self.out_proj(self.attn(q, k, v, meta))

    def write_cross_kv(self, cross_kv: torch.Tensor, meta: AttentionMetadata) -> None:
        """A prefill's cross-attention K/V ([num_encoder_tokens, 2 * embed_dim], kv_proj's) into
        the cache at meta.cross_slot_mapping, attending to nothing: the numba step reads them."""
        attn = self.attn
        k, v = (x.view(-1, attn.num_heads, attn.head_dim) for x in cross_kv.chunk(2, dim=-1))
        meta.backend.write_kv_cache(k, v, attn.kv_cache, meta.cross_slot_mapping, attn.kv_scales)


class EncoderDecoderLayer(nn.Module):
    """One encoder layer, or (with `is_decoder`) one decoder layer with cross-attention.

    BART-style names (self_attn, encoder_attn, fc1, fc2, *_layer_norm), shared by BART, mBART
    and Whisper; `pre_norm` picks pre- or post-layer-norm residuals. Whisper has no k_proj bias.
    """

    def __init__(self, config, is_decoder: bool, pre_norm: bool, k_bias: bool = True):
        super().__init__()
        dim = config.d_model
        heads = config.decoder_attention_heads if is_decoder else config.encoder_attention_heads
        ffn_dim = config.decoder_ffn_dim if is_decoder else config.encoder_ffn_dim
        self.pre_norm = pre_norm
        self.self_attn = MultiHeadAttention(
            dim, heads, AttentionType.DECODER if is_decoder else AttentionType.ENCODER, k_bias=k_bias
        )
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        if is_decoder:
            self.encoder_attn = MultiHeadAttention(dim, heads, AttentionType.CROSS, k_bias=k_bias)
            self.encoder_attn_layer_norm = nn.LayerNorm(dim)
        self.activation_fn = activation(config.activation_function)
        self.fc1 = nn.Linear(dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def _residual(self, hidden: torch.Tensor, norm: nn.LayerNorm, block) -> torch.Tensor:
        if self.pre_norm:
            return hidden + block(norm(hidden))
        return norm(hidden + block(hidden))

    def forward(
        self,
        hidden: torch.Tensor,
        meta: AttentionMetadata,
        encoder_hidden: torch.Tensor | None = None,
        cross_kv: torch.Tensor | None = None,  # this layer's cross K/V, made elsewhere (MultiHeadAttention)
    ) -> torch.Tensor:
        hidden = self._residual(hidden, self.self_attn_layer_norm, lambda h: self.self_attn(h, meta))
        if hasattr(self, "encoder_attn"):
            cross = lambda h: self.encoder_attn(h, meta, encoder_hidden, cross_kv)  # noqa: E731
            hidden = self._residual(hidden, self.encoder_attn_layer_norm, cross)
        return self._residual(
            hidden, self.final_layer_norm, lambda h: self.fc2(self.activation_fn(self.fc1(h)))
        )

    def plain_forward(
        self, hidden: torch.Tensor, cross_kv: torch.Tensor, heads: list[int], last: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoder layer over a batch of right-padded sequences, without the paged cache
        (an alignment pass): hidden [B, T, d_model], cross_kv [B, 2, P, heads, head_dim] ->
        (hidden [B, T, d_model], the cross-attention weights of `heads` [B, len(heads), T, P] in
        float32). Only the asked heads' weights are made; the `last` layer asked stops there
        (its hidden comes back unchanged). Causal self-attention keeps each real token away from
        the padding after it."""
        B, T, _ = hidden.shape
        weights = []

        def heads_of(x: torch.Tensor, attn: Attention) -> torch.Tensor:  # [B, T, H*D] -> [B, H, T, D]
            return x.view(B, T, attn.num_heads, attn.head_dim).transpose(1, 2)

        def merge(x: torch.Tensor) -> torch.Tensor:  # [B, H, T, D] -> [B, T, H*D]
            return x.transpose(1, 2).reshape(B, T, -1)

        def self_block(h: torch.Tensor) -> torch.Tensor:
            sa = self.self_attn
            q, k, v = (heads_of(x, sa.attn) for x in sa.qkv_proj(h).chunk(3, dim=-1))
            out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=sa.attn.scale)
            return sa.out_proj(merge(out))

        def cross_block(h: torch.Tensor) -> torch.Tensor:
            ca = self.encoder_attn
            q = heads_of(ca.q_proj(h), ca.attn).float()
            k, v = cross_kv[:, 0].transpose(1, 2), cross_kv[:, 1].transpose(1, 2)  # [B, H, P, D]
            if last:  # only the asked heads' weights: nothing reads this layer's output
                q, k = q[:, heads], k[:, heads]
            w = torch.softmax(q @ k.float().transpose(2, 3) * ca.attn.scale, dim=-1)  # [B, H, T, P]
            weights.append(w if last else w[:, heads])
            return h if last else ca.out_proj(merge(w.to(v.dtype) @ v))

        hidden = self._residual(hidden, self.self_attn_layer_norm, self_block)
        if last:
            cross_block(self.encoder_attn_layer_norm(hidden) if self.pre_norm else hidden)
            return hidden, weights[0]
        hidden = self._residual(hidden, self.encoder_attn_layer_norm, cross_block)
        ffn = lambda h: self.fc2(self.activation_fn(self.fc1(h)))  # noqa: E731
        return self._residual(hidden, self.final_layer_norm, ffn), weights[0]
