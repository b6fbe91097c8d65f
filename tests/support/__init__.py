"""What the tests share besides fixtures: a test module imports these, never another test module or a
conftest (`tests/test_layers.py` holds it; `conftest.py` files hold fixtures and hooks only).

Where things are and what skycap says of them:
- `corpus`: where the skycap v1 corpus is, and private copies of it or of some of its runs.
- `oracle`: skycap's own answers about the corpus (`oracle.json`, `_notes.json`), as the tests read them.

The viewer, run as a user runs it or in process:
- `server_process`: the real server in a subprocess on an ephemeral port (the bench starts it too).
- `in_process`: the real handler over a socket pair, no port; `in_process_fixture` makes a module's `web`.
- `cli`: a command run as `python -m skycap_viewer`.
- `small_parts`: the real `Api` with parts forced small, so paging is walked.
- `api_paths`: an API path named from the server's route table (the bench's paths too).

Records written as skycap writes them:
- `records`: read, write and copy a record (one `copy_record`), token and text records made from text.
- `bad_records`: the damaged and hostile records, and what the viewer must make of each.
- `chain_record`: one long chain of nodes, whose answers come in parts.
- `timeline_record`: calls that overlap, on a fixed clock.
- `agent_records`: an agent's rollout whose tool calls all reuse one id (`call_0`), and a result that answers none.
- `step_timeline_run`: one step's rollouts with known call times, and a run index marking attempts.
- `sampled_records`: records given a `samples` field.
- `search_records`: records made for search, and the text a search reaches, rebuilt from the docs' rule.
- `media_records`: a record made heavy with media.
- `mirrors`: a run index whose rows name mirrors.
- `skyrl_capture`: a directory skyrl-capture wrote, which is no run.
- `terminal_text`: text that would take over a terminal.

Measuring and reading answers:
- `process_memory`: the resident memory of a process tree, sampled while a test runs.
- `s3_store`: a real S3 server on loopback (moto) for records in object storage.
- `stalled_clients`: clients that ask for a long answer and never read it.
- `listings`: the API's listings read whole, and what the tests read out of them.
- `common_prefix`: where two rollouts' token streams part, counted from the raw sidecars.
"""
