"""Every Python and shell block in the README and docs/ runs as pasted, in a folder that holds
the repository's assets/ and tests/data/ (as a clone does), on the bundled model.

A block may say what else it needs, in a comment on the line above it:
  <!-- example: needs the network -->       installs or a hub model: not run here (checked that
                                            it names what it fetches)
  <!-- example: starts a server on PORT --> run until http://127.0.0.1:PORT/health answers,
                                            with the file's "needs the server" blocks run
                                            against it, then stopped
  <!-- example: needs the server on PORT --> run while that server is up
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request

import paths
import pytest

DOCS = [os.path.join(paths.ROOT, "README.md")] + sorted(
    os.path.join(paths.ROOT, "docs", name)
    for name in os.listdir(os.path.join(paths.ROOT, "docs"))
    if name.endswith(".md")
)
BLOCK = re.compile(
    r"(?:<!-- example: (?P<mark>[^>]*?) -->\n)?^```(?P<lang>python|bash)\n(?P<code>.*?)^```", re.S | re.M
)
# What the bundled recordings say: a client block prints a transcript of one of them
HEARD = ("fellow Americans", "golden fortune")  # assets/jfk.flac, assets/two_speakers.ogg
MARKS = re.compile(r"needs the network|starts a server on (\d+)|needs the server on (\d+)")


def blocks() -> list[dict]:
    found = []
    for path in DOCS:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("lang")) + 1
            name = f"{os.path.relpath(path, paths.ROOT)}:{line}"
            found.append(dict(name=name, path=path, lang=m["lang"], code=m["code"], mark=m["mark"] or ""))
    return found


BLOCKS = blocks()
PLAIN = [b for b in BLOCKS if not b["mark"]]
SERVERS = [b for b in BLOCKS if b["mark"].startswith("starts a server")]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A fresh folder with the clone's assets/ and tests/data/ (what the examples read)."""
    folder = tmp_path_factory.mktemp("examples")
    os.symlink(os.path.join(paths.ROOT, "assets"), folder / "assets")
    (folder / "tests").mkdir()
    os.symlink(os.path.join(paths.ROOT, "tests", "data"), folder / "tests" / "data")
    return str(folder)


def run(block: dict, cwd: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    command = (
        [sys.executable, "-c", block["code"]]
        if block["lang"] == "python"
        else ["bash", "-e", "-c", block["code"]]
    )
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{block['name']} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def test_every_block_is_plain_or_says_what_it_needs():
    assert len(BLOCKS) >= 15 and len(PLAIN) >= 8
    for block in BLOCKS:
        if block["mark"]:
            assert MARKS.fullmatch(block["mark"]), f"{block['name']}: unknown mark {block['mark']!r}"
        if block["mark"] == "needs the network":  # it installs or fetches something
            assert re.search(r"pip install|scriba download|summarize|[a-z]+/[a-z0-9.-]+-", block["code"]), (
                block["name"]
            )
        if block["mark"].startswith("needs the server"):
            port = block["mark"].rsplit(" ", 1)[1]
            starts = [s for s in SERVERS if s["path"] == block["path"] and s["mark"].endswith(port)]
            assert starts, f"{block['name']}: no block of its file starts the server on {port}"


@pytest.mark.parametrize("block", PLAIN, ids=[b["name"] for b in PLAIN])
def test_block_runs_as_pasted(block, workdir):
    done = run(block, workdir)
    assert "Traceback" not in done.stderr and "np.float" not in done.stdout, done.stdout[-2000:]


@pytest.mark.parametrize("block", SERVERS, ids=[b["name"] for b in SERVERS])
def test_server_block_serves_and_its_clients_run(block, workdir):
    port = int(block["mark"].rsplit(" ", 1)[1])
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    server = subprocess.Popen(
        ["bash", "-c", "exec " + block["code"].split("#")[0].strip()],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 180
        while True:
            assert server.poll() is None, f"{block['name']} exited: {server.stderr.read()[-2000:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    assert answer.status == 200
                    break
            except OSError:
                assert time.time() < deadline, f"{block['name']}: nothing answered on {port}"
                time.sleep(0.5)
        clients = [
            b for b in BLOCKS if b["path"] == block["path"] and b["mark"] == f"needs the server on {port}"
        ]
        for client in clients:
            done = run(client, workdir)
            assert any(words in done.stdout for words in HEARD), done.stdout[-2000:]
    finally:
        server.terminate()
        server.wait(timeout=30)
