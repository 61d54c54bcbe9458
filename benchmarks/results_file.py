"""The benchmarks' `--out`: what a script printed, written to a results file as well."""

from __future__ import annotations


def save_lines(lines: list[str], path: str | None) -> None:
    """Write `lines` to `path` (one per line); nothing when no path was given."""
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


class Report:
    """What a script prints, kept for `save_lines`: report(line) prints it at once and keeps it."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        print(line, flush=True)
        self.lines.append(line)

    def save(self, path: str | None) -> None:
        save_lines(self.lines, path)
