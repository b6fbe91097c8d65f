"""The page over records in object storage: a run read from a real S3 server on loopback is listed,
says where it is read from, and its rollout opens with the tokens its sidecars hold (fetched then); a
run index row whose record is only in the mirror opens from there."""

from playwright.sync_api import expect

from tests.support.corpus import FIXTURES
from tests.support.mirrors import MIRRORED, ON_GCS, pulled_with_a_mirror
from tests.support.records import copy_record
from tests.support.s3_store import S3Store
from tests.support.server_process import ServerProcess


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


def test_a_run_index_row_opens_from_its_mirror(page_on, tmp_path):
    store = S3Store(tmp_path / "cache")
    try:
        train, mirror = pulled_with_a_mirror(store, tmp_path)
        with ServerProcess([train], env=store.env) as server:
            server.wait_indexed()
            page = page_on(server)
            tab = page.open("#/run/train/rollouts")
            tab.locator('.missing-notice a[data-link="missing"]').click()
            expect(tab.locator("button.from-mirror")).to_have_count(2)  # the rows whose mirror is a store's
            tab.locator(f'button.from-mirror[data-traj="{ON_GCS}"]').click()
            expect(tab.locator(".mirror-error")).to_contain_text("needs gcsfs: pip install 'skycap-viewer[gcs]'")
            refused = [error for error in page.errors if "status of 501" in error]
            assert len(refused) == 1, page.errors  # the console's line for that answer, expected: the one 501
            page.errors.remove(refused[0])
            tab.locator(f'button.from-mirror[data-traj="{MIRRORED}"]').click()
            # the record is fetched from the store first: seconds on a busy machine (8.6 s seen on CI's four workers)
            expect(tab.locator("#drawer .traj-id")).to_have_text(MIRRORED, timeout=60_000)
            expect(tab.locator("#drawer .block span.t").first).to_be_visible()
            expect(tab.locator("#main .path")).to_have_text(f"read from {mirror}")
    finally:
        store.stop()
