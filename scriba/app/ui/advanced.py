"""The Transcribe tab's advanced options (closed by default): openai-whisper's and faster-whisper's
decoding options, as TranscribeOptions takes them."""

from __future__ import annotations

from scriba.transcription.options import TranscribeOptions

# (TranscribeOptions field, label, help): the order the page shows them and passes them in
TEXT_FIELDS = [
    ("initial_prompt", "Initial prompt", "text the first window is conditioned on (names, spellings)"),
    ("hotwords", "Hotwords", "hint phrases put before every window's previous text"),
    ("prefix", "Prefix", "the words the recording starts with"),
    ("clip_timestamps", "Clips", "decode only these parts: start,end,start,end in seconds"),
    (
        "suppress_tokens",
        "Suppressed tokens",
        "token ids never written, comma-separated; -1: non-speech marks",
    ),
]
NUMBER_FIELDS = [
    ("beam_size", "Beam size", 1, "1: greedy; more: beam search (no word timestamps)"),
    (
        "best_of",
        "Samples at a fallback",
        TranscribeOptions.best_of,
        "drawn when a window is retried warmer; the likeliest kept",
    ),
    ("max_new_tokens", "Tokens per window at most", 224, ""),
    ("max_initial_timestamp", "First timestamp at most (s)", 1.0, ""),
    ("repetition_penalty", "Repetition penalty", 1.0, "> 1 makes repeating a token less likely"),
    ("no_repeat_ngram_size", "No repeated n-grams of", 0, "0: off"),
    ("patience", "Beam patience", 1.0, ""),
    ("length_penalty", "Beam length penalty", 1.0, ""),
]
CHECK_FIELDS = [
    ("multilingual", "A language per segment", False, "detect each window's language (multilingual models)"),
    ("suppress_blank", "Suppress a blank start", True, ""),
    (
        "condition_on_previous_text",
        "Condition on previous text",
        True,
        "each window reads the text before it",
    ),
]
VAD_CHOICES = [("Auto (over 30 s)", "auto"), ("On", "on"), ("Off", "off")]
# The SRT and VTT downloads' lines (subtitles.py: openai-whisper's options); 0: no limit
SUBTITLE_FIELDS = [
    ("max_line_width", "Subtitle line width", "characters a line at most"),
    ("max_line_count", "Lines per subtitle", "with a width: lines run across segments"),
    ("max_words_per_line", "Words per subtitle line", ""),
]
NAMES = [f[0] for f in TEXT_FIELDS] + [f[0] for f in NUMBER_FIELDS] + [f[0] for f in CHECK_FIELDS] + ["vad"]
NAMES += [f[0] for f in SUBTITLE_FIELDS] + ["highlight_words"]


def build_advanced(gr) -> list:
    """The components, in NAMES' order, inside a closed accordion."""
    components = []
    with gr.Accordion("Advanced options", open=False, elem_id="advanced"):
        with gr.Row():
            for name, label, info in TEXT_FIELDS:
                value = "-1" if name == "suppress_tokens" else ""
                components.append(gr.Textbox(value=value, label=label, info=info, elem_id=f"adv-{name}"))
        with gr.Row():
            for name, label, value, info in NUMBER_FIELDS:
                integer = isinstance(value, int)
                components.append(
                    gr.Number(
                        value=value,
                        label=label,
                        info=info or None,
                        precision=0 if integer else None,
                        elem_id=f"adv-{name}",
                    )
                )
        with gr.Row():
            for name, label, value, info in CHECK_FIELDS:
                with gr.Column(min_width=180):  # a checkbox's own min_width does not wrap a row
                    components.append(
                        gr.Checkbox(value=value, label=label, info=info or None, elem_id=f"adv-{name}")
                    )
            components.append(
                gr.Radio(VAD_CHOICES, value="auto", label="Voice activity detection", elem_id="adv-vad",
                         min_width=180)
            )
        with gr.Row():
            for name, label, info in SUBTITLE_FIELDS:
                components.append(
                    gr.Number(value=0, label=label, info=info or None, precision=0, elem_id=f"adv-{name}")
                )
            components.append(
                gr.Checkbox(value=False, label="Highlight words", info="SRT/VTT: a cue per spoken word",
                            elem_id="adv-highlight_words", min_width=180)
            )
    return components


def subtitle_choice(values: list | None):
    """The subtitle components' values as SubtitleOptions (0 or empty: no limit); any limit asks
    for word times."""
    from scriba.transcription.subtitles import SubtitleOptions

    given = dict(zip(NAMES, values or []))
    limits = {name: int(given[name]) if given.get(name) else None for name, _, _ in SUBTITLE_FIELDS}
    return SubtitleOptions(**limits, highlight_words=bool(given.get("highlight_words")))


def advanced_options(values: list) -> dict:
    """The components' values (NAMES' order) as TranscribeOptions keyword arguments; an empty
    text is the default, and a bad one a one-line error (TranscribeOptions checks the rest)."""
    from scriba.transcription.options import VAD_CHOICES as VAD

    given = dict(zip(NAMES, values))
    options = {name: (given[name] or "").strip() or None for name, _, _ in TEXT_FIELDS}
    text = options.pop("suppress_tokens")
    try:
        options["suppress_tokens"] = tuple(int(x) for x in (text or "").split(",") if x.strip())
    except ValueError:
        raise ValueError(f"Suppressed tokens must be comma-separated token ids, got {text!r}") from None
    for name, _, default, _ in NUMBER_FIELDS:
        value = given[name]
        value = default if value is None else value
        options[name] = int(value) if isinstance(default, int) else float(value)
    options.update({name: bool(given[name]) for name, _, _, _ in CHECK_FIELDS})
    options["vad_filter"] = VAD[given["vad"] or "auto"]
    return options
