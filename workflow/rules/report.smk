LOCKED_FILES = sorted(str(p) for p in Path("locked").rglob("*") if p.is_file())
HELDOUT_SCENARIOS = sorted(
    p.stem for p in Path("locked/scenarios").glob("*.yaml") if p.stem in M.scenarios
)


# Any missing, modified or unlisted file under locked/ fails this rule, and the report needs it.
rule verify_lock:
    input:
        LOCKED_FILES,
    output:
        "results/heldout/lock_verified.json",
    localrule: True
    log:
        "results/logs/verify_lock.log",
    shell:
        "mcptrials verify-lock --locked locked --out {output} 2> {log}"


# Re-judge the frozen held-out transcripts with the current rubric, prompt and judge.
rule heldout:
    input:
        verified="results/heldout/lock_verified.json",
    output:
        "results/heldout/agreement.json",
    params:
        cfg=CONFIG_PATH,
        judge=JUDGE_HASH,
        prompt=JUDGE_PROMPT_HASH,
        # the current rubric of each held-out scenario: tuning it re-checks the agreement
        rubrics={s: RUBRIC_HASH[s] for s in HELDOUT_SCENARIOS},
    localrule: True
    log:
        "results/logs/heldout.log",
    shell:
        "mcptrials heldout --config {params.cfg} --locked locked --out {output} > {log} 2>&1"


# The report takes the lockfile and every locked file too: drift keeps an old report stale.
rule report:
    input:
        aggregate=rules.aggregate.output,
        heldout="results/heldout/agreement.json",
        locked=LOCKED_FILES,
    output:
        html="results/report/index.html",
        md="results/report/report.md",
    params:
        cfg=CONFIG_PATH,
    localrule: True
    log:
        "results/logs/report.log",
    shell:
        "mcptrials report --config {params.cfg} --aggregate results/aggregate --heldout {input.heldout}"
        " --runs results/runs --out-dir results/report > {log} 2>&1"
