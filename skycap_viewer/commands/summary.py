"""`skycap-viewer summary DIR...`: what each run holds, from its documents and their sidecars (read as `check`
reads them: the flags are the index's, decided by `record.verify.verified_rollout`).

Runs are discovered exactly as the server discovers them, so the terminal and the page agree
on what a run is. An unreadable document is counted and listed with its error, never fatal. A
run index the trainer wrote (`index/`) is read as the server reads it: what it says of the records
here (the `not-trained` flag counted with the others), and its rows whose record is not here.
"""

from collections import Counter
from pathlib import Path

from skycap_viewer.catalog.discovery import RunLocation, discover_runs, say_skipped
from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY, build_grouping
from skycap_viewer.catalog.run_index import NOT_TRAINED, summarise_run_index
from skycap_viewer.commands.counts import BRIDGED_KEYS, RunStats
from skycap_viewer.commands.terminal import Progress, json_text, links_text, plural, print_out, symlink_note
from skycap_viewer.errors import RecordError, UsageError
from skycap_viewer.flags import GROUP_FLAGS
from skycap_viewer.printable import safe
from skycap_viewer.record.copies import copy_url_of
from skycap_viewer.record.document import document_path, link_leaving, list_record_ids
from skycap_viewer.record.opener import open_record
from skycap_viewer.record.verify import verified_rollout

LABEL_WIDTH = 20


def group_summary(rows: list[dict], keys: tuple[str, ...] = DEFAULT_GROUP_BY) -> dict:
    """Groups as the server forms them (`build_grouping`): count, sizes (counting repetitions), group flags."""
    grouping = build_grouping(rows, keys)
    sizes = Counter(len(group.counting) for group in grouping.groups)
    flags = Counter(name for group in grouping.groups for name in group.flags)
    return {
        "by": list(keys),
        "count": len(grouping.groups),
        "without_key": grouping.row_count - grouping.grouped_rows,
        "sizes": {str(size): n for size, n in sorted(sizes.items())},
        "modal_size": grouping.modal_n,
        "flags": {name: flags.get(name, 0) for name in GROUP_FLAGS},
    }


def run_stats(run: RunLocation) -> tuple[RunStats, dict | None]:
    """The run's counts, and what its run index says (None without one)."""
    stats = RunStats()
    try:
        ids = list_record_ids(run.path)
    except OSError as error:
        stats.add_unreadable("(directory)", f"cannot list {run.path}: {error.strerror or error}")
        return stats, None
    progress = Progress(f"reading {run.id}", len(ids))
    for done, record_id in enumerate(ids, 1):
        path = document_path(run.path, record_id)
        if link := link_leaving(path, run.path):
            stats.symlinks[record_id] = link
        try:
            opened = open_record(run.path, record_id)
        except RecordError as error:
            stats.add_unreadable(record_id, error.problem)
        else:
            document = opened.document
            stats.add(record_id, document, verified_rollout(run.path, document, opened.present, record_id))
        progress.update(done)
    progress.close()
    index = summarise_run_index(run.path, set(ids))
    if index is None:
        return stats, None
    for row in stats.rows:  # the attempts the trainer superseded are grouped so, as the server groups them
        overlay = index.overlays.get(row["id"])
        if overlay is not None:
            row["superseded"] = overlay.superseded
    facts = index.facts(len(ids))
    stats.flags[NOT_TRAINED] += facts["not_trained"]
    return stats, facts


def counts(mapping: dict, empty: str = "none") -> str:
    return " ".join(f"{key}={n}" for key, n in mapping.items()) or empty


def samples_sizes(samples: dict) -> str:
    """The sequences' tokens and tokens in the loss, or that they have no tokens to count them in."""
    if samples["tokens"] is None:
        return "no tokens (text mode): nothing to count in the loss"
    sizes = f"{samples['tokens']} tokens, {samples['trained_tokens']} in the loss"
    if samples["with_tokens"] < samples["sequences"]:
        sizes += f" (over the {samples['with_tokens']} with tokens)"
    return sizes


def reward_line(rewards: dict | None, missing: int) -> str:
    if rewards is None:
        return f"none recorded (missing in {missing})"
    head = f"n={rewards['count']}" + (f" (missing {rewards['missing']})" if rewards["missing"] else "")
    if "values" in rewards:
        return head + ": " + " ".join(f"{value}×{n}" for value, n in rewards["values"])
    last = len(rewards["histogram"]) - 1  # the last bucket holds the maximum: closed on the right
    buckets = " ".join(f"[{b['from']:.4g},{b['to']:.4g}{']' if i == last else ')'}:{b['n']}"
                       for i, b in enumerate(rewards["histogram"]))
    return f"{head}, min {rewards['min']:.4g}, max {rewards['max']:.4g}: {buckets}"


