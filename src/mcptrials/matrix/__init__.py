"""The matrix a user declares: config.yaml and the scenario files, loaded and checked.

    config        load_matrix: read the config file(s), check across sections, build the Matrix
    matrix        the Matrix: the loaded config and scenarios, what the stages ask of them
    schema        the JSON Schemas applied with their defaults, violations as ConfigError lines
    scenario      a scenario file loaded and checked; the parts each rerun key depends on
    tools         tool entries: baseline, recorded arms, variants, `{project}`, pinned installs
    specs         the typed, frozen view of the validated config
    projectfiles  the `{project}` placeholder of tool entries
    errors        ConfigError (file, field, fix)
    hashing       canonical_hash and file_sha256, what the rerun keys are made of

May import: core, stats.
"""
