"""One rollout as one self-contained HTML file, to attach to a bug report or a chat thread.

The file opens from disk on any machine: its data is the server's own answers (the header, `/paths`
per path, `/graph`, `/exchanges`, each held path's `/chat`, the flag and block-kind catalogues) as JSON in a `<script
type="application/json">`, drawn by the page's own renderers (the drawer's header, Path, Chat, Tree
and Calls tabs, as `snapshot.js` imports them: each module a block of one inline script, since a file://
page under its CSP loads no module), styled by the page's stylesheet and the snapshot's own, all
under a CSP (a `<meta>`) that allows exactly those two inline pieces by hash and no request of any
kind. It is bounded: each path's first `PATH_TOKENS` tokens (`PATH_CHARS` characters in text mode)
and `PATH_NODES` nodes, the lists of the first `PATHS` paths (every path's summary), the tree's first
`TREE_NODES` nodes, the first `CALLS` calls and each held path's first `PATH_NODES` Chat cards (within
`CHAT_BYTES`); what was left out is said in the file (`cut`, and each answer's `part`). The file holds
the record, not the run: the same bytes from
`GET /v1/trajectories/{id}/snapshot` and `show --html`.
"""
import base64
import hashlib
import json
import re
from importlib.resources import files

from skycap_viewer import __version__
from skycap_viewer.flags import flag_catalogue, text_only_catalogue
from skycap_viewer.page import DRAW, page_folder
from skycap_viewer.record.blocks import BLOCK_KIND_WHY
from skycap_viewer.views.record.calls import exchanges_part
from skycap_viewer.views.record.chat import chat_part
from skycap_viewer.views.record.graph import graph_part
from skycap_viewer.views.record.trajectory import PartLimit, RecordView
from skycap_viewer.wire import encode_json

TABS = ("path", "chat", "tree", "calls")  # the page's tab names the file has
PATHS = 16
PATH_NODES = 2000
PATH_TOKENS = 20_000
PATH_CHARS = 200_000
PATH_BYTES = 2**20  # a path's nodes as `/paths` sends them, before the cut
TREE_NODES = 2000
TREE_BYTES = 2**20
CALLS = 1000
CALLS_BYTES = 2**19
CHAT_BYTES = 2**18  # a held path's Chat cards (its messages once more: paths share theirs)
LIMITS = {"paths": PATHS, "path_nodes": PATH_NODES, "path_tokens": PATH_TOKENS, "path_chars": PATH_CHARS,
          "tree_nodes": TREE_NODES, "calls": CALLS, "chat_nodes": PATH_NODES}
ESCAPES = {b"<": b"\\u003c", b">": b"\\u003e", b"&": b"\\u0026",
           "\u2028".encode(): b"\\u2028", "\u2029".encode(): b"\\u2029"}
PAGE_FILES = files("skycap_viewer.views.record") / "snapshot_page"
PAGE_JS = page_folder() / "js" / DRAW  # the modules that fetch nothing: snapshot.js imports only those
IMPORT = re.compile(r'^import \{([^}]*)\} from "\./([\w.-]+)";\n', re.M)  # the one import form the page uses
REEXPORT = re.compile(r'^export \{([^}]*)\} from "\./([\w.-]+)";[^\n]*\n', re.M)
EXPORTED = re.compile(r"^export (?:async function|function|class|const|let) (\w+)", re.M)


