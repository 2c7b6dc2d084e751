"""Screenshot the memory inspector after a LoCoMo search (docs/inspector.png) and its graph tab.

Loads the first LoCoMo conversation (conv-26) — or, without the data, the bundled sample
conversation — into an in-memory store with the packaged MiniLM, serves the inspector on a free
port, and drives Debian's headless chromium (Selenium) through a search and the Graph tab.

Usage:
    python benchmarks/screenshot_inspector.py [--data ../shared/data/locomo/locomo10.json]
        [--question "..."] [--out docs/inspector.png] [--graph-out docs/inspector-graph.png]

Without ``--question`` it takes the conversation's first non-adversarial question whose gold
turn the operator loop grounds in its top 3, and prints it.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from langmem_cog import CogMemConfig  # noqa: E402
from langmem_cog.bench.locomo import default_locomo_path  # noqa: E402
from langmem_cog.memory import CogMemory  # noqa: E402
from langmem_cog.ui import InspectorAPI, locomo_conversations, make_server, sample_conversation, serve_in_thread  # noqa: E402
from langmem_cog.ui.browser import headless_chromium  # noqa: E402

WAIT_S = 300


def pick_question(api: InspectorAPI, ns: str, qa: list[dict[str, Any]]) -> dict[str, Any]:
    for q in qa:
        if q.get("category") == 5 or not q.get("evidence"):
            continue
        status, body = api.handle("/api/search", {"ns": ns, "q": q["question"], "k": "3"})
        if status == 200 and set(map(str, q["evidence"])) & {e["turn_id"] for e in body["evidence"]}:
            return q
    raise SystemExit(f"no question of {ns} has its gold turn grounded in the top 3: pass --question")


def full_page(driver: Any, path: Path, max_height: int) -> None:
    """The page from its top, up to ``max_height`` CSS pixels (DevTools: beyond the window too)."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1}
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    print(f"wrote {path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="LoCoMo JSON (default: ../shared/data/locomo/locomo10.json; the sample if absent)")
    ap.add_argument("--conversation", help="sample_id in --data (default: the file's first)")
    ap.add_argument("--question", help="the question to search (default: picked, see the module docstring)")
    ap.add_argument("--out", default="docs/inspector.png")
    ap.add_argument("--graph-out", default="docs/inspector-graph.png", help="'' to skip the graph tab")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--max-height", type=int, default=1800, help="crop the page at this height (CSS pixels)")
    args = ap.parse_args()

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    data = Path(args.data) if args.data else default_locomo_path()
    api = InspectorAPI(CogMemory(CogMemConfig.preset("ephemeral")))
    if data is not None:
        conv = locomo_conversations(str(data), [args.conversation] if args.conversation else None)[0]
    else:
        print("no LoCoMo data: using the bundled sample conversation", file=sys.stderr)
        conv = sample_conversation()
    print(f"loading {conv.sample_id} ({len(conv.turns)} turns) ...", file=sys.stderr)
    api.add_conversation(conv)
    ns = conv.turns[0].namespace
    question = args.question or pick_question(api, ns, conv.qa)["question"]
    print(f"question: {question}")
    # The first search of a namespace embeds its graph's nodes once; do it here, so the trace on the
    # screenshot shows the steady-state step times.
    api.handle("/api/search", {"ns": ns, "q": question})

    server = make_server(api, port=0)
    serve_in_thread(server)
    with tempfile.TemporaryDirectory(prefix="langmem-chromium-") as profile:
        driver = headless_chromium(args.width, 1000, user_data_dir=profile)
        try:
            driver.get(server.url)
            WebDriverWait(driver, WAIT_S).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
            Select(driver.find_element(By.ID, "ns")).select_by_value(ns)
            driver.find_element(By.ID, "q").send_keys(question)
            driver.find_element(By.ID, "search-btn").click()
            WebDriverWait(driver, WAIT_S).until(lambda d: d.find_element(By.ID, "search-results").is_displayed())
            shown = [li.get_attribute("data-turn-id") for li in driver.find_elements(By.CSS_SELECTOR, "#evidence li")]
            print(f"evidence shown: {shown}")
            full_page(driver, Path(args.out), args.max_height)
            if args.graph_out:
                driver.find_element(By.ID, "tab-graph").click()
                WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#claims tbody tr"))
                full_page(driver, Path(args.graph_out), args.max_height)
        finally:
            driver.quit()
            server.shutdown()
            server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
