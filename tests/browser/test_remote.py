"""The page over records in object storage: a run read from a real S3 server on loopback is listed,
says where it is read from, and its rollout opens with the tokens its sidecars hold (fetched then)."""

from playwright.sync_api import expect

from tests.badrecords import copy_record
from tests.conftest import FIXTURES
from tests.s3_store import S3Store
from tests.server_process import ServerProcess


def test_a_run_in_a_store_opens_with_its_tokens(page_on, tmp_path):
    local = tmp_path / "job-7" / "skycap"
    local.mkdir(parents=True)
    for record_id in ("tr_0e32dadf1ca07c39", "tr_65eb484a7fe5e02f"):
        copy_record(FIXTURES / "groups", record_id, local, record_id)
    store = S3Store(tmp_path / "cache")
    try:
        url = store.upload(tmp_path / "job-7", "job-7")
        with ServerProcess([url], env=store.env) as server:
            server.wait_indexed()
            page = page_on(server)
            tab = page.open("#/run/job-7/rollouts")
            rows = tab.locator("#main tr.rollout-row")
            expect(rows).to_have_count(2)
            expect(tab.locator("#main .path")).to_have_text(f"read from {url}/skycap")
            expect(tab.locator("#main .source-problem")).to_have_count(0)
            rows.first.click()
            drawer = tab.locator("#drawer")
            expect(drawer.locator(".block span.t").first).to_be_visible()
            expect(drawer.locator(".notice.error")).to_have_count(0)
            page.shot("remote-rollout")
    finally:
        store.stop()
