"""POST /v1/audio/transcriptions and /v1/audio/translations, as OpenAI's audio API takes them
(multipart: file, model, language, prompt, response_format, temperature,
timestamp_granularities[], stream, known_speaker_names[], known_speaker_references[]), and
Scriba's extension fields (extensions.py: faster-whisper's options; speakers_api.py: diarize and
the speaker counts). A client that hangs up aborts its windows at once."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import StreamingResponse

from scriba.app.server.errors import APIError, engine_unavailable, media_error
from scriba.app.server.extensions import extension_options, subtitle_fields
from scriba.app.server.speakers_api import REFERENCES, segment_event, speaker_options
from scriba.app.server.responses import (
    FORMATS,
    delta_event,
    done_event,
    error_event,
    render,
    sse,
)
from scriba.app.server.uploads import remove, save_upload, upload_name
from scriba.media.load import SAMPLE_RATE, AudioError, load_audio
from scriba.runtime.loops import EngineBusy, EngineClosed
from scriba.transcription.options import TEMPERATURES, TranscribeOptions
from scriba.transcription.stream import transcribe_stream
from scriba.transcription.transcribe import transcribe
from scriba.transcription.window_decoder import Cancelled

router = APIRouter()
# transcribe() calls mostly wait on the engine loop: enough threads that every client's request
# joins the running batch (asyncio's default pool, cpu + 4 threads, would cap the batch at 6).
WORKERS = ThreadPoolExecutor(max_workers=256, thread_name_prefix="scriba-request")


def _options(
    request: Request, task, model, language, prompt, fmt, temperature, granularities, extensions=None
) -> TranscribeOptions:
    """The form's fields as TranscribeOptions (OpenAI's names and ranges checked here), with the
    extension fields' options (extensions.py)."""
    served = request.app.state.served
    if fmt not in FORMATS:
        raise APIError(
            400, f"response_format must be one of {', '.join(FORMATS)}, got {fmt!r}", "response_format"
        )
    if not 0 <= temperature <= 1:
        raise APIError(400, f"temperature must be between 0 and 1, got {temperature}", "temperature")
    bad = set(granularities) - {"word", "segment"}
    if bad:
        raise APIError(
            400,
            f"timestamp_granularities[] takes word and segment, got {sorted(bad)}",
            "timestamp_granularities[]",
        )
    whisper = served.resolve(model, "whisper", task)
    served.loop(whisper)  # counts as a use: the least recently used engine goes first
    try:
        return TranscribeOptions(
            model=whisper,
            language=language or None,
            task=task,
            initial_prompt=prompt or None,
            temperature=(temperature,) if temperature > 0 else TEMPERATURES,
            engine=served.engine_config,
            **({"word_timestamps": "word" in granularities} | (extensions or {})),
        )
    except ValueError as e:  # e.g. a language no Whisper knows
        raise APIError(400, str(e).splitlines()[0], _field_named(str(e), extensions)) from None


def _field_named(message: str, extensions: dict | None) -> str | None:
    """The request field a TranscribeOptions error is about, when it names one."""
    for name in ("language", *(extensions or {})):
        if message.startswith(name) or f" {name}" in message:
            return name
    return None


def _decoded(path: str, name: str) -> tuple:
    """The upload's samples; a bad file's error names it as the client did, not the temp copy."""
    return load_audio(path, name=name), SAMPLE_RATE


