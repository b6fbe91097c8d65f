"""The `skycap-viewer` command: serve the page, or `summary`, `check`, `show`, `diff`, `grep`, `export`, `timeline`
in a terminal, `bundle` the page and a run's answers into a folder, or `mcp` for a coding agent.

Arguments are parsed and checked here, so the server and the commands receive directories
that exist and group keys that are not empty. Usage errors and unreadable arguments exit 2
with one line on stderr, never a traceback.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY
from skycap_viewer.catalog.object_store import is_url
from skycap_viewer.catalog.remote_copy import DEFAULT_CACHE_BYTES, synced_copy
from skycap_viewer.errors import UsageError
from skycap_viewer.printable import safe
from skycap_viewer.record.document import is_document_name, record_id_of
from skycap_viewer.record.frames import DEFAULT_FILE_LIMIT, MIB, set_file_limit
from skycap_viewer.record.search import KINDS, WITHIN, Query

COMMANDS = ("summary", "check", "show", "diff", "grep", "export", "timeline", "bundle", "mcp")
GROUP_BY_HELP = "GRPO group key (meta, then annotations; default step,instance_id)"


def existing_directories(values) -> list[Path]:
    paths = []
    for value in values:
        path = Path(value)
        if not path.is_dir():
            raise UsageError(f"not a directory: {value}")
        paths.append(path)
    return paths


def directories_or_documents(values) -> list[Path]:
    """The directories given, or record documents (`check` takes one record as `show` does)."""
    paths = []
    for value in values:
        path = Path(value)
        if not path.is_dir() and not (is_document_name(path.name) and path.is_file()):
            raise UsageError(f"not a directory or a record document (*.json.zst): {value}")
        paths.append(path)
    return paths


def readable_directories(values) -> list[Path]:
    """The directories given, each one existing and listable."""
    paths = existing_directories(values)
    for value, path in zip(values, paths, strict=True):
        try:
            with os.scandir(path):
                pass
        except OSError as error:
            raise UsageError(f"cannot read directory {value}: {error.strerror or error}") from None
    return paths


def group_keys(text: str) -> tuple[str, ...]:
    keys = tuple(key.strip() for key in (text or "").split(",") if key.strip())
    if not keys:
        raise UsageError("--group-by needs at least one key, e.g. step,instance_id")
    return keys


def grep_arguments(args) -> tuple[list[Path], Query]:
    """`grep`'s directories (each one existing) and its query: the last positional is the pattern."""
    if len(args.args) < 2:
        raise UsageError("give one or more record directories, then the text to find")
    *dirs, pattern = args.args
    return existing_directories(dirs), Query(pattern, args.regex, args.case, args.kind, args.role, args.within)


def demo_directory() -> Path:
    """The example run shipped inside the package (`--demo`), wherever the package is installed."""
    from skycap_viewer.demo import records_directory

    directory = records_directory()
    if not directory.is_dir() or not any(n.endswith(".json.zst") for n in os.listdir(directory)):
        raise UsageError(f"the demo records are not there yet ({directory} is empty)")
    return directory


def given_directories(args, check=readable_directories) -> list[Path]:
    """The record directories a command works on: the demo run, or the ones given (one at least)."""
    if args.demo:
        return [demo_directory(), *check(args.dirs)]
    if not args.dirs:
        raise UsageError("give one or more record directories (or --demo for the example run)")
    return check(args.dirs)


def shown_record(args) -> Path:
    """`show`'s record: a document file, `DIR ID`, or with `--demo` an id of the example run (its
    forked rollout when none is given)."""
    from skycap_viewer.commands.show import document_in

    if args.demo:
        if len(args.record) > 1:
            raise UsageError("with --demo, give one id of the example run, or none for its forked rollout")
        from skycap_viewer.demo.make import FORKED_ID

        return document_in(demo_directory(), args.record[0] if args.record else FORKED_ID)
    if len(args.record) == 1:
        return Path(args.record[0])
    if len(args.record) == 2:
        return document_in(Path(args.record[0]), args.record[1])
    raise UsageError("give a record file ({id}.json.zst), or DIR ID (or --demo [ID] for the example run)")