def snapshot_data(view: RecordView, path: int = 0, tab: str = "path") -> dict:
    """What the file draws: the view's answers as the page's drawer has them (`trajectory`, `paths`,
    `graph`, `exchanges`) and the catalogues its modules look names up in (`viewer`), each held as
    far as the limits allow; raises IndexError for a path there is not and ValueError for a tab the
    file does not have. `path` is shown first, and held even past `PATHS`."""
    if tab not in TABS:
        raise ValueError(f"tab must be one of {', '.join(TABS)}, not {tab!r}")
    first = view.paths_part(True, limit=PartLimit(items=0, bytes=None))  # the header and every path's summary
    summaries = first.pop("paths")
    if not 0 <= path < max(len(summaries), 1):
        raise IndexError(f"the trajectory has {len(summaries)} path(s)")
    header = {key: value for key, value in first.pop("trajectory").items() if key not in view.context}
    first.pop("nodes")
    held = {*range(min(len(summaries), PATHS)), *([path] if summaries else [])}
    paths, texts, needs = [], {}, {}
    for index, summary in enumerate(summaries):  # every path's summary, as /paths sends them; the lists of those held
        part = view.paths_part(True, path=index, limit=PartLimit(PATH_NODES, PATH_BYTES)) if index in held else summary
        entry, wants = cut_path(summary, part)
        paths.append(entry)
        texts.update(part.get("nodes", {}))
        needs.update(wants)  # a node's history is the same on every path that holds it, so is its cut
    nodes = {key: cut_node(texts[key], want) for key, want in needs.items()}
    graph = graph_part(view, limit=PartLimit(TREE_NODES, TREE_BYTES))
    graph.pop("trajectory")
    for node in graph["nodes"]:
        if node["node_id"] in nodes:
            node.pop("message")  # its text is in `nodes`, once
    exchanges = exchanges_part(view, limit=PartLimit(CALLS, CALLS_BYTES))
    chat_limit = PartLimit(PATH_NODES, CHAT_BYTES, CHAT_BYTES)  # a bigger message: its placeholder
    chats = {index: chat_part(view, index, limit=chat_limit) for index in sorted(held)}
    return {
        "made_by": f"skycap-viewer {__version__}",
        "record_id": view.record_id,  # the id it is looked up by (its file's name), as the page's drawer says
        "initial": {"path": path, "tab": tab},
        "limits": LIMITS,
        "trajectory": header,
        "paths": {**first, "paths": paths, "nodes": nodes},
        "graph": {**graph, "part": held_part(graph["part"])},
        "exchanges": {**exchanges, "part": held_part(exchanges["part"])},
        "chat": {str(index): {**chat, "part": held_part(chat["part"])} for index, chat in chats.items()},
        "viewer": {"flags": flag_catalogue(), "text_only": text_only_catalogue(),
                   "block_kinds": [{"kind": kind, "why": why} for kind, why in BLOCK_KIND_WHY.items()]},
    }


def held_part(part: dict) -> dict:
    """An answer's `part` as the file holds it: which window of how many, and no next part to ask for
    (the file asks for nothing; `from`, `to` and `total` say what was left out)."""
    return {key: value for key, value in part.items() if key != "next"}


def cut_path(summary: dict, part: dict) -> tuple[dict, dict]:
    """(the path's summary with its lists as far as the snapshot holds them, how much of each node
    shown it draws: None for all of it, else the node's first N tokens or characters). A block cut
    inside ends where the file's text of its node ends."""
    budget = PATH_TOKENS if summary["unit"] == "tokens" else PATH_CHARS
    blocks, used, cut = [], 0, None
    for block in part["blocks"]:
        size = block["node_end"] - block["node_start"]
        if used + size > budget:
            cut = (block["node_id"], block["node_start"] + budget - used)
            if budget > used:
                shown = budget - used
                blocks.append({**block, "end": block["start"] + shown, "node_end": cut[1],
                               ("token_count" if "token_count" in block else "char_count"): shown})
                used = budget
            break
        blocks.append(block)
        used += size
    node_ids, wants = part["node_ids"], dict.fromkeys(part["node_ids"])
    if cut is not None:
        cut_node_id, end = cut
        node_ids = node_ids[:node_ids.index(cut_node_id) + (1 if end else 0)]  # the cut node, if any of it shows
        wants = {key: end if key == cut_node_id else None for key in node_ids}
    kept = set(node_ids)
    total = summary["token_count"] if summary["unit"] == "tokens" else summary["char_count"]
    whole = cut is None and "next" not in part["part"]
    entry = {
        **summary,
        "node_ids": node_ids,
        "targets": [key for key in part["targets"] if key in kept],
        "messages": part["messages"][:len(node_ids)],
        "blocks": blocks,
        "part": held_part(part["part"]),
        "cut": None if whole else {"unit": summary["unit"], "shown": used, "total": total,
                                   "nodes_shown": len(node_ids), "nodes": summary["node_count"]},
    }
    return entry, wants


def cut_node(node: dict, want: int | None) -> dict:
    """A `/paths` node as far as the snapshot draws it: its first `want` tokens (ids, logprobs,
    offsets, text, support), or characters of a node without tokens; all of it for None."""
    if want is None:
        return node
    cut = {**node, "cut_at": want}
    if node["token_ids"] is None:
        cut["text"] = utf16_prefix(node["text"] or "", want)
        return cut
    cut["token_ids"] = node["token_ids"][:want]
    if node["logprobs"] is not None:
        cut["logprobs"] = node["logprobs"][:want]
    if node["token_offsets"] is not None:
        cut["token_offsets"] = node["token_offsets"][:want + 1]
        cut["text"] = utf16_prefix(node["text"], cut["token_offsets"][-1])
    if node["support_sizes"] is not None:
        cut["support_sizes"] = node["support_sizes"][:max(want - (node["sampled_start"] or 0), 0)]
        cut["outside_support"] = [i for i in node["outside_support"] if i < want]
    return cut


