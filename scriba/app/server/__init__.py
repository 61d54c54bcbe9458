"""The OpenAI-compatible server (`scriba serve`): app.py builds it."""
