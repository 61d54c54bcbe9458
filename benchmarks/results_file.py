"""The benchmarks' `--out`: what a script printed, written to a results file as well."""

from __future__ import annotations


def save_lines(lines: list[str], path: str | None) -> None:
    """Write `lines` to `path` (one per line); nothing when no path was given."""
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
