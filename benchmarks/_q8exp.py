import time, csv, sys, torch
import scriba
from wer import wer, load_manifest
from scriba.models import quantize
from scriba.app.engines import close_loops
D = "../../shared/data/"
short, shortref = load_manifest(D + "dev_speech", "short")
lf = [D + "dev_longform/ljspeech_LJ001-0041_to_LJ001-0110_concat.flac", D + "dev_speech/longform/librivox_shakespeare_sonnets_1-3.flac"]
lref = [list(csv.DictReader(open(D + "dev_longform/MANIFEST.tsv"), delimiter="\t"))[0]["reference_text"],
        [r for r in csv.DictReader(open(D + "dev_speech/MANIFEST.tsv"), delimiter="\t") if r["file"].startswith("longform")][0]["reference_text"]]
variant = sys.argv[1]
model = sys.argv[2] if len(sys.argv) > 2 else None
opts = {} if variant == "float32" else {"quantization": "int8"}
if variant == "act8w7":
    R = quantize.RowScaledLinear
    R.SCALE, R.ZERO_POINT = 1.0 / 127, 128
    orig = quantize._set_int8_weight
    import torch
    old_init = R.__init__
    def init(self, linear):
        w, b = linear._weight_bias()
        wf = w.dequantize()
        scale = wf.abs().amax(1).clamp_min(1e-30) / 63
        q = torch.quantize_per_channel(wf, scale.double(), torch.zeros(wf.shape[0], dtype=torch.long), 0, torch.qint8)
        linear.set_weight_bias(q, b)
        old_init(self, linear)
    R.__init__ = init
if variant == "enc_only":
    orig_q = quantize.quantize_int8
    def qenc(model):
        import torch.nn as nn
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
        enc = model.model.encoder
        quantize_dynamic(enc, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True)
        from torch.ao.nn.quantized.dynamic import Linear as DL
        for n, m in list(enc.named_modules()):
            if isinstance(m, DL):
                quantize._replace(enc, n, quantize.RowScaledLinear(m))
        return model
    import scriba.engine.engine as E
    E.quantize_int8 = qenc
t = time.perf_counter()
st = [r.text for r in scriba.transcribe(short, model=model, **opts)]
t1 = time.perf_counter()
lt = [r.text for r in scriba.transcribe(lf, model=model, **opts)]
t2 = time.perf_counter()
print(f"{variant:10} short WER {wer(shortref, st):.4f} long WER {wer(lref, lt):.4f} all {wer(shortref+lref, st+lt):.4f}  ({t1-t:.1f}s, {t2-t1:.1f}s incl load)", flush=True)
