"""The per-step attention metadata: filled by the model runner, read by the Attention layer.

Decoder tokens of a step are packed as [prefill tokens | decode tokens]: prefill sequences
(fresh prompts, or recomputes after preemption) feed all their tokens, decode sequences one.
Encoder tokens are packed per prefilling request. Masks are never built: every op gets
cumulative offsets (`cu_seqlens_*`, int32, length num_seqs + 1) or per-sequence lengths.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import torch


class AttentionType(enum.Enum):
    ENCODER = "encoder"  # non-causal, block-diagonal over packed encoder sequences, no cache
    DECODER = "decoder"  # causal self-attention over the paged self cache
    CROSS = "cross"  # decoder queries over the request's encoder K/V (paged cross cache)


@dataclass
class AttentionMetadata:
    """What one forward pass attends over. A field left at its default (0 or None) says the step
    has nothing of that kind: an encoder-only pass names the encoder's fields, a graph's decode
    step the decode ones."""

    backend: Any  # an attention backend (kernels/backend.py)
    # Encoder: the requests that prefill this step.
    num_encoder_tokens: int = 0
    encoder_cu_seqlens: torch.Tensor | None = None  # [num_prefill_groups + 1]
    encoder_max_seqlen: int = 0
    # Decoder self-attention.
    num_prefill_tokens: int = 0
    num_decode_tokens: int = 0
    prefill_cu_seqlens: torch.Tensor | None = None  # [num_prefill_seqs + 1]
    prefill_max_seqlen: int = 0
    slot_mapping: torch.Tensor | None = None  # [num_decoder_tokens] flat slot (block * block_size + offset)
    decode_block_tables: torch.Tensor | None = None  # [num_decode_seqs, max_blocks], padded with 0
    decode_seq_lens: torch.Tensor | None = None  # [num_decode_seqs], context length incl. the new token
    # Cross-attention.
    cross_slot_mapping: torch.Tensor | None = None  # [num_encoder_tokens]
    cross_cu_seqlens_k: torch.Tensor | None = None  # [num_prefill_seqs + 1], over the K/V rows below
    cross_kv_index: torch.Tensor | None = None  # rows of the encoder K/V per prefill seq; None = as packed
    cross_max_seqlen_k: int = 0
    cross_block_tables: torch.Tensor | None = None  # [num_decode_seqs, max_cross_blocks]
    cross_seq_lens: torch.Tensor | None = None  # [num_decode_seqs], encoder lengths
    # How the torch path reads the paged contexts (see context_reads.group_context_reads),
    # grouped once per step on the host; None: grouped by the op itself, or not needed (Triton).
    decode_reads: Any = None
    cross_reads: Any = None

    @property
    def encoder_equal_len(self) -> int:
        """The length every encoder sequence of the step shares (an audio model's windows), else 0:
        n sequences of at most max rows fill n * max rows only when each has max (no host sync)."""
        cu, longest = self.encoder_cu_seqlens, self.encoder_max_seqlen
        if cu is None or not longest:
            return 0
        return longest if self.num_encoder_tokens == (cu.shape[0] - 1) * longest else 0

    @property
    def num_decoder_tokens(self) -> int:
        return self.num_prefill_tokens + self.num_decode_tokens
