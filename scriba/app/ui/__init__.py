"""The Gradio web app (`scriba ui`, and app.py for a Hugging Face Space): page.py builds it."""

from scriba.app.ui.page import build_ui, launch
from scriba.app.ui.summarize_tab import run_summary
from scriba.app.ui.text import clock, paragraphs
from scriba.app.ui.transcribe_tab import run_transcription

__all__ = ["build_ui", "launch", "run_summary", "run_transcription", "clock", "paragraphs"]
