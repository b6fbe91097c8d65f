"""`skycap-viewer grep DIR... PATTERN`: the API's run-wide search in a terminal.

The same core as `/v1/search`: documents read and matched in the search pool's workers
(`catalog/searcher.py`, with its deadline per document), hits from `record/search.py`. Hits are
printed in record-id order per directory, as soon as every record before them is read. A
document that cannot be read, or whose matching passes the deadline, is named on stderr; the
exit status says whether anything was found (0) or not (1); usage errors, a bad regex included,
are 2.
"""

import sys

from skycap_viewer.catalog.searcher import SearchPool
from skycap_viewer.commands.check import resolve_directories
from skycap_viewer.commands.terminal import Painter, Progress, json_text, print_out, wants_colour
from skycap_viewer.errors import UsageError
from skycap_viewer.printable import safe
from skycap_viewer.record.copies import copy_url_of
from skycap_viewer.record.document import list_record_ids
from skycap_viewer.record.search import Query, query_problem


def in_id_order(found, record_ids: list[str]):
    """`found` (results in the order chunks finish) in the order of `record_ids`, each as soon as it can be."""
    waiting, position = {}, 0
    for result in found:
        waiting[result.record_id] = result
        while position < len(record_ids) and record_ids[position] in waiting:
            yield waiting.pop(record_ids[position])
            position += 1


def hit_line(run: str, hit: dict, paint: Painter) -> str:
    """`run/record:node:role:in:start-end: before MATCH after` (`in`: the text matched, `tokens`,
    `message` or `tool_call_ids`), record text escaped and newlines shown as `\\n`."""
    parts = {key: safe(text.replace("\n", "\\n")) for key, text in hit["snippet"].items()}
    where = f"{safe(run)}/{safe(hit['trajectory_id'])}:{hit['node_id']}:{safe(str(hit['role']))}"
    shown = parts["before"] + paint(parts["match"], "bold", "red") + parts["after"]
    return f"{where}:{hit['in']}:{hit['start']}-{hit['end']}: {shown}"


def run_grep(dirs, query: Query, as_json: bool = False, pool: SearchPool | None = None) -> int:
    problem = query_problem(query)
    if problem:
        raise UsageError(problem)
    paint = Painter(wants_colour(sys.stdout) and not as_json)
    pool = pool or SearchPool()
    found_any = finished = False
    try:
        for directory, _ in resolve_directories(dirs):
            try:
                record_ids = list_record_ids(directory)
            except OSError as error:
                raise UsageError(f"cannot list {directory}: {error.strerror or error}") from None
            progress = Progress(f"searching {directory}", len(record_ids))
            found = pool.search(directory, record_ids, query)
            shown = copy_url_of(directory)  # a store's copy: named by its URL
            for done, result in enumerate(in_id_order(found, record_ids), 1):
                progress.update(done)
                if result.skipped:
                    print(safe(f"skycap-viewer grep: {shown}/{result.record_id}: skipped: {result.skipped}"),
                          file=sys.stderr)
                for hit in result.hits:
                    found_any = True
                    print_out(json_text({**hit, "run": shown}, indent=None) if as_json else hit_line(shown, hit, paint))
                if result.capped:
                    print(safe(f"skycap-viewer grep: {shown}/{result.record_id}: only the first "
                               f"{len(result.hits)} hits are shown"), file=sys.stderr)
            progress.close()
        finished = True
    finally:
        pool.close(wait=finished)  # interrupted: the workers' running matches are not waited for
    return 0 if found_any else 1
