"""`scriba batch`'s output: one row per file in OUT.jsonl or OUT.parquet, resumable.

Rows are appended (and flushed) as files finish, so a stopped job loses nothing written. A rerun
keeps the rows of finished files and skips those files; files that failed and are given again
are tried again, their old rows dropped, so every file has exactly one row. Parquet cannot be appended to: its
rows gather in OUT.parquet.partial.jsonl and become OUT.parquet when the job ends.
"""

from __future__ import annotations

import json
import os

SUFFIXES = (".jsonl", ".parquet")


class ResultsFile:
    def __init__(self, path: str):
        if not path.endswith(SUFFIXES):
            raise ValueError(f"--output must end in .jsonl or .parquet: {path}")
        self.path = path
        self.parquet = path.endswith(".parquet")
        self.journal = path + ".partial.jsonl" if self.parquet else path
        self.rows = self._rows()
        self._out = None

    def finished(self) -> set[str]:
        """Paths that already have a transcript (rows without an error)."""
        return {path for path, row in self.rows.items() if not row.get("error")}

    def open(self, redo: set[str]) -> None:
        """Start writing: the journal is rewritten without the rows of the files in `redo` (and
        without a line torn by a stopped job), then rows are appended to it."""
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        tmp = self.journal + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(_line(row) for path, row in self.rows.items() if path not in redo)
        os.replace(tmp, self.journal)
        self._out = open(self.journal, "a", encoding="utf-8")

    def write(self, row: dict) -> None:
        self._out.write(_line(row))
        self._out.flush()

    def close(self) -> None:
        """Parquet: the journal becomes OUT.parquet (written aside, then moved into place)."""
        self._out.close()
        if self.parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq

            rows = list(_read_jsonl(self.journal).values())
            pq.write_table(pa.Table.from_pylist(rows), self.path + ".tmp")
            os.replace(self.path + ".tmp", self.path)
            os.remove(self.journal)

    def _rows(self) -> dict[str, dict]:
        """path -> its row, from an earlier run (Parquet, then a stopped run's journal)."""
        rows = {}
        if self.parquet and os.path.exists(self.path):
            import pyarrow.parquet as pq

            rows = {row["path"]: row for row in pq.read_table(self.path).to_pylist()}
        rows.update(_read_jsonl(self.journal))
        return rows


def read_rows(path: str) -> list[dict]:
    """Every row of a results file (JSON lines or Parquet), in file order."""
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _read_jsonl(path: str) -> dict[str, dict]:
    """path -> its last row; a torn last line (a job stopped mid-write) is ignored."""
    rows = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                rows[row["path"]] = row
    return rows


def _line(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"
