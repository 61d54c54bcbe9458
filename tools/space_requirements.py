"""Writes requirements.txt, what a Hugging Face Space installs, from pyproject.toml's dependencies
and its `ui` and `speakers` extras (the web app the Space serves, with speakers), so the two cannot drift (tests/test_space.py
checks the file is this script's output).

    python tools/space_requirements.py          # rewrite requirements.txt
"""

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = (
    "# Generated from pyproject.toml by tools/space_requirements.py: edit pyproject.toml, then rerun it.\n"
    "# A Hugging Face Space installs these; app.py imports scriba from this folder.\n"
)


def space_requirements() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = project["dependencies"] + extras["ui"] + extras["speakers"]
    return HEADER + "".join(f"{dependency}\n" for dependency in wanted)


if __name__ == "__main__":
    (ROOT / "requirements.txt").write_text(space_requirements())
