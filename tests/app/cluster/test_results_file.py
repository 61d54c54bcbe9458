"""The batch output: rows kept across runs, failed rows redone, torn lines ignored, Parquet."""

from __future__ import annotations

import json

import pytest

from scriba.app.cluster.results_file import ResultsFile, read_rows


def row(path, error=None, text="t"):
    return {"path": path, "text": None if error else text, "segments": [], "error": error}


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_rerun_keeps_finished_rows_and_redoes_failed_ones(tmp_path, suffix):
    path = str(tmp_path / f"out{suffix}")
    first = ResultsFile(path)
    first.open(set())
    for r in [row("/a"), row("/b", error="bad"), row("/c")]:
        first.write(r)
    first.close()
    assert [r["path"] for r in read_rows(path)] == ["/a", "/b", "/c"]

    again = ResultsFile(path)
    assert again.finished() == {"/a", "/c"}
    again.open({"/b"})
    again.write(row("/b", text="now fine"))
    again.close()
    rows = read_rows(path)
    assert [(r["path"], r["text"], r["error"]) for r in rows] == [
        ("/a", "t", None),
        ("/c", "t", None),
        ("/b", "now fine", None),
    ]


def test_a_stopped_parquet_job_resumes_from_its_journal(tmp_path):
    path = str(tmp_path / "out.parquet")
    job = ResultsFile(path)
    job.open(set())
    job.write(row("/a"))
    job._out.write('{"path": "/b", "te')  # stopped mid-line: no Parquet yet, a torn journal
    job._out.close()
    resumed = ResultsFile(path)
    assert resumed.finished() == {"/a"}
    resumed.open({"/b"})
    resumed.write(row("/b"))
    resumed.close()
    assert [r["path"] for r in read_rows(path)] == ["/a", "/b"]


def test_only_jsonl_or_parquet(tmp_path):
    with pytest.raises(ValueError, match="must end in .jsonl or .parquet"):
        ResultsFile(str(tmp_path / "out.csv"))


def test_rows_are_flushed_as_they_are_written(tmp_path):
    path = str(tmp_path / "out.jsonl")
    job = ResultsFile(path)
    job.open(set())
    job.write(row("/a"))
    with open(path) as f:  # readable before the job ends
        assert json.loads(f.readline())["path"] == "/a"
    job.close()
