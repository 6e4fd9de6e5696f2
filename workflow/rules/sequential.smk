# A run in waves (`trials: {min, max, until: decided}`; mcptrials.dag.waves): after each wave of
# a model, this checkpoint decides every tool against its host's baseline and names the next
# wave's cells in its record; the input functions below read the records, so Snakemake plans a
# wave once the one before it is decided, and a new invocation resumes where the records stand.
# A run with `trials: N` defines none of it: its DAG is the one it always had.
if SEQUENTIAL:
    from mcptrials.dag.waves import SEQUENTIAL_FILE, decide_params, wave_files, wave_record

    DECIDE_P = decide_params(M, RERUN)

    def previous_wave(model, wave):
        """The record of wave `wave` - 1 (None for the first); asks Snakemake to decide it first."""
        if wave == 1:
            return None
        return wave_record(checkpoints.decide.get(model=model, wave=str(wave - 1)).output[0])

    def wave_input(name):
        def files(wc):
            w = int(wc.wave)
            return wave_files(M, wc.model, w, previous_wave(wc.model, w), name)

        return files

    def sequential_input(name):
        """Record `name` of every trial every wave ran (with name None: the waves' records), model
        by model until a record says the waves are done."""

        def files(wc):
            out = []
            for model in M.models:
                wave, before = 1, None
                while True:
                    out += [SEQUENTIAL_FILE.format(model=model, wave=wave)] if name is None else []
                    out += [] if name is None else wave_files(M, model, wave, before, name)
                    before = wave_record(checkpoints.decide.get(model=model, wave=str(wave)).output[0])
                    if before["done"]:
                        break
                    wave += 1
            return out

        return files

    checkpoint decide:
        input:
            scored=wave_input("scored.json"),
            judged=wave_input("judged.json"),
            before=lambda wc: [] if wc.wave == "1" else SEQUENTIAL_FILE.format(model=wc.model, wave=int(wc.wave) - 1),
        output:
            SEQUENTIAL_FILE,
        params:
            p=lambda wc: DECIDE_P[wc.model],
        wildcard_constraints:
            wave="[0-9]+",
        retries: 0  # deterministic: the same scores decide the same way
        localrule: True
        conda:
            "../envs/mcptrials.yaml"
        log:
            "results/logs/decide/{model}/wave-{wave}.log",
        shell:
            "mcptrials decide --config \"$MCPTRIALS_CONFIG\" --model {wildcards.model:q} --wave {wildcards.wave}"
            " --results results --out {output:q} > {log:q} 2>&1"
