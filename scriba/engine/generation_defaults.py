"""A checkpoint's own generation settings as SamplingParams defaults.

Read from generation_config.json (values the file sets), falling back to
`task_specific_params[task]` in config.json. transformers counts `max_length` / `min_length`
over the whole decoder sequence from <DEC>, with forced tokens (a forced BOS) counted as
generated; Scriba's token counts start after its default decoder prompt, so the lengths are
shifted by that prompt's length.
"""

from __future__ import annotations

from scriba.engine.sampling_params import SamplingParams

_SAME_NAME = (
    "length_penalty",
    "early_stopping",
    "no_repeat_ngram_size",
    "repetition_penalty",
    "num_return_sequences",
    "forced_eos_token_id",
)


def checkpoint_generation_settings(model, task: str | None) -> dict:
    """The generation values the checkpoint sets (generation_config.json over task params)."""
    settings = dict(
        ((getattr(model.config, "task_specific_params", None) or {}).get(task) or {}) if task else {}
    )
    gen = getattr(model, "generation_config", None)
    if gen is not None:
        settings.update(gen.to_diff_dict())
    return settings


def generation_defaults(model, task: str | None = None, **overrides) -> SamplingParams:
    """SamplingParams with the checkpoint's defaults, then `overrides` (SamplingParams names)."""
    settings = checkpoint_generation_settings(model, task)
    prompt_len = len(model.default_decoder_prompt())
    forced = prompt_len - 1  # tokens after <DEC> that transformers would force, then count
    values: dict = {}
    if settings.get("num_beams", 1) > 1:
        values["beam_width"] = settings["num_beams"]
    for name in _SAME_NAME:
        if settings.get(name) is not None:
            values[name] = settings[name]
    if settings.get("max_new_tokens") is not None:
        values["max_tokens"] = settings["max_new_tokens"] - forced
    elif settings.get("max_length") is not None:
        values["max_tokens"] = settings["max_length"] - prompt_len
    if settings.get("min_new_tokens") is not None:
        values["min_tokens"] = max(0, settings["min_new_tokens"] - forced)
    elif settings.get("min_length"):
        values["min_tokens"] = max(0, settings["min_length"] - prompt_len)
    if values.get("num_return_sequences", 1) > values.get("beam_width", 1):
        values.pop("num_return_sequences")
    values.update(overrides)
    if "max_tokens" in overrides and "min_tokens" in values and "min_tokens" not in overrides:
        values["min_tokens"] = min(values["min_tokens"], overrides["max_tokens"])
    return SamplingParams(**values)
