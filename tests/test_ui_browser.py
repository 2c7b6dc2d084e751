"""The memory inspector end to end in headless Chromium (Debian's chromium + chromedriver, Selenium).

The server runs in a thread over a real in-memory store with the packaged MiniLM embedder, with its
access token on (the page is opened at ``server.url``, the address with ``?token=``).
The bundled sample conversation is always loaded; the first LoCoMo conversation (conv-26) too,
for its own test, when ``../shared/data/locomo/locomo10.json`` is present. Skipped, with the reason, when chromium,
chromedriver or selenium is missing (``.ci/run`` installs them; ``pip install -e ".[ui-test]"``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from langmem_cog import CogMemConfig, make_turn
from langmem_cog.bench.locomo import default_locomo_path
from langmem_cog.loaders import LoCoMoConversation
from langmem_cog.memory import CogMemory
from langmem_cog.ui import InspectorAPI, locomo_conversations, make_server, sample_conversation, serve_in_thread
from langmem_cog.ui.browser import chromium_paths, headless_chromium

pytest.importorskip("selenium", reason='selenium is not installed: pip install -e ".[ui-test]"')
pytestmark = pytest.mark.skipif(
    chromium_paths() is None,
    reason="chromium and chromedriver are not installed: apt-get install chromium chromium-driver (.ci/run does)",
)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

WAIT_S = 180  # generous: CI machines are shared; nothing here is a timing assertion
PREFIX = f"ui-{uuid.uuid4().hex[:8]}-"
MARKUP = '<img src=x onerror="window.__pwned=1"> typed into the signup form'


class Inspector:
    """The server, its API and what was loaded."""

    def __init__(self) -> None:
        self.api = InspectorAPI(CogMemory(CogMemConfig.preset("ephemeral")))  # the packaged MiniLM
        self.sample = sample_conversation(namespace_prefix=PREFIX)
        self.api.add_conversation(self.sample)
        self.markup_ns = f"{PREFIX}markup"
        self.api.memory.add_turns([make_turn(id="m1", namespace=self.markup_ns, speaker="Eve", text=MARKUP,
                                             timestamp="2024-01-01T10:00:00+00:00", position=0)])
        self.server = make_server(self.api, port=0)
        serve_in_thread(self.server)


@pytest.fixture(scope="module")
def inspector() -> Iterator[Inspector]:
    app = Inspector()
    try:
        yield app
    finally:
        app.server.shutdown()
        app.server.server_close()


@pytest.fixture(scope="module")
def locomo(inspector: Inspector) -> LoCoMoConversation:
    """The first LoCoMo conversation (conv-26), loaded into the running inspector (only for its test)."""
    path = default_locomo_path()
    if path is None:
        pytest.skip("LoCoMo data not found at ../shared/data/locomo/locomo10.json")
    conv = locomo_conversations(str(path), namespace_prefix=PREFIX)[0]
    inspector.api.add_conversation(conv)
    return conv


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = headless_chromium(1400, 1000, user_data_dir=str(tmp_path_factory.mktemp("chromium-profile")))
    try:
        yield driver
    finally:
        driver.quit()


def open_page(browser: Any, inspector: Inspector, ns: str) -> None:
    browser.get(inspector.server.url)
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    Select(browser.find_element(By.ID, "ns")).select_by_value(ns)


def search(browser: Any, question: str) -> list[str]:
    """Type the question, click Search, wait for the results; the evidence turn ids shown."""
    box = browser.find_element(By.ID, "q")
    box.clear()
    box.send_keys(question)
    browser.find_element(By.ID, "search-btn").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda d: d.find_element(By.ID, "search-results").is_displayed()
        and d.find_element(By.ID, "q").get_attribute("value") == question
        and not d.find_element(By.ID, "search-btn").get_attribute("disabled")
    )
    assert "error" not in (browser.find_element(By.ID, "status").get_attribute("class") or "")
    return [li.get_attribute("data-turn-id") for li in browser.find_elements(By.CSS_SELECTOR, "#evidence li[data-turn-id]")]


def assert_grounded(browser: Any, conv: LoCoMoConversation, question: str, gold: list[str]) -> None:
    shown = search(browser, question)
    hit = [t for t in shown if t in gold]
    assert hit, f"none of the gold turns {gold} is in the evidence list {shown}"
    item = browser.find_element(By.CSS_SELECTOR, f'#evidence li[data-turn-id="{hit[0]}"]')
    turn = next(t for t in conv.turns if t.id == hit[0])
    assert turn.text in item.text and "gold" in item.get_attribute("class")
    operators = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#trace tbody tr td:nth-child(2)")]
    assert operators[0] == "anchor" and "ground" in operators
    assert browser.find_elements(By.CSS_SELECTOR, "#raw li[data-turn-id]")


def test_search_shows_the_grounded_turn_of_a_sample_question(browser: Any, inspector: Inspector) -> None:
    conv = inspector.sample
    qa = next(q for q in conv.qa if q["question"] == "What is Leo allergic to?")
    open_page(browser, inspector, conv.turns[0].namespace)
    assert_grounded(browser, conv, qa["question"], qa["evidence"])


def test_search_shows_the_grounded_turn_of_a_locomo_question(browser: Any, inspector: Inspector,
                                                             locomo: LoCoMoConversation) -> None:
    conv = locomo
    ns = conv.turns[0].namespace
    # The first single-hop question whose gold turn the operator loop grounds in its top 10 (API side);
    # the browser must then show that turn.
    for qa in conv.qa:
        if qa.get("category") == 5 or not qa.get("evidence"):
            continue
        status, body = inspector.api.handle("/api/search", {"ns": ns, "q": qa["question"]})
        assert status == 200, body
        if set(qa["evidence"]) & {e["turn_id"] for e in body["evidence"]}:
            break
    else:
        pytest.fail(f"the operator loop grounds no gold turn for any question of {conv.sample_id}")
    open_page(browser, inspector, ns)
    assert_grounded(browser, conv, qa["question"], [str(e) for e in qa["evidence"]])


def test_graph_and_timeline_tabs(browser: Any, inspector: Inspector) -> None:
    ns = inspector.sample.turns[0].namespace
    open_page(browser, inspector, ns)
    graph = inspector.api.handle("/api/graph", {"ns": ns})[1]
    browser.find_element(By.ID, "tab-graph").click()
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#claims tbody tr"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#claims tbody tr")
    assert len(rows) == len(graph["claims"])
    for row, claim in zip(rows, graph["claims"], strict=True):
        cells = row.find_elements(By.TAG_NAME, "td")
        assert (cells[1].text, cells[2].text) == (claim["speaker"], claim["status"])
    assert len(browser.find_elements(By.CSS_SELECTOR, "#facts > li")) == len(graph["facts"])

    browser.find_element(By.ID, "tab-timeline").click()
    person = graph["persons"][0]
    WebDriverWait(browser, WAIT_S).until(
        lambda d: d.find_element(By.ID, "timeline-info").text and d.find_elements(By.CSS_SELECTOR, "#timeline > li"))
    timeline = inspector.api.handle("/api/timeline", {"ns": ns, "person": person["id"]})[1]
    shown = [li.get_attribute("data-id") for li in browser.find_elements(By.CSS_SELECTOR, "#timeline > li")]
    assert shown == [e["id"] for e in timeline["events"]]


def test_markup_in_a_turn_is_shown_as_text(browser: Any, inspector: Inspector) -> None:
    open_page(browser, inspector, inspector.markup_ns)
    search(browser, "signup form")
    assert MARKUP in browser.find_element(By.ID, "raw").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#search-results img")
    assert browser.execute_script("return window.__pwned") is None


def test_the_page_needs_the_token(browser: Any, inspector: Inspector) -> None:
    """Issue #21 defect 7: without the token (or with a wrong one) the page shows the 401 and no data;
    with it (the printed address) it lists the namespaces, and the token travels as a header only."""
    assert inspector.server.token and "?token=" in inspector.server.url
    for address in (inspector.server.base_url, f"{inspector.server.base_url}?token=not-the-right-token-0123"):
        browser.get(address)
        WebDriverWait(browser, WAIT_S).until(
            lambda d: "error" in (d.find_element(By.ID, "status").get_attribute("class") or ""))
        status = browser.find_element(By.ID, "status").text
        assert "401" in status and "access token" in status, status
        assert not browser.find_elements(By.CSS_SELECTOR, "#ns option")
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") is None
        assert inspector.sample.turns[0].text not in browser.find_element(By.TAG_NAME, "body").text

    ns = inspector.sample.turns[0].namespace
    open_page(browser, inspector, ns)  # the address with the token
    options = [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, "#ns option")]
    assert ns in options and inspector.markup_ns in options
    assert "error" not in (browser.find_element(By.ID, "status").get_attribute("class") or "")
    api_calls = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/api/'))")
    assert api_calls and not [u for u in api_calls if "token" in u]


def test_a_bad_request_is_reported_on_the_page(browser: Any, inspector: Inspector) -> None:
    open_page(browser, inspector, inspector.markup_ns)
    browser.find_element(By.ID, "now").send_keys("someday")
    browser.find_element(By.ID, "q").send_keys("anything")
    browser.find_element(By.ID, "search-btn").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda d: "error" in (d.find_element(By.ID, "status").get_attribute("class") or ""))
    assert "ISO date" in browser.find_element(By.ID, "status").text

