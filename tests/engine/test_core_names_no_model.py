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
    """app -> transcription | summarization -> speakers | runtime -> whisper -> engine -> models ->
    kernels, media below whisper: no module imports a package above its own, the two pipelines
    do not import each other (the registry names model families as strings, imported late), and
    who spoke when (speakers) needs no engine."""
    order = [
        "app",
        "transcription|summarization",
        "speakers|runtime",
        "whisper",
        "media",
        "engine",
        "models",
        "kernels",
    ]
    levels = [level.split("|") for level in order]
    banned = {
        pkg: [p for upper in levels[:i] for p in upper] for i, level in enumerate(levels) for pkg in level
    }
    banned["transcription"].append("summarization")
    banned["summarization"].append("transcription")
    banned["speakers"] += ["runtime", "engine", "models"]
    banned["media"] += ["engine", "models", "kernels"]  # audio decoding needs no model
    assert sorted(banned) == sorted(p.name for p in SCRIBA.iterdir() if any(p.glob("*.py")))
    for package, above in banned.items():
        for path in sorted((SCRIBA / package).rglob("*.py")):
            imported = re.findall(r"^\s*(?:from|import) scriba\.(\w+)", path.read_text(), flags=re.M)
            wrong = sorted(set(imported) & set(above))
            assert not wrong, f"{path.relative_to(SCRIBA)} imports scriba.{wrong}"


def test_kernels_import_nothing_else_and_the_config_only_the_profiles():
    """kernels/ holds attention ops alone (allocation and device moves are the engine's), so it
    imports nothing of Scriba's outside itself; config.py reads a model's profile (models/) and
    nothing above it."""

    def imported(path: pathlib.Path) -> set[str]:
        return set(re.findall(r"^\s*(?:from|import) scriba\.(\w+)", path.read_text(), flags=re.M))

    for path in sorted((SCRIBA / "kernels").rglob("*.py")):
        assert imported(path) <= {"kernels"}, f"kernels/{path.name} imports scriba.{imported(path)}"
    assert imported(SCRIBA / "config.py") == {"models"}


def test_sampler_and_processors_never_sync_per_row():
    rules = SCRIBA / "whisper" / "logits_rules.py"
    for path in (ENGINE / "sampler.py", ENGINE / "logits_processors.py", rules):
        assert ".item()" not in path.read_text(), f"{path.name} calls .item()"
    sampler = (ENGINE / "sampler.py").read_text()
    assert sampler.count(".tolist()") == 1  # the one device -> host transfer
