"""Tiny random-weight Whisper checkpoints (multilingual or English-only, 80 or 128 mel bins),
saved as Hugging Face folders with a generation_config.json and a byte-level tokenizer.

Vocabulary: 256 byte tokens, then Whisper's control tokens in their standard order, then
1501 timestamp tokens, so every rule that depends on the layout is exercised.
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch
from transformers import (
    GenerationConfig,
    PreTrainedTokenizerFast,
    WhisperConfig,
    WhisperForConditionalGeneration,
)
from transformers.convert_slow_tokenizer import bytes_to_unicode

LANGS = ["en", "de", "fr", "es"]
EOT = 256
SOT = 257
LANG_IDS = {f"<|{code}|>": SOT + 1 + i for i, code in enumerate(LANGS)}
TRANSLATE = SOT + 1 + len(LANGS)
TRANSCRIBE = TRANSLATE + 1
START_OF_PREV = TRANSCRIBE + 2
NO_SPEECH = START_OF_PREV + 1
NO_TIMESTAMPS = NO_SPEECH + 1
TIMESTAMP_BEGIN = NO_TIMESTAMPS + 1
VOCAB_SIZE = TIMESTAMP_BEGIN + 1501
SPECIALS = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    *LANG_IDS,
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nospeech|>",
    "<|notimestamps|>",
]
SUPPRESS = [1, 2, 7, TRANSLATE, TRANSCRIBE, START_OF_PREV - 1, START_OF_PREV, NO_SPEECH]
BEGIN_SUPPRESS = [ord(" "), EOT]


def write_tokenizer(path: str) -> None:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    byte_chars = list(bytes_to_unicode().values())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(byte_chars)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>").save_pretrained(path)


def make_tiny_whisper(path: str, multilingual: bool = True, num_mel_bins: int = 80, seed: int = 0):
    """Save a 2+2-layer Whisper under `path`; return the transformers model (float32, eval)."""
    torch.manual_seed(seed)
    config = WhisperConfig(
        vocab_size=VOCAB_SIZE,
        num_mel_bins=num_mel_bins,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_source_positions=1500,
        max_target_positions=448,
        eos_token_id=EOT,
        bos_token_id=EOT,
        pad_token_id=EOT,
        decoder_start_token_id=SOT,
        suppress_tokens=SUPPRESS,
        begin_suppress_tokens=BEGIN_SUPPRESS,
        init_std=0.1,
    )
    model = WhisperForConditionalGeneration(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") and "layer_norm" not in name:
                p.normal_(0, 0.1)
        # Spread the timestamp rows apart so that timestamps win often enough to test the rules,
        # and lift <|endoftext|> so that sequences end on their own.
        embed = model.model.decoder.embed_tokens.weight
        embed[TIMESTAMP_BEGIN:] *= 2.0
        embed[EOT] *= 1.5
    model.generation_config = GenerationConfig(
        decoder_start_token_id=SOT,
        eos_token_id=EOT,
        bos_token_id=EOT,
        pad_token_id=EOT,
        max_length=448,
        no_timestamps_token_id=NO_TIMESTAMPS,
        prev_sot_token_id=START_OF_PREV,
        is_multilingual=multilingual,
        suppress_tokens=SUPPRESS,
        begin_suppress_tokens=BEGIN_SUPPRESS,
        max_initial_timestamp_index=50,
        **(
            dict(lang_to_id=LANG_IDS, task_to_id={"translate": TRANSLATE, "transcribe": TRANSCRIBE})
            if multilingual
            else {}
        ),
    )
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    write_tokenizer(path)
    return model


def synthetic_clip(seconds: float, seed: int, sample_rate: int = 16000) -> np.ndarray:
    """A chirp with noise: a different spectrum per seed, so features differ between clips."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    f0 = rng.uniform(100, 800)
    tone = np.sin(2 * math.pi * (f0 + rng.uniform(10, 200) * t) * t)
    return (0.3 * tone + 0.05 * rng.standard_normal(t.shape)).astype(np.float32)
