"""Models on demand, with speaches' routes and meaning: GET /api/ps lists the loaded models,
POST /api/ps/{model} loads one (201; 409 when it is loaded already), DELETE /api/ps/{model}
unloads one once its requests are done (204; 404 when it is not loaded or not served)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

router = APIRouter()


@router.get("/api/ps")
def loaded(request: Request):
    return {"models": request.app.state.served.loaded()}


@router.post("/api/ps/{model:path}")
async def load(request: Request, model: str):
    loaded_now = await run_in_threadpool(request.app.state.served.load, model)
    if not loaded_now:
        return JSONResponse({"message": f"model {model!r} is loaded already"}, status_code=409)
    return JSONResponse({"message": f"model {model!r} loaded"}, status_code=201)


@router.delete("/api/ps/{model:path}")
async def unload(request: Request, model: str):
    await run_in_threadpool(request.app.state.served.unload, model)
    return Response(status_code=204)
