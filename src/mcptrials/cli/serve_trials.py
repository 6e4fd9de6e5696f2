"""`mcptrials serve-trials`: the warm trial worker (mcptrials.cli.worker) on a Unix socket."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser(
        "serve-trials",
        help="a warm worker that runs `mcptrials run-trial` requests in forked children (see MCPTRIALS_WORKER)",
    )
    p.add_argument("--socket", required=True, help="the Unix socket to listen on, e.g. results/.worker.sock")
    p.add_argument(
        "--tcp-file",
        help="also listen on 127.0.0.1 for the workflow's shell client, and write the port and a token here "
        "(mode 0600), e.g. results/.worker.tcp",
    )
    p.add_argument("--watch-pid", type=int, help="stop when this process (e.g. Snakemake) is gone")
    # run_argv and warm_parsers: set by the CLI's parser (cli.main, the entry point each child runs)
    p.set_defaults(func=cmd_serve_trials)


def cmd_serve_trials(args) -> int:
    from mcptrials.cli.worker import serve

    args.warm_parsers(["run-trial", "score", "judge"])  # the commands the worker runs, parsed in its children
    return serve(args.socket, args.run_argv, args.watch_pid, args.tcp_file)
