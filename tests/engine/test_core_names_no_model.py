"""The engine core knows no model family, and the sampling hot path never syncs per row."""

import pathlib
import re

import scriba.engine

ENGINE = pathlib.Path(scriba.engine.__file__).parent
CORE = [
    "engine",
    "scheduler",
    "sequence",
    "block_manager",
    "model_runner",
    "sampler",
    "logits_processors",
    "beam_search",
    "token_history",
    "cuda_graphs",
    "memory",
    "outputs",
]


def test_core_files_name_no_model_family():
    for name in CORE:
        text = (ENGINE / f"{name}.py").read_text()
        pattern = r"whisper|bart|encodes_audio|audio_plan|no_speech_token"
        found = re.findall(pattern, text, flags=re.IGNORECASE)
        assert not found, f"engine/{name}.py names {sorted(set(found))}"


def test_sampler_and_processors_never_sync_per_row():
    for name in ("sampler", "logits_processors", "whisper_decoding"):
        text = (ENGINE / f"{name}.py").read_text()
        assert ".item()" not in text, f"engine/{name}.py calls .item()"
    sampler = (ENGINE / "sampler.py").read_text()
    assert sampler.count(".tolist()") == 1  # the one device -> host transfer
