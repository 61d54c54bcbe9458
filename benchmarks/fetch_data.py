"""LibriSpeech test-clean (CC BY 4.0) in the suites' `--data` layout (benchmarks/data.py), or
with `--meetings`, real multi-speaker recordings with their reference turns (meetings.py) for the
diarization suite.

    python -m benchmarks fetch-data DIR [--chapters 4]
    python -m benchmarks fetch-data --meetings DIR
"""

from __future__ import annotations

from benchmarks.data import LIBRISPEECH_TEST_CLEAN, fetch_librispeech
from benchmarks.report import suite_parser


def main(argv: list[str]) -> int:
    parser = suite_parser("fetch-data", __doc__)
    parser.add_argument("out", help="the folder to fill (MANIFEST.tsv, short/, longform/)")
    parser.add_argument("--meetings", action="store_true", help="fill it with meetings (NAME.wav, NAME.rttm)")
    parser.add_argument("--chapters", type=int, default=4, help="chapters laid end to end in longform/")
    parser.add_argument("--url", default=LIBRISPEECH_TEST_CLEAN)
    args = parser.parse_args(argv)
    if args.meetings:
        from benchmarks.meetings import fetch_meetings

        fetch_meetings(args.out)
        return 0
    fetch_librispeech(args.out, args.url, args.chapters)
    return 0
