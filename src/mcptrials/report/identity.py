"""The main page's "The run" section: what ran (models, hosts, tools, repos, scenarios, judge,
weights, costs, sandbox) and the held-out state, one key-value table."""

from __future__ import annotations

from mcptrials.report.render import Doc, Table
from mcptrials.core.rows import Summary


def sandbox_line(ident: dict) -> str:
    """How the processes under test ran, per tool; an unsandboxed one is flagged."""
    parts, flagged = [], []
    for name, tl in ident["tools"].items():
        seen = tl.get("sandbox") or ["unrecorded"]
        parts.append(f"{name}: {', '.join(seen)}")
        if "none" in seen:
            flagged.append(name)
    line = f"config sandbox: {ident.get('sandbox', 'unrecorded')}; " + "; ".join(parts)
    if flagged or ident.get("sandbox") == "none":
        line += (
            f" — WARNING: {', '.join(flagged) or 'the state checks'} ran unsandboxed (sandbox: none): "
            "a server could read the answer key and the API key"
        )
    return line


def recorded_tool_line(name: str, tl: dict) -> str:
    """A recorded arm in the identity table: what it is known from, and every recording's sha256."""
    recs = tl.get("recordings") or {}
    shas = ", ".join(f"{k} {(v or 'missing')[:12]}" for k, v in recs.items()) or "none"
    names = tl.get("tools_list") or []
    listed = (
        "tools/list unknown (no recording lists its tools)"
        if tl.get("tools_list_from") in ([], ["unknown"])
        else f"tools/list from {' and '.join(tl['tools_list_from'])}: {', '.join(names) or 'no MCP tools'}"
    )
    return (
        f"recorded runs of {name} (source: {tl.get('source') or 'not given'}; no server here); {listed}; "
        f"{len(recs)} recording(s), sha256: {shas}"
    )


def add_identity(doc: Doc, s: Summary, held: dict) -> None:
    ident = s["identity"]
    doc.h(2, "The run", "identity")
    t = Table(["", ""], cls="kv")
    for name, mdl in ident["models"].items():
        t.add("model " + name, mdl["label"])
    t.add("hosts", ", ".join(ident["hosts"]) or "–")
    t.add("harness", ", ".join(ident["harness_versions"]) or "–")
    for name, tl in ident["tools"].items():
        if tl["transport"] == "none":
            desc = "no server: the harness's read_file / grep / list_files only"
        elif tl["transport"] == "recorded":
            desc = recorded_tool_line(name, tl)
        else:
            server = " ".join(tl["server_name"]) or "(server name not reported)"
            ver = ", ".join(tl["server_version"]) or "?"
            desc = f"{server} {ver} (configured version {tl['version_label'] or '–'}, {tl['transport']})"
            if tl.get("variant_of"):
                desc += (
                    f"; description variant of {tl['variant_of']} (its server behind the mcptrials proxy, "
                    f"overrides sha256 {', '.join(h[:12] for h in tl.get('overrides_sha256', [])) or '–'})"
                )
            if len(tl["tools_sha256"]) > 1:
                desc += f"; WARNING: {len(tl['tools_sha256'])} different tool lists seen"
        t.add("tool " + name, desc)
    t.add("sandbox", sandbox_line(ident))
    for name, rp in ident["repos"].items():
        seen = "" if rp["commits_seen"] in ([], [rp["commit"]]) else f" (records show {', '.join(rp['commits_seen'])})"
        t.add("repo " + name, f"{rp['url']} @ {rp['commit']}{seen}")
    t.add(
        "scenarios", f"{len(ident['scenarios'])} ({', '.join(ident['scenarios'])}); splits {', '.join(ident['splits'])}"
    )
    t.add("scenario set sha256", ident["scenario_set_sha256"])
    seq = s.get("sequential")  # a run in waves: its trials per cell depend on the decisions
    t.add(
        "trials per cell", f"{seq['min']} to {seq['max']}, in waves (see Trials in waves)" if seq else ident["trials"]
    )
    j = ident["judge"]
    temp = "n/a" if j["provider"] == "reference" else ", ".join(j["temperature"]) or "–"
    t.add(
        "judge",
        f"{j['label']}, {j['repeats']} repeat(s), temperature {temp}, "
        f"prompt sha256 {', '.join(p[:12] for p in j['prompt_sha256']) or '–'}",
    )
    w = ident["weights"]
    t.add("fairness", " + ".join(f"{w[k]:.2f} {k}" for k in ("keyword", "quality", "citation", "efficiency") if k in w))
    costs = ident["costs"]
    t.add(
        "costs",
        f"{costs['method']} (pricing sha256 {costs['pricing_sha256'][:12]}; priced: "
        f"{', '.join(costs['priced_models']) or 'none'})",
    )
    t.add("intervals", s["methods"]["interval"])
    t.add("held-out agreement", held["line"])
    t.add("held-out lock", held["lock_line"])
    if ident.get("started"):
        t.add("time", f"{ident['started']} to {ident['ended']}")
    doc.table(t, "identity-table")
