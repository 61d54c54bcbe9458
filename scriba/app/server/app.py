"""`scriba serve`: an OpenAI-compatible server (FastAPI + uvicorn) over the shared engines.

Binds 127.0.0.1 unless told otherwise; with an API key every /v1 and /api route wants
`Authorization: Bearer KEY`; only the served models (and --allow-models) can be asked for, each
loaded on demand and unloaded when idle (models.py; /api/ps in models_api.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.responses import Response

from scriba.app.server import audio_api, errors, models_api, realtime, summaries_api
from scriba.app.server.metrics import Metrics
from scriba.app.server.models import ServedModels


@dataclass
class ServerSettings:
    api_key: str | None = None
    max_upload_bytes: int = 200 * 2**20
    max_audio_seconds: float = 2 * 60 * 60
    max_pending: int | None = 512  # requests queued or running per engine; past it: 429


def create_app(served: ServedModels, settings: ServerSettings | None = None, preload: bool = True) -> FastAPI:
    app = FastAPI(title="Scriba", docs_url=None, redoc_url=None)
    app.state.served, app.state.settings = served, settings or ServerSettings()
    served.max_pending = app.state.settings.max_pending
    metrics = Metrics()
    errors.install(app)
    app.state.metrics = metrics
    app.include_router(audio_api.router)
    app.include_router(summaries_api.router)
    app.include_router(realtime.router)
    app.include_router(models_api.router)

    @app.get("/health")
    def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    def models():
        return {"object": "list", "data": served.listing()}

    @app.get("/metrics")
    def prometheus():
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    if preload and not served.preload:  # without --preload, the default Whisper loads as it starts
        threading.Thread(target=served.loop, args=(served.whisper[0],), daemon=True).start()
    served.start()
    return app


def asgi_app(served: ServedModels, settings: ServerSettings | None = None, preload: bool = True):
    """The app with its API-key check and metrics around it (plain ASGI middleware)."""
    app = create_app(served, settings, preload)
    return app.state.metrics.middleware(_require_key(app, app.state.settings.api_key))


def _require_key(app, api_key: str | None):
    async def check(scope, receive, send):
        if api_key and scope["type"] in ("http", "websocket") and scope["path"].startswith(("/v1/", "/api/")):
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {api_key}":
                if scope["type"] == "websocket":  # the handshake is refused (HTTP 403)
                    await receive()
                    return await send({"type": "websocket.close", "code": 1008})
                error = errors.APIError(401, "missing or wrong API key (Authorization: Bearer KEY)")
                return await error.response()(scope, receive, send)
        return await app(scope, receive, send)

    return check


def serve(served: ServedModels, settings: ServerSettings, host: str = "127.0.0.1", port: int = 8000, ui=None):
    import uvicorn

    app = create_app(served, settings)
    if ui is not None:
        import gradio as gr

        app = gr.mount_gradio_app(app, ui, path="/ui")
    wrapped = app.state.metrics.middleware(_require_key(app, app.state.settings.api_key))
    uvicorn.run(wrapped, host=host, port=port, log_level="info")
