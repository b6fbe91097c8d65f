"""The run page driven as a person would: views, groups, sorting, the band, every filter, paging by URL."""

import re
from urllib.parse import quote

from playwright.sync_api import expect

from tests.browser.tab import table_ids


def group_keys(tab):
    return tab.locator("tr.group-row").evaluate_all("rows => rows.map(r => r.dataset.key)")


def test_groups_is_the_default_view_and_the_toggle_switches(page, corpus_server):
    tab = page.open("#/run/groups")
    listing = corpus_server.get("/v1/groups?run_id=groups")
    expect(tab.locator("tr.group-row")).to_have_count(listing["total"])
    expect(tab.locator(".view-toggle [data-view=groups]")).to_have_attribute("aria-selected", "true")
    page.shot("groups")
    tab.click(".view-toggle [data-view=rollouts]")
    rows = corpus_server.get("/v1/trajectories?run_id=groups")
    expect(tab.locator("table.rollouts tr.rollout-row")).to_have_count(rows["total"])
    assert "/rollouts" in page.hash()
    page.shot("rollouts")
    tab.go_back()
    expect(tab.locator("tr.group-row")).to_have_count(listing["total"])
    tab.go_forward()
    expect(tab.locator("table.rollouts")).to_be_visible()


def test_a_run_that_cannot_be_grouped_opens_as_rollouts(page, corpus_server):
    tab = page.open("#/run/spec")
    expect(tab.locator("table.rollouts tr.rollout-row")).to_have_count(
        corpus_server.get("/v1/trajectories?run_id=spec")["total"])
    expect(tab.locator(".view-toggle [data-view=groups]")).to_have_count(0)  # rollouts, and a step's timeline
    expect(tab.locator(".view-toggle button")).to_have_count(2)


def test_groups_expand_in_place_with_superseded_attempts_under_the_one_that_counts(page, corpus_server):
    tab = page.open("#/run/groups")
    groups = corpus_server.get("/v1/groups?run_id=groups")["data"]
    retried = next(g for g in groups if g["superseded_count"])
    short = next(g for g in groups if g["n"] < g["modal_n"])
    short_row = tab.locator(f'tr.group-row[data-key="{short["key"]}"]')
    expect(short_row).to_contain_text(f'{short["n"]} of {short["modal_n"]}')
    tab.click(f'tr.group-row[data-key="{retried["key"]}"]')
    tab.click(f'tr.group-row[data-key="{short["key"]}"]')
    detail = corpus_server.get(f"/v1/groups/{quote(retried['key'])}?run_id=groups")
    body = tab.locator(f'tbody.group[data-key="{retried["key"]}"]')
    expect(body.locator("tr.sub.rollout-row:not(.superseded)")).to_have_count(len(detail["rollouts"]))
    expect(body.locator("tr.superseded")).to_have_count(retried["superseded_count"])
    for old in detail["superseded"]:  # each greyed attempt sits below the attempt that replaced it
        counting = body.locator(f'tr[data-traj="{old["superseded_by"]}"]')
        below = body.locator(f'tr[data-traj="{old["superseded_by"]}"] ~ tr[data-traj="{old["id"]}"]')
        expect(counting).to_have_count(1)
        expect(below).to_have_count(1)
    short_body = tab.locator(f'tbody.group[data-key="{short["key"]}"]')
    expect(short_body.locator("tr.sub.rollout-row")).to_have_count(short["n"])
    assert "open=" in page.hash()
    page.shot("groups-expanded")
    tab.reload()  # the URL holds the open groups
    expect(body.locator("tr.superseded")).to_have_count(retried["superseded_count"])
    tab.click(f'tr.group-row[data-key="{retried["key"]}"]')
    expect(body.locator("tr.sub")).to_have_count(0)


