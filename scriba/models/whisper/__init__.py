"""Whisper's network and its checkpoints: the encoder/decoder on the paged KV cache (network.py), the
control tokens of its vocabulary (tokens.py) and the language table they name (language_names.py),
and the CTranslate2 (faster-whisper) checkpoints Scriba reads directly (ctranslate2.py, with the
configs they carry: checkpoint_config.py). Its request processing is scriba/whisper/'s."""
