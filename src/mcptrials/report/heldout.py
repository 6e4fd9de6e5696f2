"""The held-out check in the report: the verdict against the config's judge.threshold, whether
the config has an anchor at all, the refusal when judge.strict is true, and its section."""

from __future__ import annotations

from mcptrials.report.formats import f3
from mcptrials.report.render import Doc, Table


NO_ANCHOR = "no held-out anchor for this run"
STRICT_FIX = "fix the rubric or prompt, or re-grade gold and re-anchor with `mcptrials lock --reason ...`"


def heldout_state(
    agreement: dict | None,
    lock: dict | None,
    threshold: float,
    strict: bool,
    lockfile_sha256: str | None = None,
    judge_provider: str | None = None,
) -> dict:
    """What the report says about the held-out check, judged against the config's judge.threshold.

    agreement: results/heldout/agreement.json, or None when it was not computed. With an anchor
    (`anchor` "locked"; the first shape, without `anchor`, is read the same way) the verdict is
    passes = rho is not None and rho >= threshold, computed here: judge.threshold reruns only
    the report. Without one (`anchor` null) there is nothing to check: the report says so with
    the agreement's reason, and judge.strict does not fail the run. lockfile_sha256: the sha256 of
    this config's lockfile; an agreement computed on another lockfile is flagged. judge_provider
    "reference": the warning says, in the same line, that the judge is the deterministic stand-in.
    Returns {line, lock_line, warnings, notes, anchored, passes, refuse}; `refuse` is the
    message `mcptrials report` exits with when judge.strict is true and the check fails.
    """
    warnings, notes, refuse = [], [], None
    anchored = agreement is not None and agreement.get("anchor", "locked") is not None
    passes = None
    if agreement is None:
        line = "not computed (no agreement file): the judge has not been checked against gold"
        warnings.append(
            "The held-out agreement was not computed: the judge is unchecked against gold (run `mcptrials heldout`)."
        )
        if strict:
            refuse = (
                "the held-out agreement was not computed (no agreement file) and judge.strict is true: "
                "run the held-out check (`mcptrials heldout`) before the report"
            )
    elif not anchored:
        reason = agreement.get("reason") or NO_ANCHOR
        line = reason if reason.startswith(NO_ANCHOR) else f"{NO_ANCHOR}: {reason}"
        notes.append(
            f"{line[0].upper()}{line[1:]}. The judge's quality scores are not checked against gold for "
            "this config; judge.strict does not fail a run without an anchor."
        )
    else:
        rho, n = agreement.get("rho"), agreement.get("n")
        passes = rho is not None and rho >= threshold
        ci = "" if agreement.get("lo") is None else f", 95% interval [{agreement['lo']:.2f}, {agreement['hi']:.2f}]"
        where = f" of the anchor {agreement['anchor']}" if isinstance(agreement.get("anchor"), str) else ""
        line = f"Spearman rho {f3(rho)} (n={n}{ci}) against gold{where}; judge.threshold {threshold}: " + (
            "passes" if passes else "BELOW the threshold" if rho is not None else "undefined"
        )
        if not passes:
            what = (
                f"rho = {f3(rho)} (n={n}) is below judge.threshold {threshold}"
                if rho is not None
                else f"rho is undefined (n={n}: too few items, or constant scores)"
            )
            if judge_provider == "reference":
                warnings.append(
                    f"Held-out judge agreement {what}. This run's judge is the deterministic reference judge "
                    "(key points and gold citations, no language model): the figure says how far that "
                    "stand-in is from hand grading; with a model judge the same warning would mean its "
                    "quality scores may not be trusted."
                )
            else:
                warnings.append(f"Held-out judge agreement {what}: the judge's quality scores may not be trusted.")
            if strict:
                agrees = (
                    f"the judge agrees with gold at rho {f3(rho)}, n={n}, below judge.threshold {threshold}"
                    if rho is not None
                    else f"the judge's agreement with gold is undefined (rho none, n={n})"
                )
                refuse = f"{agrees}, and judge.strict is true: {STRICT_FIX}"
    if (
        anchored
        and agreement is not None
        and lockfile_sha256
        and agreement.get("lockfile_sha256") not in (None, lockfile_sha256)
    ):
        warnings.append(
            "The held-out agreement was computed on another lockfile than this config's anchor: "
            "rerun `mcptrials heldout` for this config."
        )
    if not anchored and agreement is not None:
        lock_line = "nothing to verify (no held-out anchor)"
    elif lock is None:
        lock_line = "not verified (no lock_verified.json): the held-out set may have drifted"
        warnings.append("The held-out lock was not verified (run `mcptrials verify-lock`).")
    else:
        lock_line = f"verified: {len(lock.get('files', {}))} file(s) match the lockfile (sha256 {str(lock.get('lockfile_sha256'))[:12]})"
        if (
            agreement
            and agreement.get("lockfile_sha256")
            and agreement["lockfile_sha256"] != lock.get("lockfile_sha256")
        ):
            lock_line += "; but the agreement was computed on a different lockfile"
            warnings.append(
                "The held-out agreement was computed on a different lockfile than the one verified: rerun `mcptrials heldout`."
            )
    return {
        "line": line,
        "lock_line": lock_line,
        "warnings": warnings,
        "notes": notes,
        "anchored": anchored,
        "passes": passes,
        "refuse": refuse,
    }


def missing_anchor(m) -> str | None:
    """Why the config has no held-out anchor (its `locked:` is null, or names a folder without
    files), or None when it has one. Without an anchor the report reads no agreement file: one
    left in results/heldout by another config must never be quoted for this one."""
    if m.locked_dir is None:
        return f"{NO_ANCHOR}: the config names no `locked:` folder"
    if not m.locked_dir.is_dir() or not any(p.is_file() for p in m.locked_dir.rglob("*")):
        return f"{NO_ANCHOR}: its `locked:` folder {m.config['locked']} holds no locked files"
    return None


class StrictHeldout(Exception):
    """judge.strict is true and the held-out check failed: no report is written."""


def add_heldout(doc: Doc, agreement: dict | None, held: dict) -> None:
    doc.h(2, "Held-out judge agreement", "heldout")
    doc.p(held["line"])
    agreement = agreement or {}  # None: not computed, and then not anchored either
    if held["anchored"] and agreement.get("method"):
        doc.p("Method: " + agreement["method"], "note")
    doc.p("Lock: " + held["lock_line"])
    if held["anchored"] and agreement.get("items"):
        t = Table(["item", "scenario", "gold", "judged"])
        for it in agreement["items"]:
            t.add(it["id"], it["scenario"], f3(it["gold"]), f3(it["judged"]))
        doc.table(t, "heldout-items")
