"""The sandbox of ``grade``: the fork server, each run's supervisor and worker, the watch kept on them, the
signed channel between worker and grader, and what keeps a check honest inside the worker (guard, integrity)."""
