"""The web app in a real browser: Debian's Chromium driven by Playwright, on localhost.

Screenshots go to $SCRIBA_SCREENSHOTS (default: the test's temporary folder)."""

import os
import socket
import time
import urllib.parse

import numpy as np
import paths
import pytest

JFK = paths.JFK
CHROMIUM = "/usr/bin/chromium"  # .ci/run installs it (apt-get install chromium)
MISSING_SUMMARIZER = "scriba-tests/no-such-model-9f3b"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(summarizer: str):
    from scriba.app.ui import build_ui

    port = free_port()
    demo = build_ui(summarizer=summarizer)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    return demo, f"http://127.0.0.1:{port}/"


@pytest.fixture(scope="module")
def app_url(tiny_bart):
    demo, url = serve(tiny_bart[0])
    yield url
    demo.close()


@pytest.fixture(scope="module")
def offline_app_url():
    demo, url = serve(MISSING_SUMMARIZER)
    yield url
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
def five_minutes(tmp_path_factory):
    """Five and a half minutes: jfk.flac 24 times with 3 s pauses."""
    import soundfile as sf

    from scriba.media.load import load_audio

    path = tmp_path_factory.mktemp("long") / "five_minutes.flac"
    jfk, pause = load_audio(JFK), np.zeros(3 * 16000, np.float32)
    sf.write(path, np.concatenate([jfk, pause] * 24), 16000)
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
def shoot(tmp_path):
    folder = os.environ.get("SCRIBA_SCREENSHOTS") or str(tmp_path)
    os.makedirs(folder, exist_ok=True)
    return lambda page, name: page.screenshot(path=os.path.join(folder, f"{name}.png"), full_page=True)


def open_page(browser, url):
    """A fresh page with the microphone allowed, once the page says the model is ready."""
    context = browser.new_context(permissions=["microphone"], viewport={"width": 1280, "height": 1200})
    page = context.new_page()
    page.goto(url, wait_until="load", timeout=60_000)
    page.wait_for_selector("#model-status:has-text('ready')", timeout=120_000)
    return page


@pytest.fixture
def page(browser, app_url):
    page = open_page(browser, app_url)
    yield page
    page.context.close()


def wait_for_text(page, selector: str, words: str, timeout=120_000):
    page.wait_for_function(
        "([el, w]) => el.value.toLowerCase().includes(w)",
        arg=[page.locator(selector).element_handle(), words],
        timeout=timeout,
    )


def test_transcribe_an_upload(page, shoot, tiny_bart):
    import json
    import urllib.request

    import scriba

    page.locator("input[type=file]").first.set_input_files(JFK)
    page.wait_for_timeout(1500)  # the audio component loads the file
    page.click("#transcribe-button")
    wait_for_text(page, "#transcript textarea", "fellow americans")
    # The transcript grows as segments arrive; the downloads come with the whole result.
    page.wait_for_selector("#downloads a[href$='.json']", timeout=120_000)
    text = page.locator("#transcript textarea").input_value().lower()
    assert "your country" in text and "do for you" in text
    assert page.locator("#language-line textarea, #language-line input").input_value() == (
        "English (English-only model)"
    )
    for ext in ("txt", "srt", "vtt", "json"):
        assert page.locator(f"#downloads a[href$='.{ext}']").count(), ext
    shoot(page, "jfk_transcribed")
    # The transcript goes on to the summarizer: the page shows summarize() of its JSON download.
    link = page.locator("#downloads a[href$='.json']").first.get_attribute("href")
    with urllib.request.urlopen(urllib.parse.urljoin(page.url, link)) as response:
        transcript = json.load(response)
    assert "fellow Americans" in " ".join(s["text"] for s in transcript["segments"])
    page.click("#summarize-transcript-button")
    summary = page.locator("#transcript-summary textarea")
    page.wait_for_function("el => el.value.trim().length > 0", arg=summary.element_handle(), timeout=120_000)
    assert summary.input_value() == str(scriba.summarize(transcript, model=tiny_bart[0]))


def test_long_file_progress_moves_and_a_segment_click_plays_from_there(page, five_minutes, shoot):
    page.locator("input[type=file]").first.set_input_files(five_minutes)
    page.wait_for_timeout(2000)
    page.click("#transcribe-button")
    seen, shot, partial = [], False, []
    deadline = time.time() + 180
    while not page.locator("#downloads a").count() and time.time() < deadline:  # files: the end
        seen += page.locator(".progress-level-inner, .progress-text").all_inner_texts()
        partial.append(page.locator("#transcript textarea").input_value())
        if not shot and partial[-1] and any("transcribing window" in t for t in seen):
            shoot(page, "long_file_progress")  # the transcript so far, and the bar
            shot = True
        page.wait_for_timeout(400)
    final = page.locator("#transcript textarea").input_value()
    assert final.count("fellow Americans") >= 20
    # The transcript grew while the file decoded: some of it shown before the end, in order.
    growing = [text for text in partial if text and text != final]
    assert growing and all(final.startswith(text.split("\n\n")[0]) for text in growing)
    moving = [t for t in seen if "transcribing window" in t and " - 0.0%" not in t and "100.0%" not in t]
    assert moving, seen  # the bar advanced before the end
    shoot(page, "long_file_done")
    cell = page.locator("#segments [role=gridcell].first-column").nth(8)  # the ninth segment's start
    minutes, seconds = cell.inner_text().split(":")
    start = 60 * float(minutes) + float(seconds)
    assert start > 30
    cell.click()
    page.wait_for_function(
        "t => { const m = document.querySelector('#audio #time').textContent.split(':');"
        " return Math.abs(60 * m[0] + 1 * m[1] - t) <= 2; }",
        arg=start,
        timeout=10_000,
    )
    page.wait_for_selector("#audio button[aria-label='Pause']", timeout=10_000)  # playing
    shoot(page, "segment_clicked")
    summarized_in_sections_that_seek(page, shoot)


