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
def page(app_url):
    from playwright.sync_api import sync_playwright

    flags = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--no-first-run"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)
        page = browser.new_page()
        page.goto(app_url, wait_until="networkidle", timeout=60_000)
        yield page
        browser.close()


def test_transcribe_an_upload(page):
    page.locator("input[type=file]").first.set_input_files(JFK)
    page.wait_for_timeout(1500)  # the audio component loads the file
    page.click("#transcribe-button")
    transcript = page.locator("#transcript textarea")
    page.wait_for_function(
        "el => el.value.toLowerCase().includes('fellow americans')", arg=transcript.element_handle(), timeout=120_000
    )
    text = transcript.input_value().lower()
    assert "your country" in text and "do for you" in text


def test_summarize_pasted_text(page):
    page.get_by_role("tab", name="Summarize").click()
    page.fill("#summary-input textarea", "The cat sat on the mat. It was a sunny day and the cat was happy.")
    page.click("#summarize-button")
    summary = page.locator("#summary textarea")
    page.wait_for_function("el => el.value.trim().length > 0", arg=summary.element_handle(), timeout=120_000)
    assert summary.input_value().strip()
