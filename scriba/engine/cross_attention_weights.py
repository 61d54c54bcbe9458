"""Cross-attention weights of finished sequences, read over the encoder K/V still cached for
their requests (word timestamps align tokens to audio with them)."""

from __future__ import annotations

import torch

from scriba.kernels.kv8 import dequantized


@torch.inference_mode()
def cross_attention_weights(
    model, requests: list[tuple[list[int], list[int]]], num_positions: int, heads, dtype: torch.dtype
) -> list:
    """For each (cross blocks, token ids) of `requests`, in one batched plain forward: the
    cross-attention weights of (layer, head) pairs when the decoder reads the tokens over
    the encoder K/V cached in the blocks, [len(heads), len(token ids), num_positions]
    float32 numpy arrays. The caches are only read."""
    layers = model.decoder_attention_layers()
    device = layers[0][1].kv_cache.device
    longest = max(len(ids) for _, ids in requests)
    tokens = torch.zeros(len(requests), longest, dtype=torch.long)
    for row, (_, ids) in enumerate(requests):
        tokens[row, : len(ids)] = torch.tensor(ids)
    indexes = [torch.tensor(blocks, device=device) for blocks, _ in requests]
    cross_kv = []
    for layer in range(max(lay for lay, _ in heads) + 1):  # every layer up to the last asked
        op = layers[layer][1]
        cache, scales = op.kv_cache, op.kv_scales  # [2, blocks, block_size, heads, head_dim]
        blocks = [cache[:, i] if scales is None else dequantized(cache[:, i], scales[:, i]) for i in indexes]
        kv = torch.stack([b.flatten(1, 2)[:, :num_positions] for b in blocks])
        cross_kv.append(kv.to(dtype))
    weights = model.cross_attentions(tokens.to(device), cross_kv, heads).float().cpu()
    return [weights[row, :, : len(ids)].numpy() for row, (_, ids) in enumerate(requests)]
