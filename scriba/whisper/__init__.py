"""Whisper's request processing: what the engine core does not know about it. Its network, tokens
and checkpoints are in models/whisper/; its CPU encoder backend in models/openvino_encoder/.

    constants.py      sample rate, log-mel hop, 30 s window, 0.02 s timestamp step
    log_mel.py        audio samples -> log-mel features [mel_bins, frames]
    languages.py      language names and codes; the language a request spoke
    prompt_layout.py  the decoder prompt and where each part of it sits
    logits_rules.py   the decoding rules as logits processors (timestamps, suppression, detection)
    requests.py       request processing: audio prompts in, annotated outputs out

The engine finds the model and the request processing by name (models/registry.py,
engine/request_processing.py); this package imports the engine, never the other way round.
Transcription of whole files (windows, VAD, words, the language vote) is in scriba/transcription/.
"""
