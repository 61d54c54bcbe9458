"""Where a transcription stands, for a progress bar: its stage and how many windows are done.

`transcribe(progress=...)` takes True (a tqdm bar on stderr, as the CLI shows it) or any
callable given a `Progress` at each change (the web app's bar). Windows decode together in one
batch, so a running window counts in part: half once encoded, the rest as far as its last
timestamp token reaches. The count never goes back (a retried window adds one to the total).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scriba.whisper.constants import TIME_PRECISION


@dataclass(frozen=True)
class Progress:
    stage: str  # "loading model", "reading audio", "finding speech", "transcribing", "done"
    done: float = 0.0  # windows decoded, counting partly decoded ones in part
    total: int = 0  # windows known so far (tails and retries add more)

    @property
    def fraction(self) -> float:
        if self.stage == "done":
            return 1.0
        return min(1.0, self.done / self.total) if self.total else 0.0

    def __str__(self) -> str:
        if self.stage != "transcribing" or not self.total:
            return self.stage
        current = min(int(self.done) + 1, self.total)
        return f"transcribing window {current} of {self.total}"


Reporter = Callable[[Progress], None]


def reporter(progress: bool | Reporter | None) -> Reporter | None:
    """The callable for transcribe's `progress` argument (None: report nothing)."""
    if callable(progress):
        return progress
    return TqdmBar() if progress else None


class TqdmBar:
    """Progress on a tqdm bar: the stage as its label, windows as its count."""

    def __init__(self):
        self.bar = None

    def __call__(self, p: Progress) -> None:
        from tqdm.auto import tqdm

        if self.bar is None:
            self.bar = tqdm(
                total=0, desc=str(p), unit="window", bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}"
            )
        self.bar.set_description_str(str(p), refresh=False)
        self.bar.total = max(p.total, 1)
        self.bar.n = round(min(p.done, p.total), 2)
        self.bar.refresh()
        if p.stage == "done":
            self.bar.close()


ENCODED_SHARE = 0.5  # of a window's work, done once its audio is encoded (the encoder is half on a CPU)


def window_fraction(token_ids: list[int], timestamp_begin: int, window_seconds: float) -> float:
    """How much of a running window is done: its encoding, and its text as far into the window
    as its last timestamp token reaches (0.02 s each); at most 0.99."""
    last = next((t for t in reversed(token_ids) if t >= timestamp_begin), None)
    if last is None or window_seconds <= 0:
        return ENCODED_SHARE
    reached = min(1.0, (last - timestamp_begin) * TIME_PRECISION / window_seconds)
    return min(0.99, ENCODED_SHARE + (1 - ENCODED_SHARE) * reached)