def summarized_in_sections_that_seek(page, shoot):
    """Summarize this transcript: sections with time ranges (the tiny BART takes 256 tokens: a
    five-minute transcript makes many); a click on one plays from its start; the JSON download
    carries the summary and its sections."""
    import json
    import urllib.request

    page.click("#summarize-transcript-button")
    page.wait_for_selector("#summary-sections [role=gridcell]", timeout=120_000)
    starts = page.locator("#summary-sections [role=gridcell].first-column").all_inner_texts()
    assert len(starts) > 3 and starts[0] == "00:00:00"
    shown = page.locator("#transcript-summary textarea").input_value()
    assert shown.strip()
    shoot(page, "transcript_summarized")
    h, m, sec = (int(x) for x in starts[2].split(":"))
    page.locator("#summary-sections [role=gridcell].first-column").nth(2).click()
    page.wait_for_function(
        "t => { const m = document.querySelector('#audio #time').textContent.split(':');"
        " return Math.abs(60 * m[0] + 1 * m[1] - t) <= 2; }",
        arg=3600 * h + 60 * m + sec,
        timeout=10_000,
    )
    link = page.locator("#downloads a[href$='.json']").first.get_attribute("href")
    with urllib.request.urlopen(urllib.parse.urljoin(page.url, link)) as response:
        summary = json.load(response)["summary"]
    assert [s["time_range"][:8] for s in summary["sections"]] == starts and summary["summary"] == shown


def test_english_only_model_offers_no_translate(page, shoot):
    assert page.locator("#task").is_hidden()  # one task: nothing to choose
    assert "English-only" in page.locator("#model-status").inner_text()
    assert (
        page.get_by_text("Speed").first.is_visible() and "int8" not in page.locator("#precision").inner_text()
    )
    language = page.locator("#language input")
    assert language.input_value() == "English" and language.is_disabled()
    shoot(page, "english_only")


def test_an_empty_upload_is_refused_at_once(page, tmp_path, shoot):
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    started = time.time()
    page.locator("input[type=file]").first.set_input_files(str(empty))
    page.wait_for_selector("#upload-notice:has-text('empty.wav is an empty file.')", timeout=10_000)
    assert time.time() - started < 10
    assert "/tmp" not in page.locator("#upload-notice").inner_text()
    shoot(page, "empty_upload")


def test_summarize_is_off_when_no_summarizer_can_be_had(browser, offline_app_url, shoot):
    page = open_page(browser, offline_app_url)
    page.get_by_role("tab", name="Summarize").click()
    notice = page.locator("#summarizer-notice")
    page.wait_for_selector("#summarizer-notice:has-text('is not available')", timeout=30_000)
    assert MISSING_SUMMARIZER in notice.inner_text() and "--summarizer FOLDER" in notice.inner_text()
    assert page.locator("#summarize-button").is_disabled()
    shoot(page, "summarizer_unavailable")
    page.get_by_role("tab", name="Transcribe").click()
    why = page.locator("#transcript-summary-notice").inner_text()  # the greyed button says why
    assert "Summaries are off" in why and MISSING_SUMMARIZER in why
    assert page.locator("#summarize-transcript-button").is_disabled()
    page.context.close()


def test_live_tab_shows_words_while_speaking_and_the_final_text_after(page, shoot):
    import scriba

    page.get_by_role("tab", name="Live").click()
    page.locator("#live-mic button.record-button").click()
    started = time.time()
    page.wait_for_function(
        "() => document.querySelector('#live-text').innerText.trim().length > 0", timeout=30_000
    )
    early = time.time() - started
    shoot(page, "live_partial")
    page.wait_for_timeout(max(0, 12_000 - 1000 * (time.time() - started)))
    page.locator("#live-mic button.stop-button").first.click()
    final = page.locator("#live-final textarea")
    page.wait_for_function("el => el.value.length > 0", arg=final.element_handle(), timeout=120_000)
    shoot(page, "live_final")
    assert early < 11, "no words before the 11 s clip ended"
    href = page.locator("#live-recording a").first.get_attribute("href")
    recording = urllib.parse.unquote(href.split("file=", 1)[1])
    assert final.input_value() == scriba.transcribe(recording).text
    # Chromium's fake microphone clips and gain-controls the clip, and drops audio when the host
    # is starved: the words vary a little.
    heard = final.input_value().lower()
    assert sum(w in heard for w in ("fellow", "country", "ask")) >= 2, heard


