"""A worker process for test_outbox_crash.py: delivers the outbox at
argv[1] (lease_timeout argv[2] seconds) until nothing is pending or leased;
argv[1] may be a redis:// URL: the Redis outbox "crash" (sync normal: the
suite's redis-server keeps no AOF).
Run as ``python worker_main.py PATH LEASE_TIMEOUT N [poison]``; killed with
SIGKILL by the test mid-delivery, then started again. With ``poison``, the
job "poison" kills its own worker (SIGKILL) every time it is delivered: the
entry that crashes every worker."""

from __future__ import annotations

import os
import signal
import sys

import mulligan


def main() -> int:
    path, lease_timeout = sys.argv[1], float(sys.argv[2])
    redis = {"name": "crash", "sync": "normal"} if path.startswith("redis://") else {}
    box = mulligan.Outbox(path, lease_timeout=lease_timeout, policy={"attempts": 5}, **redis)
    if sys.argv[4:] == ["poison"]:
        box.register("poison", lambda payload, key: os.kill(os.getpid(), signal.SIGKILL))
    box.run_worker(worker=f"worker-{sys.argv[3]}", batch=1, poll_interval=0.05, until_idle=True)
    box.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