def test_sorting_asks_the_server_and_keeps_open_groups(page, corpus_server):
    tab = page.open("#/run/groups")
    first = group_keys(tab)[0]
    tab.click(f'tr.group-row[data-key="{first}"]')
    for order, aria in [("desc", "descending"), ("asc", "ascending")]:  # a second click reverses
        tab.click("th button[data-sort=tokens]")
        expect(tab.locator("th:has(button[data-sort=tokens])")).to_have_attribute("aria-sort", aria)
        listed = corpus_server.get(f"/v1/groups?run_id=groups&sort=tokens&order={order}")["data"]
        assert group_keys(tab) == [g["key"] for g in listed]
    expect(tab.locator(f'tbody.group[data-key="{first}"] tr.sub.rollout-row').first).to_be_visible()
    assert "sort=tokens" in page.hash() and "order=asc" in page.hash()

    tab.click(".view-toggle [data-view=rollouts]")
    tab.click("th button[data-sort=reward]")
    expected = [r["id"] for r in corpus_server.get("/v1/trajectories?run_id=groups&sort=reward")["data"]]
    expect(tab.locator("tr.rollout-row").first).to_have_attribute("data-traj", expected[0])
    assert table_ids(tab) == expected


def test_the_band_filters_and_a_second_click_clears(page, corpus_server):
    tab = page.open("#/run/real-like")
    listing = corpus_server.get("/v1/trajectories?run_id=real-like")
    counts = dict(listing["health"]["counts"])
    flag = "failed-calls"
    chip = tab.locator(f".band .chip[data-flag={flag}]")
    expect(chip).to_contain_text(f"{counts[flag]} {flag}")
    assert chip.get_attribute("title")  # the meaning, on hover
    chip.click()
    expect(tab.locator("tr.rollout-row")).to_have_count(counts[flag])
    expect(chip).to_have_attribute("aria-pressed", "true")
    assert "flag=failed-calls" in page.hash()
    for row in tab.locator("tr.rollout-row").all():
        expect(row.locator(f'.badge[data-flag="{flag}"]')).to_have_count(1)
    page.shot("band-flag")
    tab.locator(f".band .chip[data-flag={flag}]").click()
    expect(tab.locator("tr.rollout-row")).to_have_count(listing["total"])
    assert "flag=" not in page.hash()


def test_every_filter(page, corpus_server):
    tab = page.open("#/run/groups/rollouts")
    run = next(r for r in corpus_server.get("/v1/runs")["data"] if r["id"] == "groups")

    def expect_rows(query):
        expected = corpus_server.get(f"/v1/trajectories?run_id=groups&{query}")
        expect(tab.locator("tr.rollout-row")).to_have_count(expected["total"])
        assert sorted(table_ids(tab)) == sorted(r["id"] for r in expected["data"])

    step = str(run["steps"][0])
    tab.select_option("select[data-filter=step]", step)
    expect_rows(f"step={step}")
    assert f"step={step}" in page.hash()
    tab.go_back()  # Back undoes the filter, Forward brings it again
    expect_rows("")
    expect(tab.locator("select[data-filter=step]")).to_have_value("")
    tab.go_forward()
    expect_rows(f"step={step}")
    tab.select_option("select[data-filter=step]", "")

    task = run["tasks"][1]["id"]
    tab.fill("#picker", task)
    tab.click(f'.picker-option[data-pick="task={task}"]')
    expect_rows(f"task_id={task}")
    tab.click(".filters [data-filter=task]")  # its chip removes it
    expect_rows("")

    tab.fill("#picker", "reward")
    tab.click('.picker-option[data-pick="ann=reward=1"]')
    expect_rows("annotation=reward%3D1")
    assert "ann=reward%3D1" in page.hash()
    tab.click("text=clear all")
    expect_rows("")

    tab.fill("#search", "tr_3c5")
    tab.press("#search", "Enter")
    expect_rows("q=tr_3c5")
    assert "q=tr_3c5" in page.hash()
    tab.fill("#search", "")
    tab.press("#search", "Enter")

    real = page.open("#/run/real-like")
    real.select_option("select[data-filter=status]", "failed")
    expected = corpus_server.get("/v1/trajectories?run_id=real-like&status=failed")
    expect(real.locator("tr.rollout-row")).to_have_count(expected["total"])
    for row in real.locator("tr.rollout-row .status").all():
        expect(row).to_have_text("failed")
    page.shot("filtered")


