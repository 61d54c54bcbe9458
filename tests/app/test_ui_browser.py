"""The web app in a real browser: Debian's Chromium driven by Playwright, on localhost."""

import os
import socket

import pytest

JFK = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "assets", "jfk.flac"))
CHROMIUM = "/usr/bin/chromium"  # .ci/run installs it (apt-get install chromium)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(tiny_bart):
    from scriba.app.ui import build_ui

    port = free_port()
    demo = build_ui(summarizer=tiny_bart[0])
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="module")
def microphone_wav(tmp_path_factory):
    """jfk.flac as 48 kHz 16-bit mono WAV: what Chromium's fake microphone plays (in a loop)."""
    import soundfile as sf
    import soxr

    samples, rate = sf.read(JFK)
    path = tmp_path_factory.mktemp("mic") / "jfk48k.wav"
    sf.write(path, soxr.resample(samples.mean(axis=1), rate, 48_000), 48_000, subtype="PCM_16")
    return str(path)


@pytest.fixture(scope="module")
def browser(microphone_wav):
    from playwright.sync_api import sync_playwright

    flags = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={microphone_wav}",
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, app_url):
    """A fresh page per test, with the microphone allowed."""
    context = browser.new_context(permissions=["microphone"])
    page = context.new_page()
    page.goto(app_url, wait_until="networkidle", timeout=60_000)
    yield page
    context.close()


def test_transcribe_an_upload(page):
    page.locator("input[type=file]").first.set_input_files(JFK)
    page.wait_for_timeout(1500)  # the audio component loads the file
    page.click("#transcribe-button")
    transcript = page.locator("#transcript textarea")
    page.wait_for_function(
        "el => el.value.toLowerCase().includes('fellow americans')",
        arg=transcript.element_handle(),
        timeout=120_000,
    )
    text = transcript.input_value().lower()
    assert "your country" in text and "do for you" in text
    assert page.locator("a[href$='.srt']").count() and page.locator("a[href$='.vtt']").count()
    # The transcript goes on to the summarizer (the tiny random BART: any non-empty text).
    page.click("#summarize-transcript-button")
    summary = page.locator("#transcript-summary textarea")
    page.wait_for_function("el => el.value.trim().length > 0", arg=summary.element_handle(), timeout=120_000)


def test_transcribe_a_recording(page):
    """Record from the (fake) microphone while it plays jfk.flac, stop, transcribe."""
    page.get_by_label("Record audio").click()
    page.locator("button.record-button").click()
    page.wait_for_timeout(11_500)  # the clip is 11 s
    page.locator("button.stop-button").first.click()
    page.wait_for_timeout(1500)
    transcript = page.locator("#transcript textarea")
    page.click("#transcribe-button")
    page.wait_for_function(
        "el => el.value.toLowerCase().includes('your country')",
        arg=transcript.element_handle(),
        timeout=120_000,
    )


def test_summarize_pasted_text(page):
    page.get_by_role("tab", name="Summarize").click()
    page.fill("#summary-input textarea", "The cat sat on the mat. It was a sunny day and the cat was happy.")
    page.click("#summarize-button")
    summary = page.locator("#summary textarea")
    page.wait_for_function("el => el.value.trim().length > 0", arg=summary.element_handle(), timeout=120_000)
    assert summary.input_value().strip()
