"""Tiny random-weight BART / mBART checkpoints, saved as real Hugging Face folders.

Each folder holds config.json, model.safetensors and a byte-level BPE tokenizer (bytes only,
no merges), so tests go through the same loading path as a downloaded checkpoint.
"""

from __future__ import annotations

import json
import os

import torch
from transformers import BartConfig, BartForConditionalGeneration, MBartConfig, MBartForConditionalGeneration
from transformers.convert_slow_tokenizer import bytes_to_unicode

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
BOS, PAD, EOS = 0, 1, 2
VOCAB_SIZE = 264  # 4 specials + 256 bytes + <mask> + 3 spare (language codes for mBART)
LANG_ID = 262


def tiny_config(kind: str = "bart", **overrides):
    """A 2+2-layer model, d_model 64, 40 positions unless overridden."""
    common = dict(
        vocab_size=VOCAB_SIZE,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_position_embeddings=256,
        bos_token_id=BOS,
        pad_token_id=PAD,
        eos_token_id=EOS,
        decoder_start_token_id=EOS,
        forced_bos_token_id=BOS,
        forced_eos_token_id=None,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        init_std=0.1,
        # Untied: a random model with tied embeddings just copies its input token forever.
        tie_word_embeddings=False,
    )
    if kind == "mbart":
        common.update(scale_embedding=True, forced_bos_token_id=LANG_ID)
        cls = MBartConfig
    else:
        cls = BartConfig
    common.update(overrides)
    return cls(**common)


def write_tokenizer(path: str) -> None:
    byte_chars = list(bytes_to_unicode().values())
    vocab = {tok: i for i, tok in enumerate(SPECIALS + byte_chars + ["<mask>"])}
    with open(os.path.join(path, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    with open(os.path.join(path, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
    from transformers import BartTokenizer

    BartTokenizer(os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt")).save_pretrained(path)


def make_tiny_model(path: str, kind: str = "bart", seed: int = 0, tokenizer: bool = True, **overrides):
    """Save a tiny random model under `path`; return the transformers model (float32, eval)."""
    torch.manual_seed(seed)
    config = tiny_config(kind, **overrides)
    cls = MBartForConditionalGeneration if kind == "mbart" else BartForConditionalGeneration
    model = cls(config).eval()
    with torch.no_grad():  # transformers zero-inits biases and the logits bias; randomize them
        for name, p in model.named_parameters():
            if name.endswith("bias") and "layer_norm" not in name and "layernorm" not in name:
                p.normal_(0, 0.1)
        model.final_logits_bias.normal_(0, 0.5)
        model.final_logits_bias[0, EOS] = 1.0  # so that some outputs stop on EOS
    if kind == "mbart":  # transformers keeps the forced first token in the generation config
        model.generation_config.forced_bos_token_id = LANG_ID
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    if tokenizer:
        write_tokenizer(path)
    return model
