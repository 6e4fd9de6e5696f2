"""`mcptrials decide --model M --wave W`: the checkpoint of a run in waves (`trials: {min, max,
until: decided}`): after wave W of model M, each tool's decision against the baseline and the
cells of the next wave, written to results/sequential/M/wave-W.json (mcptrials.analyze.sequential)."""

from __future__ import annotations

from mcptrials.cli.common import add_config, load_config


def register(sub) -> None:
    p = sub.add_parser("decide", help="after a wave of a run in waves: decide each tool, plan the next wave")
    add_config(p)
    p.add_argument("--model", required=True)
    p.add_argument("--wave", type=int, required=True)
    p.add_argument("--results", default="results", help="the results folder (its runs/ and sequential/)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_decide)


def cmd_decide(args) -> int:
    from mcptrials.analyze.sequential import decide_wave
    from mcptrials.core.records import write_json

    rec = decide_wave(load_config(args), args.results, args.model, args.wave)
    write_json(args.out, rec)
    for e in rec["tools"]:
        why = e["state"] + (f": {e['decision']}" if e["state"] == "decided" else "")
        interval = "no complete trial yet" if e["lo"] is None else f"[{e['lo']:+.3f}, {e['hi']:+.3f}]"
        print(f"{args.model} {e['host']} {e['tool']}: {why} after {e['trials']} trial(s), {interval}")
    print(f"{args.out}: wave {args.wave}; " + ("done" if rec["done"] else f"next wave: {rec['next']}"))
    return 0
