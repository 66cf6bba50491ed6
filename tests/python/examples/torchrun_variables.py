"""Starts ``--nproc`` copies of a command on this host with the variables torchrun gives its
workers (MASTER_ADDR, MASTER_PORT on a free port, RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE), as Debian's torchrun 1.13 would if it started on Python 3.11. Their output
goes to ours, rank 0's unprefixed; exits with the first non-zero status of a rank, or 0."""
import argparse
import os
import socket
import subprocess
import sys
import threading


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def relay(process: subprocess.Popen, prefix: str) -> None:
    for line in process.stdout:
        sys.stdout.write(prefix + line)
        sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    port = str(free_port())
    processes, relays = [], []
    for rank in range(args.nproc):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank),
                   WORLD_SIZE=str(args.nproc), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(args.nproc))
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        processes.append(process)
        relays.append(threading.Thread(target=relay, args=(process, "" if rank == 0 else f"[{rank}] ")))
        relays[-1].start()
    codes = [p.wait() for p in processes]
    for thread in relays:
        thread.join()
    return next((code for code in codes if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
