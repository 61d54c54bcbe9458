"""Real multi-speaker recordings with reference turns, from public repositories' test folders,
laid out as the diarization suite's `--meetings` folder: NAME.wav beside NAME.rttm.

- pyannote-audio (MIT), tests/data: fourteen 30 s excerpts of meetings, 1-4 speakers, short turns
  and overlaps, their turns in debug.{development,test,train}.rttm; and src/pyannote/audio/sample:
  sample.wav, a 30 s telephone call of two people (Diane and Sheila), with sample.rttm;
- Picovoice Falcon (Apache-2.0), resources/audio_samples/test.wav: 18.6 s, three speakers, its
  turns from the repository's resources/.test/test_data.json (written below).
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request

PYANNOTE = "https://raw.githubusercontent.com/pyannote/pyannote-audio/b749285c5cdd4636b2edc7f766f1352c8dde9369"
PYANNOTE_FILES = {  # the name the RTTM gives -> the file in tests/data
    **{name: f"{name}.wav" for name in ("dev00", "dev01", "tst00", "tst01")},
    **{f"trn{i:02d}": f"trn{i:02d}.wav" for i in range(1, 10)},
    "trn00": "trñ00.wav",
}
PYANNOTE_RTTMS = [f"debug.{part}.rttm" for part in ("development", "test", "train")]
PYANNOTE_SAMPLE = "src/pyannote/audio/sample/sample"  # .wav and .rttm: the phone call
FALCON = "https://raw.githubusercontent.com/Picovoice/falcon/3085c22ac0ea3d602efb765f51212aa1565c9b47"
FALCON_TURNS = [(1.7, 3.9, "speaker_1"), (6.2, 11.1, "speaker_2"), (12.8, 18.0, "speaker_3")]


def _get(url: str) -> bytes:
    print(f"downloading {url} ...", flush=True)
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def fetch_meetings(out: str) -> None:
    """Download the recordings and their turns into `out` (meetings' layout)."""
    quote = urllib.parse.quote
    audio = {name: _get(f"{PYANNOTE}/tests/data/{quote(file)}") for name, file in PYANNOTE_FILES.items()}
    rttm = "".join(_get(f"{PYANNOTE}/tests/data/{name}").decode() for name in PYANNOTE_RTTMS)
    audio["sample"] = _get(f"{PYANNOTE}/{PYANNOTE_SAMPLE}.wav")
    rttm += _get(f"{PYANNOTE}/{PYANNOTE_SAMPLE}.rttm").decode()
    audio["falcon_test"] = _get(f"{FALCON}/resources/audio_samples/test.wav")
    falcon = "".join(
        f"SPEAKER falcon_test 1 {a:.3f} {b - a:.3f} <NA> <NA> {s} <NA> <NA>\n" for a, b, s in FALCON_TURNS
    )
    layout_meetings(audio, rttm + falcon, out)
    print(f"wrote {len(audio)} recordings with their turns to {out}", flush=True)


def layout_meetings(audio: dict[str, bytes], rttm: str, out: str) -> None:
    """Each recording as NAME.wav, and its lines of `rttm` (turns of many files) as NAME.rttm."""
    os.makedirs(out, exist_ok=True)
    lines: dict[str, list[str]] = {}
    for line in rttm.splitlines():
        parts = line.split()
        if len(parts) > 7 and parts[0] == "SPEAKER":
            lines.setdefault(parts[1], []).append(line + "\n")
    for name, data in audio.items():
        if name not in lines:
            raise ValueError(f"no reference turns for {name}")
        with open(os.path.join(out, f"{name}.wav"), "wb") as f:
            f.write(data)
        with open(os.path.join(out, f"{name}.rttm"), "w") as f:
            f.writelines(lines[name])
