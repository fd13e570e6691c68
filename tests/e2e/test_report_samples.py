"""The report's samples on the shared smoke study (issue 33.1): a file per methodology and
model, and the sample browser in Chromium: a headline number's link, filters, search, a row
opened, images shown, offline (``file:`` only)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from genfair.methodologies import get_methodology
from genfair.study.layout import Layout
from tests.support.browser import sync_api, wait_until, watched_page

pytestmark = [pytest.mark.e2e, pytest.mark.builds("smoke")]
#: thumbnails in the sample table drawn from their files, none broken (they load lazily: those
#: below the window may not have loaded yet)
THUMBS_LOADED = (
    "[...document.querySelectorAll('#sb-table img.thumb')].some(i => i.naturalWidth > 0)"
    " && ![...document.querySelectorAll('#sb-table img.thumb')].some("
    "i => i.complete && i.naturalWidth === 0)"
)


def _models_by_methodology(work: Path) -> set[tuple[str, str]]:
    """(methodology, model) of every label table the study wrote."""
    runs = yaml.safe_load((work / "params.yaml").read_text())["runs"].values()
    pairs = {(run["methodology"], run["model"]) for run in runs}
    return {(m, model) for m, model in pairs if Layout(work).labels(model, m).exists()}


def test_a_sample_file_per_methodology_and_model(study: tuple[Path, dict[str, str], str]) -> None:
    work, _, _ = study
    report = work / "data/report"
    html = (report / "index.html").read_text(encoding="utf-8")
    index = json.loads(html.split('id="samples-index">')[1].split("</script>")[0])
    listed = {(e["methodology"], e["model"]) for e in index}
    assert listed == _models_by_methodology(work)
    for entry in index:
        labels = pd.read_parquet(Layout(work).labels(entry["model"], entry["methodology"]))
        assert entry["rows"] == len(labels), entry
        script = (report / entry["src"]).read_text(encoding="utf-8")
        assert script.startswith("genfairSamples(") and script.endswith(");\n")
        data = json.loads(script[len("genfairSamples(") : -3])
        assert data["n"] == len(labels) and set(entry["groups"]) <= set(data["columns"])
        # the methodology's own groups (its SampleView), those its labels have
        named = get_methodology(entry["methodology"]).presentation.sample_view.groups
        assert entry["groups"] and set(entry["groups"]) <= set(named), entry
    # the page holds no row: its index is a few lines per methodology and model
    assert len(html.split('id="samples-index">')[1].split("</script>")[0]) < 400 * len(index)
    params = yaml.safe_load((work / "params.yaml").read_text())
    assert {m for m, _ in listed} == set(params["methodologies"])


@pytest.mark.browser
def test_sample_browser_filters_searches_opens_and_shows_images(
    study: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    sync_api()
    work, _, _ = study
    labels = pd.read_parquet(Layout(work).labels("smollm2", "fact_or_fair"))
    responses = pd.read_parquet(Layout(work).responses("smollm2", "fact_or_fair"))
    probes = pd.read_parquet(work / "data/probes/fact_or_fair.parquet").set_index("probe_id")
    behind = labels[(labels["context"] == "objective") & (labels["attribute"] == "gender")]
    ok = behind[behind["status"] == "ok"]
    with watched_page() as (page, seen):
        page.goto((work / "data/report/index.html").as_uri(), wait_until="load")
        assert not any("/samples/" in u for u in seen.requests)  # nothing loaded until asked
        # one click from a headline number to the rows behind it
        row = page.locator("#headline-table tr", has_text="objective.gender.distance")
        column = page.locator("#headline-table th").all_inner_texts().index("smollm2")
        row.locator("td").nth(column).locator("a.samples-link").click()
        page.wait_for_selector("#sb-table tbody tr")
        assert "#samples/fact_or_fair/smollm2?" in page.url
        info = page.locator("#sb-info").inner_text()
        assert f"of {len(behind)} matching ({len(labels)} in all)" in info, info
        shown = page.locator("#sb-table tbody tr")
        assert 0 < shown.count() <= 50  # a page at a time
        header = page.locator("#sb-table thead th").all_inner_texts()
        contexts = shown.evaluate_all(
            f"rows => rows.map(r => r.cells[{header.index('context')}].textContent)"
        )
        assert set(contexts) == {"objective"}
        # filter by status
        page.select_option("#sb-status", "ok")
        assert f"of {len(ok)} matching" in page.locator("#sb-info").inner_text()
        # free-text search, case-insensitive, over the probe id (among others)
        page.select_option("#sb-status", "")
        probe = str(ok["probe_id"].iloc[0])
        page.fill("#sb-search", probe.upper())
        assert page.locator("#sb-info").inner_text().startswith("Rows 1–1 of 1 matching")
        # open the row: its raw answer and its prompt (collapsed)
        shown.first.click()
        detail = page.locator("#sb-detail")
        raw = responses.set_index("probe_id").loc[probe, "text"]
        assert detail.locator("pre.raw").text_content() == raw
        assert detail.locator("details").get_attribute("open") is None
        detail.locator("summary").click()
        assert detail.locator("details pre").is_visible()
        assert detail.locator("details pre").text_content() == probes.loc[probe, "prompt"]
        # a section's link: the T2I model's images, thumbnails and the opened row's image
        page.locator("#m-fact_or_fair a.samples-link", has_text="simulated_t2i").click()
        page.wait_for_selector("#sb-table img.thumb")
        assert page.locator("#sb-search").input_value() == ""
        wait_until(page, f"() => {THUMBS_LOADED}")
        page.locator("#sb-table tbody tr").first.click()
        wait_until(page, "() => document.querySelector('#sb-detail img.large')?.naturalWidth > 0")
        # a vision probe's photo (IRIS understanding, on the simulated VLM)
        page.select_option("#sb-methodology", "iris")
        page.select_option("#sb-model", "simulated_vlm")
        page.select_option("#sb-groups select[data-group=sector]", "IFS-Und")
        wait_until(page, f"() => {THUMBS_LOADED}")
        page.screenshot(path=str(tmp_path / "samples.png"))
    assert not seen.dialogs and not seen.errors, (seen.dialogs, seen.errors)
    assert all(u.startswith("file://") for u in seen.requests), seen.requests
    loaded = {re.sub(r".*/report/", "", u) for u in seen.requests if "/samples/" in u}
    # each file loaded when the reader chose it (IRIS kept the T2I model, then the VLM), no other
    assert loaded == {
        "samples/fact_or_fair/smollm2.js",
        "samples/fact_or_fair/simulated_t2i.js",
        "samples/iris/simulated_t2i.js",
        "samples/iris/simulated_vlm.js",
    }