async def _run(request: Request, path: str, name: str, options: TranscribeOptions):
    """transcribe() in a worker thread; a client that goes away cancels it."""
    cancel = threading.Event()
    job = asyncio.get_running_loop().run_in_executor(
        WORKERS, lambda: transcribe(_decoded(path, name), options, cancel=cancel)
    )
    try:
        while not job.done():
            if await request.is_disconnected():
                cancel.set()
                break
            await asyncio.wait([job], timeout=0.25)
    except asyncio.CancelledError:  # the request itself was cancelled (Ray Serve's proxy does so)
        cancel.set()
        job.add_done_callback(lambda done: done.exception())  # its Cancelled is expected: not logged
        raise
    try:
        return await job
    except Cancelled:
        raise APIError(400, "the client went away") from None
    except (EngineBusy, EngineClosed) as e:
        raise engine_unavailable(e) from None
    except AudioError as e:
        raise media_error(e) from None
    except (ValueError, TypeError) as e:
        message = str(e).splitlines()[0]
        about = REFERENCES if message.startswith("known speaker") else None
        param = about or ("language" if "language" in message else None)
        raise APIError(400, message, param) from None
    finally:
        # A failed job holds its error, whose traceback holds this frame (and, from the worker,
        # transcribe()'s, with the audio): a cycle only a full garbage collection would free.
        del job


def _in_worker(fn, *args):
    """`fn(*args)` in a request worker (not asyncio's small default pool: every stream waits on
    the engine in one)."""
    return asyncio.get_running_loop().run_in_executor(WORKERS, fn, *args)


def _stream(path: str, name: str, options: TranscribeOptions, cleanup) -> StreamingResponse:
    """Server-sent events: a transcript.text.delta per segment as the generator yields it (in
    order, window by window), then .done; a failure ends the stream with an error event. The
    generator runs in worker threads, a step at a time; a client that goes away closes it,
    which cancels its windows."""

    async def body():
        segments, texts = None, []
        try:
            audio = await _in_worker(_decoded, path, name)
            segments, _ = await _in_worker(lambda: transcribe_stream(audio, options, mode="sequential"))
            while (segment := await _in_worker(next, segments, None)) is not None:
                texts.append(segment.text)
                yield delta_event(segment.text.lstrip() if len(texts) == 1 else segment.text)
            if options.diarize:  # the speakers are known once the whole file is decoded
                result = segments.transcription
                order = [p.name for p in result.speakers or []]
                for i, labelled in enumerate(result.segments):
                    yield sse(segment_event(i, labelled, order))
            yield done_event("".join(texts).strip())
        except Exception as e:  # noqa: BLE001 - the stream ends with the error as its last event
            yield error_event(e)
        finally:
            if segments is not None:
                await _in_worker(segments.close)
            cleanup()

    return StreamingResponse(body(), media_type="text/event-stream")


async def _answer(request: Request, task: str, file: UploadFile, form: dict):
    settings = request.app.state.settings
    granularities = form.pop("granularities") or []
    fmt, stream = form["fmt"], form.pop("stream")
    parsed = await request.form()  # parsed once by Starlette: cached
    extensions = extension_options(parsed) | speaker_options(parsed, fmt)
    subtitles = subtitle_fields(parsed, fmt)
    if not subtitles.is_plain:  # subtitle lines are cut from the words
        extensions["word_timestamps"] = True
    options = _options(request, task, granularities=granularities, extensions=extensions, **form)
    path, _ = await save_upload(file, settings.max_upload_bytes, settings.max_audio_seconds)
    name = upload_name(file)
    if stream:
        return _stream(path, name, options, lambda: remove(path))
    try:
        result = await _run(request, path, name, options)
    finally:
        remove(path)
    return render(result, fmt, task, set(granularities), subtitles)


def _form(
    model: str | None = Form(None),
    language: str | None = Form(None),
    prompt: str | None = Form(None),
    response_format: str = Form("json"),
    temperature: float = Form(0.0),
    timestamp_granularities: list[str] | None = Form(None, alias="timestamp_granularities[]"),
    stream: bool = Form(False),
) -> dict:
    return dict(
        model=model,
        language=language,
        prompt=prompt,
        fmt=response_format,
        temperature=temperature,
        granularities=timestamp_granularities,
        stream=stream,
    )


@router.post("/v1/audio/transcriptions")
async def transcriptions(request: Request, file: UploadFile = File(...), form: dict = Depends(_form)):
    return await _answer(request, "transcribe", file, form)


@router.post("/v1/audio/translations")
async def translations(request: Request, file: UploadFile = File(...), form: dict = Depends(_form)):
    return await _answer(request, "translate", file, form)
