"""The Hugging Face Space's entry point: the Scriba web app, on all interfaces of the Space."""

import os

from scriba.app.ui import launch

if __name__ == "__main__":
    launch(
        host=os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0"),
        port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        whisper_model=[m.strip() for m in os.environ.get("SCRIBA_WHISPER_MODEL", "").split(",") if m.strip()]
        or None,
        summarizer=os.environ.get("SCRIBA_SUMMARIZER", "facebook/bart-large-cnn"),
        summarizer_setting="set the Space's variable `SCRIBA_SUMMARIZER` to a model id or a folder",
    )