def test_filters_emphasise_matching_rollouts_in_an_open_group(page, corpus_server):
    tab = page.open("#/run/groups?ann=reward%3D1")
    key = group_keys(tab)[0]
    tab.click(f'tr.group-row[data-key="{key}"]')
    detail = corpus_server.get(f"/v1/groups/{quote(key)}?run_id=groups&annotation=reward%3D1")
    members = detail["rollouts"] + detail["superseded"]
    body = tab.locator(f'tbody.group[data-key="{key}"]')
    expect(body.locator("tr.matched")).to_have_count(sum(1 for r in members if r["match"]))
    expect(body.locator("tr.unmatched")).to_have_count(sum(1 for r in members if r["match"] is False))
    expect(tab.locator(".section-title")).to_contain_text("matching rollouts emphasised")


def test_a_pasted_url_restores_the_whole_view(page, corpus_server):
    expected = corpus_server.get("/v1/trajectories?run_id=groups&sort=tokens&order=asc&step=2&flag=forked")
    tab = page.open("#/run/groups/rollouts?step=2&flag=forked&sort=tokens&order=asc")
    expect(tab.locator("tr.rollout-row")).to_have_count(expected["total"])
    assert table_ids(tab) == [r["id"] for r in expected["data"]]
    expect(tab.locator("select[data-filter=step]")).to_have_value("2")
    expect(tab.locator(".band .chip[data-flag=forked]")).to_have_attribute("aria-pressed", "true")
    expect(tab.locator("th:has(button[data-sort=tokens])")).to_have_attribute("aria-sort", "ascending")


def test_sidebar_lists_runs_by_project_filters_and_switches_theme(page, corpus_server):
    tab = page.open()
    runs = corpus_server.get("/v1/runs")["data"]
    expect(tab.locator("#runs a.run")).to_have_count(len(runs))
    spec = next(r for r in runs if r["id"] == "spec")
    expect(tab.locator('#runs a.run[data-run="spec"] .count')).to_have_text(str(spec["trajectory_count"]))
    tab.fill("#run-filter", "mirror")
    expect(tab.locator("#runs a.run")).to_have_count(sum(1 for r in runs if "mirror" in r["id"]))
    tab.fill("#run-filter", "")
    tab.click('#runs a.run[data-run="spec"]')
    expect(tab.locator(".run-head h1")).to_contain_text("spec")
    before = tab.evaluate("getComputedStyle(document.body).backgroundColor")
    tab.click("#theme-toggle")
    after = tab.evaluate("getComputedStyle(document.body).backgroundColor")
    assert before != after
    page.shot("theme-toggled")
    tab.reload()  # the choice is remembered
    tab.wait_for_selector("#runs a.run")
    assert tab.evaluate("getComputedStyle(document.body).backgroundColor") == after


def test_unreadable_records_are_listed_with_their_error(page, corpus_server):
    tab = page.open("#/run/broken?flag=malformed-record")
    rows = corpus_server.get("/v1/trajectories?run_id=broken&flag=malformed-record")
    unreadable = [r for r in rows["data"] if r.get("unreadable")]
    expect(tab.locator("tr.rollout-row")).to_have_count(rows["total"])
    expect(tab.locator("tr.rollout-row.unreadable")).to_have_count(len(unreadable))
    cell = tab.locator(f'tr[data-traj="{unreadable[0]["id"]}"] td.id')
    assert unreadable[0]["error"] in cell.get_attribute("title")
    cell.click()
    expect(tab.locator("#drawer .notice.error")).to_contain_text(f'cannot be read: {unreadable[0]["error"]}')
    facts = tab.locator("#drawer .facts .fact:not([data-fact=reward]) dd")  # nothing it could only read: unknown
    expect(facts.first).to_be_visible()
    assert set(facts.all_text_contents()) == {"-"}
    expect(tab.locator("#drawer button[data-pick]")).to_have_count(0)  # nothing to compare it by
    tab.keyboard.press("a")
    expect(tab.locator(".pick-bar")).to_have_count(0)


