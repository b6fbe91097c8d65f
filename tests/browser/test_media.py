"""Media items in the Path tab: each image's placeholder tokens framed as one group, its label (modality ·
hash · tokens) on its node's block; shown as text, and still listed when the tokens are not there."""

from playwright.sync_api import expect

from skycap_viewer.views.record.trajectory import MEDIA_IN_NODE
from tests.support.corpus import FIXTURES
from tests.support.media_records import MANY, heavy
from tests.support.records import copy_record

HOSTILE = "<img src=x onerror=alert(1)>"


def open_from_table(page, run, record_id):
    tab = page.open(f"#/run/{run}/rollouts")
    tab.locator(f'#main tr.rollout-row[data-traj="{record_id}"]').click()
    expect(tab.locator("#drawer .traj-id")).to_have_text(record_id)
    expect(tab.locator("#drawer .tab[data-tab=path]")).to_have_attribute("aria-selected", "true")
    return tab


def test_the_path_frames_each_image_and_labels_it_with_its_hash(page, corpus_server):
    paths = corpus_server.get("/v1/trajectories/tr_media/paths?run_id=spec")
    tab = open_from_table(page, "spec", "tr_media")
    first = tab.locator('.block[data-node="n0"]')
    label = first.locator(".media-item")
    expect(label).to_have_text("image · cat · 3 tokens")
    expect(label).to_have_attribute("title", "its placeholder tokens are [21:24] of the path")
    framed = first.locator("span.t.media")
    expect(framed).to_have_count(3)
    assert [framed.nth(i).get_attribute("data-i") for i in range(3)] == ["21", "22", "23"]
    expect(framed).to_have_text(["<pad>"] * 3)
    expect(first.locator("span.t.media-first")).to_have_attribute("data-i", "21")
    expect(first.locator("span.t.media-last")).to_have_attribute("data-i", "23")
    framed.nth(1).hover()
    readout = tab.locator("#readout")
    expect(readout).to_contain_text('"<pad>" · #22 · id 5 · masked · placeholder of image · cat · 3 tokens')
    first.locator('span.t[data-i="24"]').hover()
    expect(readout).not_to_contain_text("placeholder")
    start = next(b["start"] for b in paths["paths"][0]["blocks"] if b["node_id"] == "n2")
    second = tab.locator('.block[data-node="n2"]')
    expect(second.locator(".media-item")).to_have_text(["image · dog · 2 tokens", "image · cat · 3 tokens"])
    expect(second.locator(".media-item").first).to_have_attribute(
        "title", f"its placeholder tokens are [{start + 8}:{start + 10}] of the path")
    expect(second.locator("span.t.media")).to_have_count(5)
    expect(second.locator("span.t.media-first")).to_have_count(2)
    expect(tab.locator('.block[data-node="n1"] .media-item')).to_have_count(0)
    page.shot("media")


def test_a_hash_is_text_a_bad_range_is_marked_and_text_only_still_lists_the_image(page_over, tmp_path):
    run = tmp_path / "vision"
    run.mkdir()

    def hostile(document):
        first = document["nodes"][0]["tokens"]["media"][0]
        first.update(hash=HOSTILE, length=9)  # past the node's 27 tokens

    copy_record(FIXTURES / "spec", "tr_media", run, "tr_hostile", hostile)
    copy_record(FIXTURES / "spec", "tr_media", run, "tr_text")
    (run / "tr_text.tokens.zst").unlink()
    page = page_over(run)
    tab = open_from_table(page, "vision", "tr_hostile")
    first = tab.locator('.block[data-node="n0"]')
    label = first.locator(".media-item")
    expect(label).to_have_text(f"image · {HOSTILE} · 9 tokens")
    expect(label).to_have_class("media-item bad")
    expect(label).to_have_attribute("title", "its placeholder tokens are [21:27] of the path · record problem: "
                                    "tokens [21, 30) run past the node's 27 tokens: shown as [21, 27)")
    expect(first.locator("span.t.media")).to_have_count(6)
    expect(tab.locator("#drawer img")).to_have_count(0)
    tab = open_from_table(page, "vision", "tr_text")
    first = tab.locator('.block[data-node="n0"]')
    expect(first.locator(".text")).to_contain_text("[image_url]")
    expect(first.locator(".media-item")).to_have_text("image · cat · 3 tokens")
    expect(first.locator(".media-item")).to_have_attribute(
        "title", "its placeholder tokens are 21–24 of the node (not shown: no tokens)")
    expect(tab.locator("span.t.media")).to_have_count(0)


def test_a_node_of_many_images_lists_its_first_and_says_how_many_more(page_over, tmp_path):
    """A node's first thousand media items come with its text; the rest are counted, not drawn; the
    11 MB image of another node is not in the page."""
    run = tmp_path / "vision"
    run.mkdir()
    copy_record(FIXTURES / "spec", "tr_media", run, "tr_heavy", heavy)
    page = page_over(run)
    tab = open_from_table(page, "vision", "tr_heavy")
    first = tab.locator('.block[data-node="n0"]')
    expect(first.locator(".media-item")).to_have_count(MEDIA_IN_NODE)
    expect(first.locator(".media-item").first).to_have_text("image · h000000 · 1 token")
    expect(first.locator(".media-more")).to_have_text(f"and {MANY - MEDIA_IN_NODE:,} more, not drawn")
    expect(tab.locator('.block[data-node="n2"] .media-more')).to_have_count(0)
    expect(tab.locator('.block[data-node="n2"] .media-item')).to_have_count(2)
    assert "AAAA" not in tab.locator("#drawer").inner_text()