def utf16_prefix(text: str, units: int) -> str:
    """The first `units` UTF-16 units of `text` (the unit of the payload's offsets)."""
    if text.isascii():
        return text[:units]
    return text.encode("utf-16-le", "surrogatepass")[:2 * units].decode("utf-16-le", "ignore")


# -- the file -------------------------------------------------------------------------------------


def embedded_json(encoded: bytes) -> str:
    """Encoded JSON that no record text in it can end the `<script>` it sits in: `<`, `>`, `&` and the
    two JavaScript line separators as `\\u` escapes (only ever inside strings, so the value is the same)."""
    for raw, escaped in ESCAPES.items():
        encoded = encoded.replace(raw, escaped)
    return encoded.decode("utf-8")


def page_modules(source: str, order: list[str] | None = None) -> list[str]:
    """The page's modules `source` imports and theirs, each once and after the modules it imports."""
    order = [] if order is None else order
    for _, name in IMPORT.findall(source):
        if name not in order:
            page_modules((PAGE_JS / name).read_text("utf-8"), order)
            order.append(name)
    return order


def module_block(source: str, name: str | None = None) -> str:
    """One ES module as a block of the file's one plain script (a file:// page under its CSP loads no
    module): its imports read from `pageModules`, what it exports left there under `name`."""
    exported = EXPORTED.findall(source)
    exported += [f"{alias}: pageModules[{json.dumps(origin)}].{alias}"
                 for names, origin in REEXPORT.findall(source) for alias in split_names(names)]
    body = IMPORT.sub(lambda found: f"const {{{', '.join(split_names(found[1])).replace(' as ', ': ')}}} = "
                                    f"pageModules[{json.dumps(found[2])}];\n", REEXPORT.sub("", source))
    body = re.sub(r"^export (?=async function|function|class|const|let)", "", body, flags=re.M)
    if re.search(r"^\s*(import|export)\b", body, re.M):
        raise ValueError(f"{name or 'snapshot.js'}: an import or export the snapshot cannot inline")
    register = f"pageModules[{json.dumps(name)}] = {{{', '.join(exported)}}};\n" if name else ""
    return f"{{\n{body}{register}}}\n"


def split_names(names: str) -> list[str]:
    """`a, b as c` (an import's or export's braces) as ["a", "b as c"]."""
    return [part.strip() for part in names.split(",") if part.strip()]


def snapshot_script() -> str:
    """The file's one script: snapshot.js and the page's modules it imports, each a block in order,
    so the file draws with the very functions the drawer draws with."""
    own = (PAGE_FILES / "snapshot.js").read_text("utf-8")
    blocks = [module_block((PAGE_JS / name).read_text("utf-8"), name) for name in page_modules(own)]
    return '"use strict";\nconst pageModules = {};\n' + "".join(blocks) + module_block(own)


def source_hash(text: str) -> str:
    """The CSP source for one inline element's exact content."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def snapshot_html(encoded: bytes) -> bytes:
    """The file of `snapshot_data` encoded: the page's stylesheet and the snapshot's, the data, the
    script, and the CSP naming the style and the script by hash (nothing else loads, nothing is fetched)."""
    style = (page_folder() / "style.css").read_text("utf-8") + (PAGE_FILES / "snapshot.css").read_text(
        "utf-8")
    script = snapshot_script()
    policy = (f"default-src 'none'; style-src {source_hash(style)}; script-src {source_hash(script)}; "
              "img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'")
    return "".join([
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n',
        '<meta name="referrer" content="no-referrer">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        "<title>skycap-viewer snapshot</title>\n",
        f"<style>{style}</style>\n</head>\n<body>\n",
        '<noscript><p class="notice">This snapshot draws the rollout with its own inline script: '
        "open it in a browser with JavaScript on.</p></noscript>\n",
        '<main id="snapshot"></main>\n',
        f'<script type="application/json" id="data">{embedded_json(encoded)}</script>\n',
        f"<script>{script}</script>\n</body>\n</html>\n",
    ]).encode("utf-8")


def record_snapshot(view: RecordView, path: int = 0, tab: str = "path") -> bytes:
    """The file of one record (`show --html`, and the server's answer)."""
    return snapshot_html(encode_json(snapshot_data(view, path, tab)))
