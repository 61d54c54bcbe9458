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
    num_layers = max(lay for lay, _ in heads) + 1  # every layer up to the last asked
    if layers[0][1].states_cache is not None:
        cross_kv = _projected(model, layers[0][1], indexes, num_positions, num_layers, dtype)
    else:
        cross_kv = [_cached(layers[layer][1], indexes, num_positions, dtype) for layer in range(num_layers)]
    weights = model.cross_attentions(tokens.to(device), cross_kv, heads).float().cpu()
    return [weights[row, :, : len(ids)].numpy() for row, (_, ids) in enumerate(requests)]


def _cached(op, indexes: list[torch.Tensor], num_positions: int, dtype) -> torch.Tensor:
    """A layer's cached cross K/V of each request's blocks: [requests, 2, positions, heads, head_dim]."""
    cache, scales = op.kv_cache, op.kv_scales  # [2, blocks, block_size, heads, head_dim]
    blocks = [cache[:, i] if scales is None else dequantized(cache[:, i], scales[:, i]) for i in indexes]
    return torch.stack([b.flatten(1, 2)[:, :num_positions] for b in blocks]).to(dtype)


def _projected(model, op, indexes, num_positions: int, num_layers: int, dtype) -> list:
    """cross_cache="states": each layer's cross K/V projected from the encoder states cached in the
    first layer's cross-attention `op`'s states_cache, as `_cached` reads them."""
    cache, scales = op.states_cache, op.states_scales
    heads, head_dim = cache.shape[3:]
    blocks = [cache[0, i] if scales is None else dequantized(cache[0, i], scales[0, i]) for i in indexes]
    states = torch.stack([b.flatten(0, 1)[:num_positions] for b in blocks]).flatten(2)
    kv = (projection(states.to(dtype)) for projection in model.cross_kv_projections()[:num_layers])
    return [x.view(*states.shape[:2], 2, heads, head_dim).transpose(1, 2) for x in kv]
