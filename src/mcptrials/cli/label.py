"""`mcptrials label`: serve a local page (127.0.0.1) on which the reader labels a stratified,
seeded sample of the finished run's citation occurrences; each verdict is saved at once into the
config's locked/citation_labels.json and re-pinned in its lockfile (analyze.citation_labels).
`--repin --reason` pins a labels file changed on purpose by other means."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mcptrials.cli.common import add_config, load_config
from mcptrials.matrix.errors import ConfigError


def register(sub) -> None:
    p = sub.add_parser("label", help="label a sample of the run's citations by hand, on a local page")
    add_config(p)
    p.add_argument("--runs", default="results/runs", help="the finished trial records (results/runs)")
    p.add_argument("--checkouts", default="results/checkouts", help="the checkouts the run graded at")
    p.add_argument("--per-tool", type=int, default=30, help="occurrences drawn per model and tool (30)")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed, recorded with each label (0)")
    p.add_argument("--port", type=int, default=8765, help="the local port (0: any free one)")
    p.add_argument("--repin", action="store_true", help="pin the labels file as it is now, then exit")
    p.add_argument("--reason", help="with --repin: why the labels file changed")
    p.set_defaults(func=cmd_label)


def sample_items(m, runs, checkouts, per_tool: int, seed: int) -> list[dict]:
    """The sample with what the page shows of each: the answer's sentence and the cited lines."""
    from mcptrials.analyze.citation_labels import answer_context, draw_sample, file_context, occurrences
    from mcptrials.analyze.trial_rows import load_records
    from mcptrials.grade.answer_map import step_answers
    from mcptrials.grade.gittree import commit_tree

    records = load_records(m, runs)
    scenarios = {s.id: s.data for s in m.run_scenarios()}
    answers = {}
    for rec in records:
        k = rec["key"]
        mapped, _ = step_answers(rec["transcript"], scenarios[k["scenario"]]["steps"])
        steps = mapped if mapped is not None else rec["transcript"].get("steps") or []
        for st in steps:
            answers[(k["model"], k["host"], k["tool"], k["scenario"], k["trial"], st["index"])] = (
                st.get("answer_text") or ""
            )
    items = []
    for occ in draw_sample(occurrences(records), per_tool, seed):
        t = occ["trial"]
        answer = answers.get((t["model"], t["host"], t["tool"], t["scenario"], t["trial"], occ["step"]), "")
        try:
            lines = commit_tree(str(Path(checkouts) / t["repo"] / "tree"), occ["commit"]).lines(occ["file"])
            code, missing = file_context(lines, occ["lines"]), None
        except (ConfigError, KeyError, OSError) as e:
            code, missing = file_context(None, occ["lines"]), f"(not available: {e})"
        items.append({**occ, "answer": answer_context(answer, occ["span"]), "code": {**code, "missing": missing}})
    return items


def make_handler(items: list[dict], locked: Path, seed: int, per_tool: int):
    from mcptrials.analyze.citation_labels import LABELS, grader_ok, read_labels, save_label
    from mcptrials.report.label_page import label_page

    by_id = {it["id"]: it for it in items}
    session = {"reason": f"mcptrials label: seed {seed}, up to {per_tool} per model and tool"}

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: bytes, kind: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 (the http.server name)
            if self.path not in ("/", "/index.html"):
                return self._send(404, b"not found", "text/plain")
            done = {lab["id"]: lab["verdict"] for lab in (read_labels(locked) or {"labels": []})["labels"]}
            shown = [{k: v for k, v in it.items() if k != "strict"} | {"verdict": done.get(it["id"])} for it in items]
            page = label_page(shown, seed, per_tool, str(locked / LABELS))
            self._send(200, page.encode(), "text/html; charset=utf-8")

        def do_POST(self):  # noqa: N802
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                it = by_id[body["id"]]
                label = {
                    "id": it["id"],
                    "trial": it["trial"],
                    "step": it["step"],
                    "span": it["span"],
                    "file": it["file"],
                    "lines": it["lines"],
                    "commit": it["commit"],
                    "text": it["text"],
                    "grader_strict": it["strict"],
                    "grader_verified": grader_ok(it["strict"]),
                    "verdict": body["verdict"],
                    "seed": seed,
                    "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                }
                data = save_label(locked, label, session.pop("reason", None))
            except (KeyError, ValueError, TypeError) as e:
                return self._send(400, json.dumps({"error": f"bad label: {e}"}).encode(), "application/json")
            except ConfigError as e:
                return self._send(409, json.dumps({"error": str(e)}).encode(), "application/json")
            self._send(200, json.dumps({"n": len(data["labels"])}).encode(), "application/json")

        def log_message(self, format, *args):  # one line per label on stderr is enough
            if self.command == "POST":
                print(f"label: {args[0] if args else ''}", file=sys.stderr)

    return Handler


def cmd_label(args) -> int:
    from mcptrials.analyze.citation_labels import pin_labels, read_labels, LABELS

    m = load_config(args)
    if m.locked_dir is None:
        raise ConfigError(f"{args.config}: no `locked:` folder; the labels are kept under it, like the held-out gold")
    locked = Path(m.locked_dir)
    if args.repin:
        if not args.reason or not args.reason.strip():
            raise ConfigError("label --repin: --reason is required: say why the labels file changed")
        pin_labels(locked, args.reason.strip())
        print(f"{locked / LABELS}: pinned")
        return 0
    if args.per_tool < 1:
        raise ConfigError(f"--per-tool {args.per_tool}: draw at least one occurrence per model and tool")
    read_labels(locked)  # refuse to add to a labels file that drifted from its lock
    items = sample_items(m, args.runs, args.checkouts, args.per_tool, args.seed)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(items, locked, args.seed, args.per_tool))
    print(
        f"serving {len(items)} citation(s) on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)", flush=True
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
