"""Everything before a trial: the repository checked out at its pinned commit (checkout), each
server installed (install) and indexed (index), its tools/list recorded (snapshot); and the
machinery those stages share with the trial: starting a server (servers) in its sandbox
(sandbox) behind the description-variant relay (proxy), the harness's built-in tools
(builtins), the definitions a model is shown (tooldefs) and what they cost in tokens
(definition_tokens); the demo's git bundle (demo_repo).

May import: matrix, core, stats.
"""