def file_limit_mib(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number of MiB, 1 or more, not {text!r}")
    return value


def add_file_limit(parser: argparse.ArgumentParser) -> None:
    """Every command reads records, so every command takes the ceiling on what one file may decompress to."""
    parser.add_argument("--max-file-mib", type=file_limit_mib, default=DEFAULT_FILE_LIMIT // MIB, metavar="N",
                        help=f"the most one record file may decompress to (default {DEFAULT_FILE_LIMIT // MIB}); "
                        "a larger one is reported, not read")


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """Every command takes a store URL where it takes a directory, and how to reach the store."""
    parser.add_argument("--storage-options", type=storage_options, default={}, metavar="JSON",
                        help="options for the object store of an s3://, gs://, az://... URL, as fsspec takes "
                             "them (e.g. '{\"endpoint_url\": \"http://127.0.0.1:9000\"}'); credentials are the "
                             "protocol's usual ones")
    parser.add_argument("--remote-cache-mib", type=file_limit_mib, default=DEFAULT_CACHE_BYTES // MIB,
                        metavar="N", help="the most the sidecars fetched from a store may take in the cache "
                             f"(default {DEFAULT_CACHE_BYTES // MIB}); the least recently fetched go first")


def storage_options(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("a JSON object of option names and values")
    return value


def local_copies(args, values: list[str], copies: list, serving: bool = False) -> list[str]:
    """`values` with each store URL replaced by the directory (or document) of its local copy, synced now
    (`catalog/remote_copy.py`); the copies are added to `copies`. A store that cannot be listed and has
    no earlier copy is a usage error. `serving`: an earlier copy is served as it is at once (its rows
    from the persisted index), and synced as the server starts polling."""
    if not any(is_url(value) for value in values):
        return values
    from skycap_viewer.record.copies import cache_directory

    local = []
    for value in values:
        if not is_url(value):
            local.append(value)
            continue
        url, record_id = value.rstrip("/"), None
        if is_document_name(url.rsplit("/", 1)[-1]):  # one record: its folder's copy, that record's files only
            url, _, name = url.rpartition("/")
            record_id = record_id_of(name)
        copy, said = synced_copy(url, args.storage_options, cache_directory(), args.remote_cache_mib * MIB,
                                 record_id, serving)
        if said:
            print(f"skycap-viewer: {safe(said)}", file=sys.stderr, flush=True)
        copies.append(copy)
        local.append(str(copy.directory / name) if record_id is not None else str(copy.directory))
    return local


def directories_command(name: str, description: str) -> argparse.ArgumentParser:
    """A terminal command over record directories (or the demo run), printing text or `--json`."""
    parser = argparse.ArgumentParser(prog=f"skycap-viewer {name}", description=description)
    parser.add_argument("dirs", nargs="*", metavar="DIR")
    parser.add_argument("--demo", action="store_true", help="the example run shipped with the viewer")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_file_limit(parser)
    return parser


def build_parsers() -> dict[str, argparse.ArgumentParser]:
    serve = argparse.ArgumentParser(
        prog="skycap-viewer",
        description="Serve a local, read-only viewer for skycap trajectory records. "
        "Other commands: summary, check, show, diff, grep, export, timeline, bundle, mcp "
        "(skycap-viewer COMMAND --help).",
    )
    serve.add_argument("dirs", nargs="*", metavar="DIR", help="record directories, or folders holding several")
    serve.add_argument("--port", type=int, default=8765, help="port to listen on (0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    serve.add_argument("--group-by", default=",".join(DEFAULT_GROUP_BY), help=GROUP_BY_HELP)
    serve.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                       help="also answer requests for this host name (e.g. the machine's name with --host 0.0.0.0)")
    serve.add_argument("--token", metavar="VALUE",
                       help="require this token on every request (default: one made at start when --host is not "
                            "loopback; also SKYCAP_VIEWER_TOKEN); the printed URL carries it")
    serve.add_argument("--no-token", action="store_true",
                       help="serve beyond loopback without a token: anyone who can reach the port reads every record")
    serve.add_argument("--certfile", metavar="PEM", help="serve HTTPS with this certificate (and its key)")
    serve.add_argument("--keyfile", metavar="PEM", help="the certificate's private key, when not in --certfile")
    serve.add_argument("--quiet", action="store_true", help="no access log")
    serve.add_argument("--open", action="store_true", help="open the page in a browser")
    serve.add_argument("--demo", action="store_true", help="serve the small example run shipped with the viewer")
    serve.add_argument("--no-cache", action="store_true", help="neither read nor write the persisted index")
    serve.add_argument("--no-verify", action="store_true",
                       help="do not check every record's sidecars in the background (only those a view found damaged)")

    summary = directories_command("summary", "Print a summary of each run.")
    summary.add_argument("--group-by", default=",".join(DEFAULT_GROUP_BY), help=GROUP_BY_HELP)

    check = directories_command(
        "check", "Validate records against format v1 (a DIR may be one record's document). Exit 1 when a record "
        "breaks the format; what the sampling masks find (out-of-support, forced-run) is printed as findings and "
        "does not change the exit status.")
    check.add_argument("--forks", action="store_true",
                       help="also name every fork the way skycap's check does (the exit status does not change)")

    show = argparse.ArgumentParser(prog="skycap-viewer show", description="Show one rollout in the terminal.")
    show.add_argument("record", nargs="*", metavar="RECORD",
                      help="a record's document file ({id}.json.zst), or DIR ID; with --demo an id (or none)")
    show.add_argument("--demo", action="store_true",
                      help="RECORD is an id of the example run shipped with the viewer (default: its forked rollout)")
    show.add_argument("--path", type=int, default=None, metavar="N", help="only path N")
    show.add_argument("--full", action="store_true",
                      help="print every path whole (default: a forked rollout's shared prefix once)")
    show.add_argument("--json", action="store_true", help="print the rollout's paths as JSON")
    take = show.add_mutually_exclusive_group()
    take.add_argument("--row", dest="path_answer", action="store_const", const="row",
                      help="print path N's trainer row as JSON (input_ids, loss_mask, logprobs, blocks)")
    take.add_argument("--messages", dest="path_answer", action="store_const", const="messages",
                      help="print path N's messages in chat format as JSON")
    show.add_argument("--html", action="store_true",
                      help="print the rollout as one self-contained HTML file that opens offline (on path N: --path)")
    diff = argparse.ArgumentParser(prog="skycap-viewer diff", description="Compare two rollouts: what they share, "
                                   "where they part, then both sides turn by turn.")
    diff.add_argument("records", nargs="+", metavar="RECORD",
                      help="two record files ({id}.json.zst), DIR ID_A ID_B, or DIR_A ID_A DIR_B ID_B")
    diff.add_argument("--path-a", type=int, default=0, metavar="N", help="path N of the first record (default 0)")
    diff.add_argument("--path-b", type=int, default=0, metavar="N", help="path N of the second record (default 0)")
    diff.add_argument("--json", action="store_true", help="print the comparison as JSON (/v1/compare's answer)")
    grep = argparse.ArgumentParser(prog="skycap-viewer grep",
                                   description="Find text in runs' records: what the Path tab shows of each node.")
    grep.add_argument("args", nargs="+", metavar="DIR... PATTERN", help="record directories, then the text to find")
    grep.add_argument("--regex", action="store_true", help="PATTERN is a regular expression (Python's syntax)")
    grep.add_argument("--case", action="store_true", help="match case (default: case-insensitive, Unicode casefold)")
    grep.add_argument("--kind", default="all", choices=KINDS,
                      help="sampled: model-authored nodes; given: client-authored ones but replayed; "
                      "replayed: replayed assistant turns")
    grep.add_argument("--role", help="only nodes of this role (system, user, assistant, tool...)")
    grep.add_argument("--in", dest="within", default="shown", choices=WITHIN,
                      help="shown (default): each node's text as the Path tab shows it, its decoded tokens where "
                           "the record has them (chat template and the model's tool-call text included), else its "
                           "message text; message: the message text only (tool calls as name(arguments))")
    grep.add_argument("--json", action="store_true", help="one JSON object per hit")
    export = argparse.ArgumentParser(prog="skycap-viewer export", description="Write every rollout a listing's "
                                     "filters keep as JSON lines, as /v1/trajectories/export does (same names).")
    export.add_argument("dir", metavar="DIR", help="a record directory, or a folder of runs with --run-id")
    add_filter_options(export)
    for name in ("sort", "order"):
        export.add_argument(f"--{name}", metavar="VALUE")
    export.add_argument("--format", choices=("rollouts", "rows"), help="rows: each record's trainer rows too")
    timeline = argparse.ArgumentParser(prog="skycap-viewer timeline", description="One training step's rollouts on "
                                       "one time axis: a line per rollout, the one that ended last first.")
    timeline.add_argument("dir", metavar="DIR", help="a record directory, or a folder of runs with --run-id")
    timeline.add_argument("--step", required=True, metavar="S", help="the step (meta.step)")
    timeline.add_argument("--run-id", metavar="RUN", help="the run, when DIR holds several")
    timeline.add_argument("--json", action="store_true", help="print /v1/steps/timeline's answer, every lane")
    for parser in (export, serve, show, grep, diff, timeline):
        add_file_limit(parser)
    for parser in (serve, summary, check, show, diff, grep, export, timeline):
        add_store_options(parser)
    bundle = bundle_parser()
    add_file_limit(bundle)
    return {"serve": serve, "summary": summary, "check": check, "show": show, "diff": diff, "grep": grep,
            "export": export, "timeline": timeline, "bundle": bundle, "mcp": mcp_parser()}


def mcp_parser() -> argparse.ArgumentParser:
    """`mcp`: the directories (or store URLs) served to a coding agent over stdio, as the server takes them."""
    mcp = argparse.ArgumentParser(prog="skycap-viewer mcp", description="Serve the viewer's answers to a coding "
                                  "agent as an MCP server on stdin and stdout; it reads only the directories given.")
    mcp.add_argument("dirs", nargs="*", metavar="DIR", help="record directories, folders of runs, or store URLs")
    mcp.add_argument("--demo", action="store_true", help="the example run shipped with the viewer")
    add_file_limit(mcp)
    mcp.add_argument("--group-by", default=",".join(DEFAULT_GROUP_BY), help=GROUP_BY_HELP)
    mcp.add_argument("--no-cache", action="store_true", help="neither read nor write the persisted index")
    mcp.add_argument("--no-verify", action="store_true", help="do not check every record's sidecars in the background")
    add_store_options(mcp)
    return mcp


def run_mcp_command(args) -> int:
    """The MCP server over the demo run and the directories or store URLs given (one at least)."""
    from skycap_viewer.mcp_server.stdio import run_mcp

    sources = [demo_directory()] if args.demo else []
    sources += [value if is_url(value) else readable_directories([value])[0] for value in args.dirs]
    if not sources:
        raise UsageError("give one or more record directories (or --demo for the example run)")
    return run_mcp(sources, group_keys(args.group_by), use_cache=not args.no_cache, verify=not args.no_verify,
                   storage_options=args.storage_options, remote_cache_bytes=args.remote_cache_mib * MIB)


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """A listing's filters, by the API's names (`--task-id` is `task_id`): `export` and `bundle` take them."""
    for name in ("run-id", "step", "task-id", "status", "q", "reward-min", "reward-max", "trained"):
        parser.add_argument(f"--{name}", metavar="VALUE")
    for name in ("annotation", "flag", "exclude-flag"):
        parser.add_argument(f"--{name}", action="append", metavar="VALUE", help="repeatable")


def positive_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number, 1 or more, not {text!r}")
    return int(text)


def mib_budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a size in MiB above 0, not {text!r}")
    return value


def bundle_parser() -> argparse.ArgumentParser:
    from skycap_viewer.commands.bundle import DEFAULT_MAX_ROLLOUTS

    bundle = argparse.ArgumentParser(prog="skycap-viewer bundle", description="Write the page and the server's "
                                     "answers for the rollouts the filters keep into a folder any static host serves.")
    bundle.add_argument("dirs", nargs="+", metavar="DIR", help="record directories, or folders holding several")
    bundle.add_argument("-o", "--out", required=True, metavar="OUT", help="the folder to write (empty, or --force)")
    add_filter_options(bundle)
    bundle.add_argument("--max-rollouts", type=positive_count, default=DEFAULT_MAX_ROLLOUTS, metavar="N",
                        help=f"refuse filters keeping more rollouts than this (default {DEFAULT_MAX_ROLLOUTS})")
    bundle.add_argument("--max-mib", type=mib_budget, metavar="MIB",
                        help="write rollouts' drawers newest first while the bundle stays within this size; "
                             "the rest are listed, said, and not openable")
    bundle.add_argument("--zip", action="store_true", help="write OUT as one zip archive of the folder")
    bundle.add_argument("--force", action="store_true", help="write over a non-empty OUT (an earlier bundle)")
    bundle.add_argument("--group-by", default=",".join(DEFAULT_GROUP_BY), help=GROUP_BY_HELP)
    return bundle


def run_bundle_command(args) -> int:
    """Index the directories as the server does and write the bundle from the API's answers in process."""
    from skycap_viewer.commands.bundle import filter_params, run_bundle
    from skycap_viewer.server.in_process import InProcessApi

    directories = readable_directories(args.dirs)
    api = InProcessApi(directories, group_keys(args.group_by))
    return run_bundle(api, api.page_files(), directories, Path(args.out), filter_params(args), args.max_rollouts,
                      args.max_mib, args.zip, args.force)


def localise(command: str, args, copies: list) -> None:
    """Replace each store URL among the command's record arguments with its local copy's path."""
    if command in ("serve", "summary", "check"):
        args.dirs = local_copies(args, args.dirs, copies, serving=command == "serve")
    elif command == "show":
        args.record = local_copies(args, args.record[:1], copies) + args.record[1:]
    elif command == "diff":
        args.records = local_copies(args, args.records, copies)
    elif command == "grep":
        args.args = local_copies(args, args.args[:-1], copies) + args.args[-1:]
    elif command in ("export", "timeline"):
        args.dir = local_copies(args, [args.dir], copies)[0]


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv.pop(0) if argv and argv[0] in COMMANDS else "serve"
    args = build_parsers()[command].parse_args(argv)
    set_file_limit(args.max_file_mib * MIB)
    copies: list = []
    try:
        localise(command, args, copies)
        if command == "summary":
            from skycap_viewer.commands.summary import run_summary

            return run_summary(given_directories(args, existing_directories), as_json=args.json,
                               group_by=group_keys(args.group_by))
        if command == "check":
            from skycap_viewer.commands.check import run_check

            return run_check(given_directories(args, directories_or_documents), as_json=args.json, forks=args.forks)
        if command == "show":
            from skycap_viewer.commands.show import run_show, run_show_path

            if args.path_answer:
                return run_show_path(shown_record(args), args.path, args.path_answer)
            return run_show(shown_record(args), path_index=args.path, as_json=args.json, full=args.full,
                            as_html=args.html)
        if command == "diff":
            from skycap_viewer.commands.diff import run_diff

            return run_diff(args.records, path_a=args.path_a, path_b=args.path_b, as_json=args.json)
        if command == "grep":
            from skycap_viewer.commands.grep import run_grep

            return run_grep(*grep_arguments(args), as_json=args.json)
        if command == "mcp":
            return run_mcp_command(args)
        if command == "bundle":
            return run_bundle_command(args)
        if command == "export":
            from skycap_viewer.commands.export import export_params, run_export

            return run_export(existing_directories([args.dir])[0], export_params(args))
        if command == "timeline":
            from skycap_viewer.commands.timeline import run_timeline

            return run_timeline(existing_directories([args.dir])[0], args.step, args.run_id, as_json=args.json)
        from skycap_viewer.server.serve import run_serve

        for copy in copies:
            copy.poll()  # new, rewritten and deleted records of the store appear as the server runs
        return run_serve(given_directories(args), host=args.host, port=args.port, group_by=group_keys(args.group_by),
                         quiet=args.quiet, open_browser=args.open, use_cache=not args.no_cache,
                         verify=not args.no_verify, allowed_hosts=args.allowed_host, token=args.token,
                         no_token=args.no_token, certfile=args.certfile, keyfile=args.keyfile,
                         storage_options=args.storage_options, remote_cache_bytes=args.remote_cache_mib * MIB)
    except UsageError as error:
        print(f"skycap-viewer: {safe(str(error))}", file=sys.stderr)  # it may name a file or a record's text
        return 2
    except KeyboardInterrupt:
        return 130
