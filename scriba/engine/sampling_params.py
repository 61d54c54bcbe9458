"""SamplingParams: how to pick tokens for one request (names follow vLLM, else transformers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class SamplingParams:
    """Per-request generation settings, validated on construction.

    Token counts (`max_tokens`, `min_tokens`) are counted after the decoder prompt.
    `logprobs=k` returns, per generated token, the k most likely tokens (and the chosen one)
    with their log-probabilities, computed after the logits processors and before
    temperature / top-k / top-p, as transformers' `output_scores` does.
    """

    n: int = 1
    temperature: float = 0.0  # 0 = greedy
    top_k: int = 0  # 0 or -1 = no limit
    top_p: float = 1.0
    seed: int | None = None
    max_tokens: int = 16
    min_tokens: int = 0
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    logprobs: int | None = None
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    suppress_tokens: list[int] = field(default_factory=list)
    forced_bos_token_id: int | None = None
    forced_eos_token_id: int | None = None
    skip_special_tokens: bool = True
    # Beam search (beam_width > 1): transformers' algorithm and scores.
    beam_width: int = 1
    length_penalty: float = 1.0  # finished score = sum of log-probs / generated length ** length_penalty
    patience: float = 1.0  # round(beam_width * patience) finished hypotheses before the search may stop
    early_stopping: bool | str = False  # True, False (heuristic) or "never"
    num_return_sequences: int = 1  # best hypotheses returned, best first
    # (layer, head) pairs: a finished sequence also returns these heads' cross-attention weights
    # over its tokens (CompletionOutput.cross_attentions), from one extra pass on its cached K/V.
    cross_attention_heads: list[tuple[int, int]] | None = None
    # Whether a finished sequence's weights are wanted, given its output token ids (None: always):
    # the pass is skipped where the caller finds it would not use them.
    cross_attention_wanted: Callable[[list[int]], bool] | None = field(default=None, compare=False)
    # Lower runs first (vLLM's meaning): a waiting request is admitted before every waiting one of
    # a higher value, whenever it came; equal values keep their order of arrival. Above 0, a
    # background request: admitted only while no request of a lower value runs.
    priority: int = 0

    def __post_init__(self) -> None:
        _require(isinstance(self.n, int) and self.n >= 1, f"n must be an integer >= 1, got {self.n!r}")
        _require(self.temperature >= 0, f"temperature must be >= 0, got {self.temperature}")
        _require(
            self.n == 1 or not self.is_greedy, "n > 1 needs temperature > 0 (greedy samples are identical)"
        )
        _require(
            isinstance(self.top_k, int) and self.top_k >= -1,
            f"top_k must be -1, 0 or positive, got {self.top_k!r}",
        )
        _require(0 < self.top_p <= 1, f"top_p must be in (0, 1], got {self.top_p}")
        _require(
            isinstance(self.max_tokens, int) and self.max_tokens >= 1,
            f"max_tokens must be a positive integer, got {self.max_tokens!r}",
        )
        _require(
            isinstance(self.min_tokens, int) and 0 <= self.min_tokens <= self.max_tokens,
            f"min_tokens must be in [0, max_tokens={self.max_tokens}], got {self.min_tokens!r}",
        )
        _require(self.logprobs is None or self.logprobs >= 0, f"logprobs must be >= 0, got {self.logprobs}")
        _require(
            self.repetition_penalty > 0, f"repetition_penalty must be > 0, got {self.repetition_penalty}"
        )
        _require(
            self.no_repeat_ngram_size >= 0,
            f"no_repeat_ngram_size must be >= 0, got {self.no_repeat_ngram_size}",
        )
        _require(
            isinstance(self.beam_width, int) and self.beam_width >= 1,
            f"beam_width must be an integer >= 1, got {self.beam_width!r}",
        )
        _require(self.patience > 0, f"patience must be > 0, got {self.patience}")
        _require(
            self.early_stopping in (True, False, "never"),
            f"early_stopping must be True, False or 'never', got {self.early_stopping!r}",
        )
        _require(
            isinstance(self.num_return_sequences, int) and 1 <= self.num_return_sequences <= self.beam_width,
            f"num_return_sequences must be in [1, beam_width={self.beam_width}], "
            f"got {self.num_return_sequences!r}",
        )
        if self.use_beam_search:
            _require(
                self.is_greedy and self.n == 1,
                "beam search is deterministic: use temperature=0 and n=1 with beam_width > 1",
            )
            _require(self.logprobs is None, "logprobs are not returned with beam search")
        _require(isinstance(self.priority, int), f"priority must be an integer, got {self.priority!r}")
        if self.cross_attention_heads is not None:
            heads = [tuple(h) for h in self.cross_attention_heads]
            _require(
                bool(heads)
                and all(len(h) == 2 and all(isinstance(i, int) and i >= 0 for i in h) for h in heads),
                f"cross_attention_heads must be (layer, head) pairs, got {self.cross_attention_heads!r}",
            )
            _require(not self.use_beam_search, "cross_attention_heads are not returned with beam search")
            self.cross_attention_heads = heads
        self.stop_token_ids = list(self.stop_token_ids or [])
        self.suppress_tokens = list(self.suppress_tokens or [])

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def use_beam_search(self) -> bool:
        return self.beam_width > 1

    @property
    def num_seqs(self) -> int:
        """Decoder sequences the request runs at once (samples or beams)."""
        return max(self.n, self.beam_width)

    def token_ids_to_check(self) -> list[int]:
        """Every token id these settings name, for range checks against the vocabulary."""
        named = [self.forced_bos_token_id, self.forced_eos_token_id]
        return [*self.stop_token_ids, *self.suppress_tokens, *(t for t in named if t is not None)]


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)
