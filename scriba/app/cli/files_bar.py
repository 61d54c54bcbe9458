"""Progress over the files of a `scriba transcribe` run: a tqdm bar on a terminal, one plain line
per file otherwise (a log, a pipe), and errors said above the bar without breaking it."""

from __future__ import annotations

import sys


class FilesBar:
    def __init__(self, total: int):
        self.total, self.count = total, 0
        self.bar = None
        if total > 1 and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="file", file=sys.stderr, dynamic_ncols=True)

    def said(self, line: str) -> None:
        """An error about one file: it counts as handled, the run goes on."""
        self.count += 1
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
            self.bar.update(1)
        else:
            print(line, file=sys.stderr, flush=True)

    def done(self, one, written: list[str]) -> None:
        """A file transcribed; `written`: the paths of its outputs (none when printed)."""
        self.count += 1
        if self.bar is not None:
            self.bar.set_postfix_str(one.path, refresh=False)
            self.bar.update(1)
            return
        for path in written:  # each file written, as a log reads it
            line = f"[{self.count}/{self.total}] {path}" if self.total > 1 else path
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
