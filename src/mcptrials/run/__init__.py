"""The trial: one cell of the matrix run in a fresh workspace against a fresh server. The trial
core (trial), its job (runner), the hosts that wrap the model (hosts, over mcptrials.providers),
the key proxy for CLI hosts (keyproxy), recorded runs converted into transcripts (recorded,
recorded_streams) and the workspace's state read after a step (workspace_state). The warm
worker that forks trials runs commands, so it lives in the command layer (cli.worker, cli.delegate).

May import: providers, cost, prepare, matrix, core, stats.
"""