def test_paging_through_a_big_run(page_over, tmp_path):
    from skycap_viewer.demo.writer import RecordBuilder

    run = tmp_path / "big"
    run.mkdir()
    for number in range(130):
        builder = RecordBuilder(f"tr_page{number:04d}", "text", meta={"task": f"t{number % 7}"},
                                annotations={"reward": number % 3}, created_at=1_790_000_000.0 + number)
        builder.add_model(builder.add_client(None, "user", f"question {number}"), f"answer {number}")
        builder.write(run)
    page = page_over(run)
    server = page.server
    tab = page.open("#/run/big")
    first = server.get("/v1/trajectories?run_id=big")
    expect(tab.locator("tr.rollout-row")).to_have_count(len(first["data"]))
    expect(tab.locator(".pager")).to_contain_text(f"1–{len(first['data'])} of {first['total']}")
    tab.click("text=next ›")
    second = server.get(f"/v1/trajectories?run_id=big&cursor={first['next_cursor']}")
    expect(tab.locator("tr.rollout-row")).to_have_count(len(second["data"]))
    assert table_ids(tab) == [r["id"] for r in second["data"]]
    assert "page=2" in page.hash()
    tab.reload()
    expect(tab.locator("tr.rollout-row")).to_have_count(len(second["data"]))
    tab.click("text=‹ prev")
    expect(tab.locator("tr.rollout-row")).to_have_count(len(first["data"]))
    assert table_ids(tab) == [r["id"] for r in first["data"]]


def test_the_theme_follows_the_system(page_on, corpus_server):
    dark = page_on(corpus_server, color_scheme="dark")
    tab = dark.open("#/run/groups")
    assert tab.evaluate("document.documentElement.dataset.theme") == "dark"
    dark.shot("groups-dark")
    light = page_on(corpus_server, color_scheme="light")
    tab = light.open("#/run/groups")
    assert tab.evaluate("document.documentElement.dataset.theme") == "light"


def test_a_narrow_window_hides_the_sidebar_and_offers_a_run_picker(page_on, corpus_server):
    narrow = page_on(corpus_server, viewport={"width": 760, "height": 900})
    tab = narrow.open("#/run/groups")
    expect(tab.locator("#sidebar")).to_be_hidden()
    tab.select_option("select.run-switch", "spec")
    expect(tab.locator(".run-head h1")).to_contain_text("spec")
    expect(tab.locator("table.rollouts tr.rollout-row")).to_have_count(
        corpus_server.get("/v1/trajectories?run_id=spec")["total"])
    narrow.shot("narrow")


def test_rollouts_with_no_group_key_are_counted_and_listed_not_hidden(page_over, corpus, tmp_path):
    from tests.support.records import copy_record

    run = tmp_path / "mixed"
    run.mkdir()
    grouped = sorted(p.name[:-len(".json.zst")] for p in (corpus / "groups").glob("*.json.zst"))
    for record in grouped:
        copy_record(corpus / "groups", record, run)
    keyless = ["tr_media", "tr_tokens", "tr_utf8"]
    for record in keyless:
        copy_record(corpus / "spec", record, run)
    page = page_over(run)
    server = page.server
    listing = server.get("/v1/groups?run_id=mixed")
    assert listing["ungrouped"] == len(keyless)
    tab = page.open("#/run/mixed/groups")
    expect(tab.locator(".band-title")).to_have_text("record health · groups · across the run")  # short
    expect(tab.locator(".band-title")).to_have_attribute("title", re.compile("counts groups, each once per flag"))
    notice = tab.locator(".ungrouped-notice")
    expect(notice).to_contain_text(f"{len(keyless)} rollouts have no group key (step, instance_id): list them")
    notice.locator("a[data-link=ungrouped]").click()
    expect(tab.locator(".view-toggle [data-view=rollouts]")).to_have_attribute("aria-selected", "true")
    expect(tab.locator("tr.rollout-row")).to_have_count(len(keyless))
    assert sorted(table_ids(tab)) == keyless
    assert "ungrouped=1" in page.hash()
    expect(tab.locator(".band-title")).to_have_text("record health · rollouts · no group key")
    chip = tab.locator(".filters [data-filter=ungrouped]")
    expect(chip).to_contain_text("no group key")
    tab.reload()  # a pasted link keeps the filter
    expect(tab.locator("tr.rollout-row")).to_have_count(len(keyless))
    tab.locator(".filters [data-filter=ungrouped]").click()
    expect(tab.locator("tr.rollout-row")).to_have_count(len(grouped) + len(keyless))
    assert "ungrouped" not in page.hash()
    expect(tab.locator(".filters [data-filter=ungrouped]")).to_have_count(0)


