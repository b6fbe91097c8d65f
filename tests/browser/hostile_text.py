"""Markup, event handlers and `javascript:` links planted in records: each payload, if it ran, would set
`window.__pwned`; `DANGEROUS` selects any element one of them could have made."""

from tests.support.records import write_text_record, write_token_record

PAYLOADS = [
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    "<script>window.__pwned=2;alert(2)</script>",
    '<a href="javascript:window.__pwned=3;alert(3)">click me</a>',
    "[a link](javascript:window.__pwned=4)",
    "javascript:alert(5)",
    "<svg onload=alert(6)><iframe src=javascript:alert(7)>",
    "&lt;b&gt;not bold&lt;/b&gt; &amp;",
]
HOSTILE = " ".join(PAYLOADS)
DANGEROUS = ("img, iframe, object, embed, svg image, [onerror], [onload], [onclick], "
             "a[href^='javascript'], a[href^=' javascript'], form, base, meta[http-equiv]")
SCAFFOLD = "<s>assistant\n"
RUN = "hostile"
ODD_RUN = "<img src=x onerror=alert(9)>"


def dress_up(document):
    """Markup wherever the tables, tree, calls and JSON tabs show record fields."""
    document["meta"] = {"task": f"/tasks/{PAYLOADS[0]}", "instance_id": PAYLOADS[1], "step": 1,
                        "repetition_id": 0}
    document["annotations"] = {"reward": 1, "stop_reason": PAYLOADS[2], PAYLOADS[5]: PAYLOADS[3]}
    document["failures"] = [{"t": 1.0, "status": 500, "error": HOSTILE, "input_leaf": None}]
    call = document["nodes"][1]["calls"][0]
    call.update(model=PAYLOADS[0], finish_reason=PAYLOADS[4])
    document["nodes"][1]["message"]["tool_calls"] = [
        {"id": PAYLOADS[1], "type": "function", "function": {"name": PAYLOADS[0], "arguments": HOSTILE}}]


def write_hostile_root(root):
    """Under `root`: the run `RUN` with a token record and a text record dressed up, and an unreadable
    record whose file name is markup; the run `ODD_RUN`, whose name is markup."""
    (root / RUN).mkdir()
    texts = {0: (f"<s>user\n{HOSTILE}</s>\n", None), 1: (f"{SCAFFOLD}{HOSTILE}</s>", len(SCAFFOLD))}
    write_token_record(root / RUN, "tr_hostile_tokens", texts, edit=dress_up)
    write_text_record(root / RUN, "tr_hostile_text", HOSTILE, f"reply {HOSTILE}", edit=dress_up)
    (root / RUN / 'tr_x"><img src=x onerror=alert(10)>.json.zst').write_bytes(b"not a record")
    (root / ODD_RUN).mkdir()
    write_text_record(root / ODD_RUN, "tr_odd_run", "plain", "plain")


def assert_inert(page, tab):
    """Nothing in the page was made from record text, and nothing ran."""
    assert tab.evaluate("typeof window.__pwned") == "undefined"
    made = tab.locator(DANGEROUS).evaluate_all(  # but index.html's own policy, the first in the head
        "nodes => nodes.filter(n => n !== document.head.querySelector('meta[http-equiv]'))"
        ".map(n => n.outerHTML.slice(0, 120))")
    assert made == []
    scripts = tab.evaluate("[...document.scripts].map(s => s.src || 'inline: ' + s.textContent.slice(0, 60))")
    assert all(src.startswith(page.server.url) for src in scripts), scripts
    assert page.dialogs == []
