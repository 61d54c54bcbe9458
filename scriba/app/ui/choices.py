"""What the page offers follows the models it serves: the Whisper models on its list (and no
other), their languages (English-only: English, and no translation), and whether the
summarizer is on this machine. The first model is loaded as the app starts."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from scriba.models.whisper.language_names import LANGUAGES
from scriba.runtime.loops import get_loop

BUNDLED = "tiny.en (bundled)"  # the dropdown's name for the offline default (model=None)


def model_arg(choice: str | None) -> str | None:
    """The dropdown's value as transcribe()'s `model`."""
    return None if not choice or choice == BUNDLED else choice


@dataclass(frozen=True)
class WhisperFacts:
    multilingual: bool
    languages: list[tuple[str, str]]  # (name, code), "auto" first for multilingual models

    @property
    def tasks(self) -> list[str]:
        return ["transcribe", "translate"] if self.multilingual else ["transcribe"]


def whisper_facts(choice: str | None) -> WhisperFacts:
    """Loads the model (the shared engine the transcriptions use) and reads its languages."""
    tokens = get_loop(model_arg(choice)).engine.model.tokens
    if not tokens.is_multilingual:
        return WhisperFacts(False, [("English", "en")])
    named = sorted((LANGUAGES.get(code, code).title(), code) for code in tokens.lang_to_id)
    return WhisperFacts(True, [("Auto-detect", "auto")] + named)


def describe_model(choice: str, facts: WhisperFacts) -> str:
    kind = f"{len(facts.languages) - 1} languages" if facts.multilingual else "English-only"
    return f"**Whisper {choice}** ({kind}) · ready"


class Summarizer:
    """The configured summarizer and whether it can run here, found out once, off the page's
    thread (the hub check may take seconds). `setting` tells how to choose another summarizer
    where this page runs: the CLI's flag, or the Space's variable."""

    def __init__(self, model: str, setting: str = "start the app with `--summarizer FOLDER`"):
        self.model = model
        self.setting = setting
        self._state: tuple[str, str] | None = None
        self._done = threading.Event()
        threading.Thread(target=self._check, name="scriba-summarizer-check", daemon=True).start()

    def _check(self) -> None:
        from scriba.models.loader import model_availability

        try:
            self._state = model_availability(self.model)
        except Exception as e:  # noqa: BLE001 - shown on the page as the reason
            self._state = ("missing", str(e).splitlines()[0])
        self._done.set()

    @property
    def available(self) -> bool:
        self._done.wait()
        return self._state[0] != "missing"

    def notice(self) -> str:
        self._done.wait()
        state, detail = self._state
        if state == "local":
            return f"Summarizer **{self.model}**: on this machine."
        if state == "hub":
            return f"Summarizer **{self.model}**: downloaded from the Hugging Face hub on first use."
        if "cannot be reached" in detail:
            return (
                f"Summarizer **{self.model}** is not available: it is not on this machine and cannot be "
                f"downloaded here. Get it with `scriba download {self.model}` where there is internet, "
                f"or {self.setting}."
            )
        return f"Summarizer **{self.model}** is not available ({detail}): {self.setting}."


def preload(choice: str | None) -> threading.Thread:
    """Load the default Whisper model in the background as the app starts."""
    thread = threading.Thread(target=whisper_facts, args=(choice,), name="scriba-preload", daemon=True)
    thread.start()
    return thread
