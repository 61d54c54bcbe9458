"""POST /v1/summaries: JSON in ({"input": text or [texts], "model", "max_length", "min_length"}),
summary out ({"object": "summary", "model", "summary"}), in the style of the audio API."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from scriba.app.server.errors import APIError, engine_unavailable
from scriba.runtime.loops import EngineBusy, EngineClosed
from scriba.summarization.summarize import summarize

router = APIRouter()


class SummaryRequest(BaseModel):
    input: str | list[str]
    model: str | None = None
    max_length: int | None = None
    min_length: int | None = None


@router.post("/v1/summaries")
async def summaries(request: Request, body: SummaryRequest):
    served = request.app.state.served
    model = served.resolve(body.model, "summarizer")
    served.loop(model)  # counts as a use: the least recently used engine goes first
    try:
        summary = await run_in_threadpool(
            summarize, body.input, model, body.max_length, body.min_length, **served.engine_config
        )
    except (EngineBusy, EngineClosed) as e:
        raise engine_unavailable(e) from None
    except (ValueError, TypeError, OSError) as e:
        raise APIError(400, str(e).splitlines()[0], "input") from None
    return {"object": "summary", "model": served.name(model), "summary": summary}