def test_a_pasted_page_past_the_end_says_so_and_links_to_the_last(page, corpus_server):
    total = corpus_server.get("/v1/trajectories?run_id=spec")["total"]
    tab = page.open("#/run/spec/rollouts?page=99")
    notice = tab.locator(".table-box .notice.past-last")
    expect(notice).to_contain_text("page 99 is past the last page (1)")
    expect(tab.locator("#main")).not_to_contain_text("No trajectories match")
    notice.locator("a[data-link=last-page]").click()
    expect(tab.locator("tr.rollout-row")).to_have_count(total)
    assert "page=" not in page.hash()


def test_table_ids_keep_their_end_and_the_whole_id_in_the_title(page, corpus_server):
    tab = page.open("#/run/broken/rollouts")
    for record in ("tr_truncated_doc", "tr_truncated_sidecar", "tr_two_frames_appended", "tr_two_frames_split"):
        cell = tab.locator(f'tr.rollout-row[data-traj="{record}"] td.id')
        expect(cell).to_have_attribute("title", re.compile(rf"^{record}\b"))
        shown = cell.inner_text()
        assert shown == record or ("…" in shown and record.endswith(shown.split("…")[1])), shown
    shown = {tab.locator(f'tr.rollout-row[data-traj="{r}"] td.id').inner_text()
             for r in ("tr_truncated_doc", "tr_truncated_sidecar", "tr_two_frames_appended", "tr_two_frames_split")}
    assert len(shown) == 4, shown


def test_the_run_header_says_how_many_sidecars_are_verified_until_all_are(page_on, corpus, corpus_server, tmp_path):
    import shutil

    from tests.support.server_process import ServerProcess

    shutil.copytree(corpus / "broken", tmp_path / "broken")
    with ServerProcess([tmp_path], "--no-verify") as server:  # nothing verifies in the background: N < M stays
        server.wait_indexed()
        entry = next(r for r in server.get("/v1/runs")["data"] if r["id"] == "broken")
        done, total = entry["sidecars_verified"], entry["trajectory_count"]
        assert done < total
        page = page_on(server)
        tab = page.open("#/run/broken/rollouts")
        expect(tab.locator(".run-head .facts")).to_contain_text(f"sidecars verified {done}/{total}")
    tab = page_on(corpus_server).open("#/run/spec/rollouts")
    expect(tab.locator(".run-head .facts")).to_contain_text("11 trajectories")
    expect(tab.locator(".run-head .facts")).not_to_contain_text("sidecars verified", timeout=30_000)


def test_the_trainable_column_says_zero_as_zero_and_nothing_measurable_as_a_dash(page, corpus_server):
    """A tokens record that trains nothing shows 0, what its size says, and so does one with no nodes (nothing
    could train); one without tokens (null) shows -."""
    rows = {row["id"]: row for row in corpus_server.get("/v1/trajectories?run_id=spec")["data"]}
    assert rows["tr_empty_mask"]["size"]["trainable"] == 0 and rows["tr_empty"]["size"]["trainable"] == 0
    assert rows["tr_text"]["size"]["trainable"] is None
    tab = page.open("#/run/spec/rollouts")
    cells = {record_id: tab.locator(f'tr.rollout-row[data-traj="{record_id}"] td.num').nth(2)  # step, tokens, trainable
             for record_id in ("tr_empty_mask", "tr_empty", "tr_text")}
    expect(cells["tr_empty_mask"]).to_have_text("0 0%")
    expect(cells["tr_empty"]).to_have_text("0 0%")
    expect(cells["tr_text"]).to_have_text("-")
