"""Cross-attention read through the encoder states (EngineConfig.cross_cache="states").

A decoder layer's cross-attention K and V are both projections of the encoder states E
[positions, d_model]. For head h, with W_k,h and W_v,h its [head_dim, d_model] rows of the K and V
projections:

    score_t = q_h . (W_k,h e_t) = (W_k,h^T q_h) . e_t          (K's bias adds the same to every
    out_h = sum_t p_t (W_v,h e_t + b_v,h) = W_v,h (sum_t p_t e_t) + b_v,h      score: softmax drops it)

So a step may read E, once for the scores and the values together, in place of a layer's K and V:
half the bytes of a float cache, and one cache for every layer in place of one a layer. The query
becomes d_model wide (`absorb_queries`); the read is then an attention with `heads` queries a
sequence over one head d_model wide (`attend_states_ref` here, `attend_states_triton` in
paged_states_triton.py), its result projected back per head (`project_context`). The price is
compute: the scores and the weighted sum over d_model, not head_dim, per head, which the Triton
kernel runs as tensor-core products.

The states sit in a pool of their own, shaped as one layer's K half ([1, blocks, block_size,
heads, head_dim], a row of heads x head_dim = d_model; engine/kv_pools.py), the cross tables'
blocks (BlockManager.cross_pools). In an 8-bit cache (kv8.py) a row has one scale, kept in each of
its heads' scale slots: a scale per position factors out of both products (score_t = scale_t
(q . codes_t), and the weighted sum takes p_t scale_t), so the kernel converts codes and scales
each score and weight once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from scriba.kernels.kv8 import dequantized, quantize


def absorb_queries(q: torch.Tensor, kv_weight: torch.Tensor) -> torch.Tensor:
    """q [seqs, heads, head_dim] -> [seqs, heads, d_model]: W_k,h^T q_h (kv_weight [2 * d_model,
    d_model], the fused K/V projection's; its first half is K's). Last dim contiguous."""
    heads, dim = q.shape[1:]
    w_k = kv_weight[: heads * dim].view(heads, dim, -1)
    return torch.bmm(q.transpose(0, 1), w_k).transpose(0, 1)


def project_context(
    context: torch.Tensor, kv_weight: torch.Tensor, kv_bias: torch.Tensor | None
) -> torch.Tensor:
    """context [seqs, heads, d_model] (sum_t p_t e_t per head) -> [seqs, heads, head_dim]:
    W_v,h context_h + b_v,h."""
    heads, d_model = context.shape[1:]
    w_v = kv_weight[d_model:].view(heads, -1, d_model)
    out = torch.bmm(context.transpose(0, 1), w_v.transpose(1, 2)).transpose(0, 1)
    return out if kv_bias is None else out + kv_bias[d_model:].view(heads, -1)


def states_decode_attention(
    q: torch.Tensor,  # [seqs, heads, head_dim]
    states_cache: torch.Tensor,  # [1, blocks, block_size, heads, head_dim]: E (kv_pools.py)
    kv_weight: torch.Tensor,  # [2 * d_model, d_model]
    kv_bias: torch.Tensor | None,  # [2 * d_model]
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int, >= 1
    scale: float,
    attend,  # attend_states_ref or attend_states_triton
    states_scales: torch.Tensor | None = None,  # [1, blocks, block_size, heads]: an 8-bit cache's
) -> torch.Tensor:  # [seqs, heads, head_dim]
    """Cross-attention of one query token a sequence, read through the cached encoder states."""
    weight, bias = kv_weight.to(q.dtype), None if kv_bias is None else kv_bias.to(q.dtype)
    row_scales = None if states_scales is None else states_scales[0]
    context = attend(absorb_queries(q, weight), states_cache[0], block_tables, seq_lens, scale, row_scales)
    return project_context(context, weight, bias)


def attend_states_ref(
    queries: torch.Tensor,  # [seqs, heads, d_model]
    states: torch.Tensor,  # [blocks, block_size, heads, head_dim]: rows of d_model
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int
    scale: float,
    row_scales: torch.Tensor | None = None,  # [blocks, block_size, heads]: an 8-bit cache's
) -> torch.Tensor:  # [seqs, heads, d_model]
    """Each sequence's states gathered (a padded batch, masked by length), its heads' queries
    attending over them as one head."""
    num_seqs, block_size = queries.shape[0], states.shape[1]
    max_blocks = int(seq_lens.max().item() + block_size - 1) // block_size
    index = block_tables[:, :max_blocks].flatten().long()
    e = states.index_select(0, index)
    if row_scales is not None:
        e = dequantized(e, row_scales.index_select(0, index), queries.dtype)
    e = e.reshape(num_seqs, 1, max_blocks * block_size, -1).to(queries.dtype)
    mask = torch.arange(e.shape[2], device=e.device)[None, :] < seq_lens[:, None]
    mask = mask[:, None, None, :]
    return F.scaled_dot_product_attention(queries[:, None], e, e, attn_mask=mask, scale=scale)[:, 0]


def write_states(
    states: torch.Tensor,  # [tokens, d_model]
    states_cache: torch.Tensor,  # [1 or 2, blocks, block_size, heads, head_dim]: its K half written
    states_scales: torch.Tensor | None,  # [1 or 2, blocks, block_size, heads]: an 8-bit cache's
    slot_mapping: torch.Tensor,  # [tokens] int
) -> None:
    """The encoder states into the K half at their slots (any layout: by block and offset), in
    the cache's dtype; in an 8-bit cache as codes with one scale a row, in each of its heads' slots."""
    heads, dim = states_cache.shape[3:]
    slots = slot_mapping.long()
    block, offset = slots.div(states_cache.shape[2], rounding_mode="floor"), slots % states_cache.shape[2]
    if states_scales is None:
        states_cache[0][block, offset] = states.view(-1, heads, dim).to(states_cache.dtype)
        return
    codes, row_scale = quantize(states, states_cache.dtype)
    # as bytes (the CPU has no index_put for float8)
    states_cache[0].view(torch.int8)[block, offset] = codes.view(torch.int8).view(-1, heads, dim)
    states_scales[0].view(-1, heads).index_copy_(0, slots, row_scale[:, None].expand(-1, heads).contiguous())
