"""Each tool's tools/list, BASE against HEAD (`mcptrials compare`, step 5): tools added and
removed, changed descriptions and changed input schemas (properties added, removed, changed;
required), and the new name a removed tool probably got.
"""

from __future__ import annotations

from mcptrials.matrix.hashing import canonical_hash

DESCRIPTION_CHARS = 160


def _props(schema) -> dict:
    return (schema or {}).get("properties") or {} if isinstance(schema, dict) else {}


def schema_change(old, new) -> str:
    """A short account of how an input schema changed: properties added, removed, changed, required."""
    po, pn = _props(old), _props(new)
    parts = []
    if set(pn) - set(po):
        parts.append("added " + ", ".join(sorted(set(pn) - set(po))))
    if set(po) - set(pn):
        parts.append("removed " + ", ".join(sorted(set(po) - set(pn))))
    changed = sorted(k for k in set(po) & set(pn) if canonical_hash(po[k]) != canonical_hash(pn[k]))
    if changed:
        parts.append("changed " + ", ".join(changed))
    ro, rn = sorted((old or {}).get("required") or []), sorted((new or {}).get("required") or [])
    if ro != rn:
        parts.append(f"required {ro} -> {rn}")
    return "; ".join(parts) or "changed (outside its properties)"


def tools_list_diff(base_snap: dict | None, head_snap: dict | None) -> dict:
    """What changed in one tool's tools/list between two snapshots (tools.json of snapshot.py):
    added and removed tool names, changed descriptions (old, new), changed input schemas, the
    server version and tools_sha256 of each side, and a server that did not start."""
    b = {t["name"]: t for t in (base_snap or {}).get("tools", [])}
    h = {t["name"]: t for t in (head_snap or {}).get("tools", [])}
    both = sorted(set(b) & set(h))
    return {
        "added": sorted(set(h) - set(b)),
        "removed": sorted(set(b) - set(h)),
        "descriptions": [
            {"tool": n, "base": b[n].get("description") or "", "head": h[n].get("description") or ""}
            for n in both
            if (b[n].get("description") or "") != (h[n].get("description") or "")
        ],
        "schemas": [
            {"tool": n, "change": schema_change(b[n].get("input_schema"), h[n].get("input_schema"))}
            for n in both
            if canonical_hash(b[n].get("input_schema")) != canonical_hash(h[n].get("input_schema"))
        ],
        "server_version": [(base_snap or {}).get("server_version"), (head_snap or {}).get("server_version")],
        "tools_sha256": [(base_snap or {}).get("tools_sha256"), (head_snap or {}).get("tools_sha256")],
        "error": [(base_snap or {}).get("error"), (head_snap or {}).get("error")],
        "snapshot": [base_snap is not None, head_snap is not None],
    }


def renamed_to(name: str, base_snap: dict, head_snap: dict) -> str | None:
    """The HEAD tool that a removed BASE tool probably became: a new name with the same input schema."""
    b = {t["name"]: t for t in base_snap.get("tools", [])}
    h = {t["name"]: t for t in head_snap.get("tools", [])}
    if name not in b:
        return None
    same = [
        n
        for n in sorted(set(h) - set(b))
        if canonical_hash(h[n].get("input_schema")) == canonical_hash(b[name].get("input_schema"))
    ]
    return same[0] if len(same) == 1 else None


def cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"
