"""Markup, event handlers and `javascript:` links planted in records: each payload, if it ran, would set
`window.__pwned`; `DANGEROUS` selects any element one of them could have made."""

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
