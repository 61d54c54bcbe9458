"""A checkpoint's tokenizer: text to token ids and back.

The engine calls three things of a tokenizer: `tokenizer(text, add_special_tokens=...)["input_ids"]`,
`tokenizer.decode(ids, skip_special_tokens=...)` and `len(tokenizer)`. A folder that holds only a
`tokenizer.json` (CTranslate2's folders: the offline models) is read with the `tokenizers` library
directly: transformers would wrap the very same `tokenizers.Tokenizer` with its default settings
(tested equal), and importing transformers costs a cold start 1.0-1.3 s. Any other folder gets
transformers' AutoTokenizer, which also reads tokenizer_config.json, sentencepiece models and
vocab files.
"""

from __future__ import annotations

import logging
import os

logger = logging.getLogger("scriba")

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "sentencepiece.bpe.model",
    "spiece.model",
    "tokenizer.model",
)


class TokenizerFile:
    """A `tokenizer.json` behind the calls the engine makes of transformers' tokenizers."""

    def __init__(self, file: str):
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_file(file)
        self.size = self.backend.get_vocab_size(with_added_tokens=True)

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": self.backend.encode(text, add_special_tokens=add_special_tokens).ids}

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def __len__(self) -> int:
        return self.size


def load_tokenizer(path: str, explicit: bool):
    """The checkpoint's tokenizer; None when its folder has none (transformers would invent an
    empty one). `explicit`: the user named this tokenizer, so a folder without files is tried."""
    present = [f for f in TOKENIZER_FILES if os.path.exists(os.path.join(path, f))]
    if not explicit and not present:
        logger.warning(
            "no tokenizer files in %s: text prompts are disabled, outputs carry token ids only", path
        )
        return None
    try:
        if present == ["tokenizer.json"]:
            return _tokenizer_file(os.path.join(path, "tokenizer.json"))
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError, TypeError) as e:
        logger.warning(
            "no tokenizer for %s (%s): text prompts are disabled, outputs carry token ids only", path, e
        )
        return None


def _tokenizer_file(file: str) -> TokenizerFile:
    try:
        return TokenizerFile(file)
    except Exception as e:  # the tokenizers library raises a bare Exception for a malformed file
        raise ValueError(f"{file}: {e}") from None
