"""Errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}}, with the status
codes OpenAI's clients expect (400 bad input, 401 no key, 404 no model, 413 too large, 415 not
audio, 429/503 busy, with Retry-After)."""

from __future__ import annotations

import logging

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

log = logging.getLogger("scriba.server")

TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
    503: "server_error",
    500: "server_error",
}


# A media error's status, by its category (scriba.media.errors).
MEDIA_STATUS = {
    "empty": 400,
    "truncated or corrupt": 400,
    "impossible header": 400,
    "too long": 413,
    "not audio": 415,
    "unsupported codec": 415,
}


def media_error(error) -> APIError:
    """An AudioError as the API's answer: its one line, its category's status, param "file"."""
    return APIError(MEDIA_STATUS.get(error.category, 400), str(error), "file", "invalid_file")


class APIError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        retry_after: int | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.retry_after = retry_after

    def response(self) -> JSONResponse:
        body = {
            "error": {
                "message": self.message,
                "type": TYPES.get(self.status, "invalid_request_error"),
                "param": self.param,
                "code": self.code,
            }
        }
        headers = {"Retry-After": str(self.retry_after)} if self.retry_after else None
        return JSONResponse(body, status_code=self.status, headers=headers)


def engine_unavailable(error: Exception) -> APIError:
    """An engine that cannot take a request now: full (429) or closed (503), with Retry-After."""
    from scriba.runtime.loops import EngineBusy

    if isinstance(error, EngineBusy):
        return APIError(429, f"busy: {error}", code="rate_limit_exceeded", retry_after=2)
    return APIError(503, f"unavailable: {error}; try again", code="engine_unavailable", retry_after=1)


async def api_error(request: Request, error: APIError) -> JSONResponse:
    log.info("%s %s -> %d: %s", request.method, request.url.path, error.status, error.message)
    return error.response()


async def http_error(request: Request, error: HTTPException) -> JSONResponse:
    return await api_error(request, APIError(error.status_code, str(error.detail)))


async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    first = error.errors()[0] if error.errors() else {}
    param = str(first.get("loc", ["", ""])[-1]) or None
    message = f"{param}: {first.get('msg', 'invalid')}" if param else "invalid request"
    return await api_error(request, APIError(400, message, param=param))


async def unexpected_error(request: Request, error: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path)
    return APIError(500, f"internal error: {type(error).__name__}").response()


def install(app) -> None:
    app.add_exception_handler(APIError, api_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, unexpected_error)
