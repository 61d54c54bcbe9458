"""Language names and codes, checked against a model's vocabulary; the language a request spoke."""

from __future__ import annotations

import math

from scriba.models.whisper.language_names import LANGUAGES, TO_LANGUAGE_CODE


def whisper_language_code(language: str) -> str:
    """'en', 'English' or 'english' -> 'en' for any language Whisper knows; else a clear error."""
    if not isinstance(language, str):
        raise ValueError(f"language must be a string like 'en' or None to detect it, got {language!r}")
    code = language.strip().lower()
    code = TO_LANGUAGE_CODE.get(code, code)
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}: use a code like 'de' or a name like 'German'")
    return code


def language_code(language: str, tokens) -> str:
    """`language` as this model's code; a clear error for anything the model lacks."""
    code = whisper_language_code(language)
    if not tokens.is_multilingual:
        if code != "en":
            name = LANGUAGES[code].title()
            raise ValueError(f"this model is English-only: it cannot transcribe {name} ({language!r})")
        return code
    if code not in tokens.lang_to_id:
        known = ", ".join(sorted(tokens.lang_to_id))
        hint = (
            f" ({LANGUAGES[code].title()} is not among this model's languages)" if code in LANGUAGES else ""
        )
        raise ValueError(f"unknown language {language!r}{hint}; use one of: {known}")
    return code


def spoken_language(tokens, decoder_token_ids, layout, seq) -> tuple[str | None, float | None]:
    """(language code, its probability among the languages when detected) of a request whose
    decoder prompt is `decoder_token_ids`, laid out as `layout` (None: given whole)."""
    id_to_lang = tokens.id_to_lang
    if not tokens.is_multilingual:
        return "en", None
    if layout is not None and layout.detect_language:
        index = layout.sot_index + 1
        if len(seq.token_ids) <= index:
            return None, None
        return id_to_lang.get(seq.token_ids[index]), math.exp(seq.token_logprobs[index - seq.prompt_len])
    found = [id_to_lang[t] for t in decoder_token_ids if t in id_to_lang]
    return (found[0] if found else None), None
