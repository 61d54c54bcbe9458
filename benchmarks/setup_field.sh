#!/usr/bin/env bash
# The peers of bench_cpu_field.py, once, outside CI: a venv with OpenVINO GenAI and optimum-intel
# (its exporter), and Scriba's offline Whisper weights exported for it as int8-weight models.
#   bash benchmarks/setup_field.sh [PEERS_VENV=/tmp/peers] [MODELS_DIR=/tmp/ov]
# Run from Scriba's venv (with the multilingual extra for base).
set -euo pipefail
peers=${1:-/tmp/peers}
models=${2:-/tmp/ov}
here=$(cd "$(dirname "$0")" && pwd)
python3 -m venv "$peers"
"$peers/bin/pip" install --quiet torch==2.13.0
"$peers/bin/pip" install --quiet "optimum-intel[openvino]" openvino-genai nncf soundfile soxr
# CUDA builds of torchvision beside CPU torch break `import transformers` in that venv
"$peers/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true
for model in tiny.en base; do
  python "$here/export_hf_whisper.py" "$model" "$models/hf-$model"
  "$peers/bin/optimum-cli" export openvino --model "$models/hf-$model" \
    --task automatic-speech-recognition-with-past --weight-format int8 "$models/$model"
done
echo "python benchmarks/bench_cpu_field.py --peers-python $peers/bin/python --openvino-models $models"
