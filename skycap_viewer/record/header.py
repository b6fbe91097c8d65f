"""The header of one record: what the page shows above a rollout and every listing row starts with.

Built from the document alone (no sidecar), so the index computes it for every record and the
detail routes send the same one. `size` is what the trainer gets from the record, as the tables and
the drawer show it: `samples` sequences of `tokens` in all (characters without tokens), `trainable`
of them in the loss, and the `longest` path's size beside (never a ratio of two paths).
`samples_rule` is the rule the record's `samples` name (`all`, `final`, a custom one), or null when
the record has none and the viewer applies `all`. `reward_value` is the reward as the page colours
and sorts it (`fields.reward_as_number`).
"""

from skycap_viewer.record.fields import iso_time, reward_as_number, step_of, task_id, wire_id
from skycap_viewer.record.rollout import ABSENT, Rollout


def trajectory_header(rollout: Rollout, **context) -> dict:
    """What the page shows above a rollout; `context` adds run fields (run_id, project, revision)."""
    document = rollout.document
    meta = document.get("meta") or {}
    capture = document.get("capture") or {}
    nodes = rollout.nodes
    skycap = {
        "bridged": rollout.bridged,
        "unbridged_nodes": [wire_id(n) for n in rollout.unbridged_nodes],
        "retokenized": [wire_id(n) for n in rollout.retokenized_nodes],
        "truncated_nodes": [wire_id(n) for n in rollout.truncated_nodes],
        "shadowed": sum(1 for n in nodes if n.get("shadowed_by") is not None),
        "failures": len(document.get("failures") or []),
    }
    if rollout.bridged[ABSENT]:
        skycap["inferred_unbridged"] = [wire_id(n) for n in rollout.inferred_unbridged_nodes]
    header = {
        "id": document["id"],
        "task_id": task_id(meta),
        "step": step_of(meta),
        "mode": rollout.stated_mode,
        "status": document["status"],
        "ended": document.get("ended"),
        "meta": meta,
        "annotations": document.get("annotations") or {},
        "created_at": iso_time(document.get("created_at")),
        "finished_at": iso_time(document.get("finished_at")),
        "tokenizer": capture.get("tokenizer"),
        "capture": {
            **capture,
            "node_count": len(nodes),
            "exchange_count": len(rollout.calls),
            "failure_count": skycap["failures"],
        },
        "retries": document.get("retries") or {},
        "sidecars": {
            kind: {name: {"dtype": a["dtype"], "shape": a["shape"]} for name, a in m["arrays"].items()}
            for kind, m in rollout.sidecars.items()
        },
        "missing_sidecars": rollout.missing_sidecars,
        "record_problems": rollout.record_problems,
        "flags": rollout.flags,
        "skycap": skycap,
        "size": {"unit": rollout.unit, "tokens": rollout.tokens, "trainable": rollout.trainable,
                 "longest": rollout.longest, "samples": len(rollout.samples)},
        "samples_rule": rollout.graph.rule,
        "reward_value": reward_as_number(document.get("annotations")),
    }
    header.update(context)
    return header