def text_lines(run: RunLocation, summary: dict) -> list[str]:
    """The human-readable block of one run."""
    groups, paths, calls = summary["groups"], summary["paths"], summary["calls"]
    tasks = summary["tasks"]
    top_tasks = sorted(tasks.items(), key=lambda item: (-item[1], item[0]))[:10]
    more_tasks = " …" if len(tasks) > len(top_tasks) else ""
    without_task = f"; {plural(summary['without_task'], 'record')} without a task" if summary["without_task"] else ""
    unreadable = f" (+{summary['unreadable']} unreadable)" if summary["unreadable"] else ""
    bridged = " ".join(f"{k}={calls['bridged'][k]}" for k in BRIDGED_KEYS)
    rows = [
        ("records", f"{summary['records']}{unreadable}"),
        ("statuses", counts(summary["statuses"])),
        ("modes", counts(summary["modes"])),
        ("steps", counts(summary["steps"])),
        ("tasks", f"{len(tasks)} distinct: {counts(dict(top_tasks))}{more_tasks}{without_task}"),
        (
            "groups",
            f"{groups['count']} by {','.join(groups['by'])}; sizes {counts(groups['sizes'])}"
            + (f"; {plural(groups['without_key'], 'record')} without a key" if groups["without_key"] else "")
            + f"; flags {counts({k: n for k, n in groups['flags'].items() if n})}",
        ),
        (
            "paths per record",
            " ".join(f"{k}:{n}" for k, n in paths["histogram"].items())
            + (f"; max {paths['max']['paths']} in {paths['max']['id']}" if paths["max"] else ""),
        ),
        ("forks", f"{summary['forks']['forked_records']} forked records, "
                  f"{plural(summary['forks']['branch_points'], 'branch point')}"),
        ("calls", f"{calls['total']}; bridged {bridged}"),
        ("nodes", str(summary["nodes"])),
        ("tokens", f"{summary['tokens']} stored (each node once)"),
        ("samples", f"{plural(summary['samples']['sequences'], 'sequence')} for the trainer: "
                    f"{samples_sizes(summary['samples'])}; rules {counts(summary['samples_rules'])}"),
        ("failures", f"{summary['failures']['total']} in {plural(summary['failures']['records'], 'record')}"),
        ("flags", f"over all {plural(summary['documents'], 'document')}, unreadable ones included: "
                  + counts({k: n for k, n in summary["flags"].items() if n})),
        ("rewards", reward_line(summary["rewards"], summary["records"])),
    ]
    if "run_index" in summary:
        rows += run_index_rows(summary["run_index"])
    if summary["symlinks"]:
        rows.append(("symlinks", links_text(summary["symlinks"])))
    lines = [f"{run.id}  ({copy_url_of(run.path)}{symlink_note(run.symlink_to)})"]
    lines += [f"  {label:<{LABEL_WIDTH}}{value}" for label, value in rows]
    lines += [f"  unreadable: {e['id']}: {e['error']}" for e in summary["errors"]]
    return lines


def run_index_rows(index: dict) -> list[tuple[str, str]]:
    """The run index's lines: its files and rows, then what it says of the records here."""
    steps = index["steps"]
    span = "no step" if not steps else f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}–{steps[-1]}"
    phases = f"{', '.join(index['phases'])}, " if index["phases"] else ""
    trained = index["trained"]
    rows = [
        ("run index", f"{plural(index['files'], 'file')} ({phases}{span}): {plural(index['rows'], 'row')}, "
                      f"{index['rows_without_record']} without a record here"),
        ("trained", f"of the {plural(index['records_listed'], 'record')} it lists: true {trained['true']}, "
                    f"false {trained['false']}, null {trained['null']}; superseded {index['superseded']}; "
                    f"not-trained {index['not_trained']}; {plural(index['records_not_listed'], 'record')} "
                    f"not listed"),
    ]
    rows += [("index ignored", f"{entry['file']}: {entry['problem']}") for entry in index["damaged"]]
    return rows


def run_summary(dirs, as_json: bool = False, group_by: tuple[str, ...] = DEFAULT_GROUP_BY) -> int:
    """Print every run's summary; exit 0 (unreadable records are reported, not fatal)."""
    skipped = []
    runs = discover_runs([Path(d) for d in dirs], skipped=skipped)
    say_skipped(skipped, set())
    if not runs:
        raise UsageError(f"no skycap records (*.json.zst) under {' '.join(map(str, dirs))}")
    summaries = []
    for run in runs:
        stats, index = run_stats(run)
        summary = stats.as_dict(groups=group_summary(stats.rows, group_by))
        if index is not None:  # only a run that has one: without it nothing changes
            summary["run_index"] = index
        summaries.append((run, summary))
    if as_json:
        payload = [
            {"run": run.id, "project": run.project, "path": copy_url_of(run.path),
             "symlink_to": str(run.symlink_to) if run.symlink_to else None, **summary}
            for run, summary in summaries
        ]
        print_out(json_text(payload))
    else:
        print_out(safe("\n\n".join("\n".join(text_lines(run, summary)) for run, summary in summaries)))
    return 0
