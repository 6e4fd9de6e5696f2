"""The trial: one cell of the matrix run in a fresh workspace against a fresh server. The trial
core (trial), its job (runner), the hosts that wrap the model (hosts), the model providers
(providers, with the reference agent), the key proxy for CLI hosts (keyproxy), recorded runs
converted into transcripts (recorded, recorded_streams), the workspace's state read after a
step (workspace_state) and the warm worker that forks trials (worker, delegate).

May import: cost, prepare, matrix, core, stats.
"""
