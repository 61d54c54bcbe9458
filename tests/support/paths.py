"""Where the tests find the repository's files."""

import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JFK = os.path.join(ROOT, "assets", "jfk.flac")
TEST_DATA = os.path.join(ROOT, "tests", "data")
