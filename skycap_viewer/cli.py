"""The `skycap-viewer` command: serve the page, or `summary`, `check` and `show` in a terminal.

Usage errors and unreadable arguments exit 2 with one line on stderr, never a traceback.
"""

import argparse
import sys
from pathlib import Path

COMMANDS = ("summary", "check", "show")


class UsageError(Exception):
    """A bad argument: printed as one line, exit status 2."""


def existing_directories(values) -> list[Path]:
    paths = []
    for value in values:
        path = Path(value)
        if not path.is_dir():
            raise UsageError(f"not a directory: {value}")
        paths.append(path)
    return paths


def build_parsers() -> dict[str, argparse.ArgumentParser]:
    serve = argparse.ArgumentParser(
        prog="skycap-viewer",
        description="Serve a local, read-only viewer for skycap trajectory records. "
        "Other commands: summary, check, show (skycap-viewer COMMAND --help).",
    )
    serve.add_argument("dirs", nargs="*", metavar="DIR", help="record directories, or folders holding several")
    serve.add_argument("--port", type=int, default=8765, help="port to listen on (0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    serve.add_argument("--group-by", default="step,instance_id", help="GRPO group key (meta, then annotations)")
    serve.add_argument("--quiet", action="store_true", help="no access log")
    serve.add_argument("--open", action="store_true", help="open the page in a browser")
    serve.add_argument("--demo", action="store_true", help="serve the small example run shipped with the viewer")
    serve.add_argument("--no-cache", action="store_true", help="neither read nor write the persisted index")

    summary = argparse.ArgumentParser(prog="skycap-viewer summary", description="Print a summary of each run.")
    summary.add_argument("dirs", nargs="+", metavar="DIR")
    summary.add_argument("--json", action="store_true", help="print JSON")

    check = argparse.ArgumentParser(prog="skycap-viewer check", description="Validate records against format v1.")
    check.add_argument("dirs", nargs="+", metavar="DIR")
    check.add_argument("--json", action="store_true", help="print JSON")

    show = argparse.ArgumentParser(prog="skycap-viewer show", description="Show one rollout in the terminal.")
    show.add_argument("record", metavar="RECORD", help="a record's document file ({id}.json.zst)")
    show.add_argument("--path", type=int, default=None, metavar="N", help="only path N")
    show.add_argument("--json", action="store_true", help="print the rollout's paths as JSON")
    return {"serve": serve, "summary": summary, "check": check, "show": show}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv.pop(0) if argv and argv[0] in COMMANDS else "serve"
    args = build_parsers()[command].parse_args(argv)
    try:
        if command == "summary":
            from skycap_viewer.summary import run_summary

            return run_summary(existing_directories(args.dirs), as_json=args.json)
        if command == "check":
            from skycap_viewer.check import run_check

            return run_check(existing_directories(args.dirs), as_json=args.json)
        if command == "show":
            from skycap_viewer.show import run_show

            return run_show(Path(args.record), path_index=args.path, as_json=args.json)
        from skycap_viewer.serve import run_serve

        return run_serve(args)
    except UsageError as error:
        print(f"skycap-viewer: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
