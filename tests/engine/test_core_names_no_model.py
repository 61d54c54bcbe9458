"""The engine core knows no model family, and the sampling hot path never syncs per row."""

import pathlib
import re

import scriba.engine

ENGINE = pathlib.Path(scriba.engine.__file__).parent
SCRIBA = ENGINE.parent
MODEL_WORDS = r"whisper|bart|encodes_audio|audio_plan|no_speech|log.mel"


def test_engine_files_name_no_model_family():
    for path in sorted(ENGINE.glob("*.py")):
        found = re.findall(MODEL_WORDS, path.read_text(), flags=re.IGNORECASE)
        assert not found, f"engine/{path.name} names {sorted(set(found))}"


def test_imports_run_one_way():
    """app -> whisper -> engine -> models -> kernels, media below whisper and app: no module
    imports a package above its own (the registry names families as strings, imported late)."""
    above = {
        "kernels": ("app", "whisper", "engine", "models", "media"),
        "models": ("app", "whisper", "engine", "media"),
        "media": ("app", "whisper", "engine", "models", "kernels"),
        "engine": ("app", "whisper", "media"),
        "whisper": ("app",),
    }
    for package, banned in above.items():
        for path in sorted((SCRIBA / package).rglob("*.py")):
            imported = re.findall(r"^\s*(?:from|import) scriba\.(\w+)", path.read_text(), flags=re.M)
            wrong = sorted(set(imported) & set(banned))
            assert not wrong, f"{path.relative_to(SCRIBA)} imports scriba.{wrong}"


def test_sampler_and_processors_never_sync_per_row():
    rules = SCRIBA / "whisper" / "logits_rules.py"
    for path in (ENGINE / "sampler.py", ENGINE / "logits_processors.py", rules):
        assert ".item()" not in path.read_text(), f"{path.name} calls .item()"
    sampler = (ENGINE / "sampler.py").read_text()
    assert sampler.count(".tolist()") == 1  # the one device -> host transfer
