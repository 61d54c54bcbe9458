import time, csv, scriba
from wer import wer
from scriba.app.vad import speech_chunks, VadOptions
from scriba.engine.audio import load_audio
from scriba.app.longform import SpeechMap, pack_windows
f = "../../shared/data/dev_longform/ljspeech_LJ001-0041_to_LJ001-0110_concat.flac"
ref = list(csv.DictReader(open("../../shared/data/dev_longform/MANIFEST.tsv"), delimiter="\t"))[0]["reference_text"]
f2 = "../../shared/data/dev_speech/longform/librivox_shakespeare_sonnets_1-3.flac"
ref2 = [r for r in csv.DictReader(open("../../shared/data/dev_speech/MANIFEST.tsv"), delimiter="\t") if r["file"].startswith("longform")][0]["reference_text"]
wave = load_audio(f)
for ms in [500, 300, 160]:
    o = VadOptions(min_silence_duration_ms=ms)
    m = SpeechMap(speech_chunks(wave, o))
    w = pack_windows(m.bounds(), breaks=set(m.region_ends()))
    lens = [(e-s)/16000 for s,e in w]
    scriba.transcribe(f, vad_parameters=o)
    t = time.perf_counter(); text = scriba.transcribe(f, vad_parameters=o).text; dt = time.perf_counter()-t
    t2 = scriba.transcribe(f2, vad_parameters=o).text
    print(ms, "chunks", len(m.chunks), "windows", len(w), "mean", round(sum(lens)/len(lens),1), f"{469.4/dt:.1f}x WER {wer([ref],[text]):.4f} sonnets {wer([ref2],[t2]):.4f}", flush=True)