def test_transcribe_a_recording(page):
    """Record from the (fake) microphone while it plays jfk.flac, stop, transcribe."""
    page.get_by_label("Record audio").click()
    page.locator("#audio button.record-button").click()
    page.wait_for_timeout(11_500)  # the clip is 11 s
    page.locator("#audio button.stop-button").first.click()
    page.wait_for_timeout(1500)
    page.click("#transcribe-button")
    wait_for_text(page, "#transcript textarea", "your country")


def test_summarize_pasted_text(page):
    page.get_by_role("tab", name="Summarize").click()
    page.wait_for_selector("#summarizer-notice:has-text('on this machine')", timeout=30_000)
    page.fill("#summary-input textarea", "The cat sat on the mat. It was a sunny day and the cat was happy.")
    page.click("#summarize-button")
    summary = page.locator("#summary textarea")
    page.wait_for_function("el => el.value.trim().length > 0", arg=summary.element_handle(), timeout=120_000)
    assert summary.input_value().strip()


def test_closing_the_page_stops_its_transcription(browser, app_url, five_minutes):
    from scriba.runtime.loops import get_loop

    manager = get_loop(None).engine.block_manager  # the page's default engine
    page = open_page(browser, app_url)
    page.locator("input[type=file]").first.set_input_files(five_minutes)
    page.wait_for_timeout(2000)
    page.click("#transcribe-button")
    deadline = time.time() + 30
    while manager.num_free() == manager.num_total() and time.time() < deadline:
        time.sleep(0.05)
    assert manager.num_free() < manager.num_total()  # decoding for the page
    page.context.close()
    closed = time.time()
    while manager.num_free() < manager.num_total() and time.time() < closed + 8:
        time.sleep(0.1)
    # the whole file takes ~12 s of decoding; its blocks are back well before
    assert manager.num_free() == manager.num_total(), time.time() - closed


def test_the_multilingual_base_detects_and_translates(page, tmp_path, shoot):
    """With the multilingual extra the page offers `base`: its languages with auto-detect, and
    translate; the first 25 s of the Spanish reading come out in English."""
    import soundfile as sf
    from multilingual import clip

    from scriba.media.load import load_audio

    spanish = tmp_path / "spanish.wav"
    sf.write(spanish, load_audio(clip("es_")["path"])[: 25 * 16000], 16000)
    page.click("#model-choice input")
    page.click("ul[role=listbox] li:has-text('base')")
    page.wait_for_selector("#model-status:has-text('Whisper base')", timeout=120_000)
    page.wait_for_selector("#model-status:has-text('ready')", timeout=120_000)
    assert page.locator("#task").is_visible() and "translate" in page.locator("#task").inner_text()
    assert page.locator("#language input").input_value() == "Auto-detect"
    page.click("#language input")
    options = page.locator("ul[role=listbox] li").all_inner_texts()
    assert {"German", "Spanish", "Japanese", "Chinese"} <= {o.strip() for o in options}
    page.keyboard.press("Escape")
    page.locator("#task label:has-text('translate')").click()
    page.locator("input[type=file]").first.set_input_files(str(spanish))
    page.wait_for_timeout(1500)
    page.click("#transcribe-button")
    wait_for_text(page, "#transcript textarea", "manuel")
    page.wait_for_selector("#downloads a[href$='.json']", timeout=120_000)  # the whole result
    text = page.locator("#transcript textarea").input_value().lower()
    assert " the " in f" {text} " and " de la " not in f" {text} ", text
    line = page.locator("#language-line textarea, #language-line input").input_value()
    assert line.startswith("detected: Spanish (0.9"), line
    shoot(page, "base_translated")


CUT_TEXT = "el => [...el.querySelectorAll('span')].some(s => s.scrollWidth > s.clientWidth + 1)"


def test_a_phone_s_width_keeps_every_label_whole(page, shoot):
    """At 420 px the choices wrap instead of squeezing: each checkbox keeps room for its label
    (the label's text is not cut), the Timestamps label shows, one field is named Language."""
    page.set_viewport_size({"width": 420, "height": 900})
    page.click("#advanced button, #advanced .label-wrap")
    page.wait_for_selector("#adv-multilingual", state="visible")
    checkboxes = ["#adv-multilingual", "#adv-suppress_blank", "#adv-condition_on_previous_text", "#diarize"]
    for selector in checkboxes:
        label = page.locator(f"{selector} label").first
        cut = label.evaluate(CUT_TEXT)
        assert label.bounding_box()["width"] >= 150 and not cut, selector
    assert page.get_by_text("Timestamps", exact=True).first.is_visible()
    assert page.locator("label:text-is('Language'), span:text-is('Language')").count() == 1
    shoot(page, "phone_width")
