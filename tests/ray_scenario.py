"""Ray scenarios for tests/test_ray_backend.py, each run inside its own network and PID namespaces.

    unshare --net --pid --fork --mount-proc python tests/ray_scenario.py SCENARIO OUT.json -- SWEEP ARGS

The network namespace holds only a loopback interface, so every port Ray opens (Ray 2.x binds its
gRPC servers to all interfaces whatever node address it is given) is reachable from this machine
only; the PID namespace ends every process the scenario started (Ray's head, its nodes, their
workers) when this script exits, whatever happens.

Scenarios:
  cluster    a head and one more node (`ray start --address`), 1 CPU each; the sweep connects
             with --ray-address
  kill       a local Ray instance; once a run has saved a checkpoint, its worker gets kill -9
  node       the two-node cluster; once both runs have saved a checkpoint, the second node leaves
             (kill -9 of its raylet and everything under it)
  interrupt  a local Ray instance; once every run has saved a checkpoint, the driver gets SIGINT

OUT.json receives the sweep's exit code, stdout and stderr, and what the scenario did.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WAIT_S = 240  # generous: the CI machine may be busy; every wait polls a condition, none sleeps blind


def loopback_up() -> None:
    """`ip link set lo up`, without needing iproute2: a new network namespace starts with lo down."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, siocgifflags, request))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH14s", b"lo", flags | iff_up, b""))


def ray_command(*args: str) -> None:
    ray = str(Path(sys.executable).with_name("ray"))
    subprocess.run([ray, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=WAIT_S)


def start_cluster(temp_dir: str) -> str:
    address = "127.0.0.1:6379"
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    ray_command("start", "--head", "--port=6379", "--include-dashboard=false", f"--temp-dir={temp_dir}", *common)
    ray_command("start", f"--address={address}", *common)
    return address


def run_statuses(store: Path) -> list[dict]:
    statuses = []
    for path in store.glob("*/status.json"):
        try:
            statuses.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass  # being replaced this instant
    return statuses


def wait_for(condition, what: str) -> None:
    deadline = time.time() + WAIT_S
    while not condition():
        if time.time() > deadline:
            raise TimeoutError(f"waited {WAIT_S} s for {what}")
        time.sleep(0.2)


def checkpointed(status: dict, store: Path) -> bool:
    return status.get("status") == "running" and (store / status["run_id"] / "checkpoint.safetensors").exists()


def processes() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, command line)} of every process in this PID namespace."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue  # ended while being read
        found[int(stat.parent.name)] = (parent, cmdline)
    return found


def remove_second_node() -> list[int]:
    """kill -9 the raylet started last (the second node's) and every process under it."""
    table = processes()
    raylets = sorted(pid for pid, (_, cmdline) in table.items() if "/raylet " in cmdline or cmdline.startswith("raylet"))
    doomed, frontier = [], [raylets[-1]]
    while frontier:
        pid = frontier.pop()
        doomed.append(pid)
        frontier += [child for child, (parent, _) in table.items() if parent == pid]
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return doomed


def main() -> None:
    scenario, out = sys.argv[1], Path(sys.argv[2])
    sweep_args = sys.argv[sys.argv.index("--") + 1:]
    store = Path(os.environ["WORKBENCH_DATA"])
    loopback_up()
    # Ray's sockets live under its temp dir: a short path, since a Unix socket path has ~100 bytes
    temp_dir = tempfile.mkdtemp(prefix="wbray")
    command = [sys.executable, "-m", "workbench", "sweep", *sweep_args, "--backend", "ray", "--json", "--quiet"]
    report: dict = {"scenario": scenario}
    if scenario in ("cluster", "node"):
        command += ["--ray-address", start_cluster(temp_dir)]
    else:
        command += ["--workers", "2"]
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if scenario == "kill":
        wait_for(lambda: any(checkpointed(s, store) for s in run_statuses(store)), "a checkpointed run")
        victim = next(s for s in run_statuses(store) if checkpointed(s, store))
        os.kill(int(victim["pid"]), signal.SIGKILL)
        report["killed"] = {"run_id": victim["run_id"], "step": victim["step"], "pid": victim["pid"]}
    if scenario == "node":
        wait_for(lambda: sum(checkpointed(s, store) for s in run_statuses(store)) >= 2, "two checkpointed runs")
        running = {int(s["pid"]): s["run_id"] for s in run_statuses(store) if s.get("status") == "running"}
        report["removed"] = [running[pid] for pid in remove_second_node() if pid in running]
    if scenario == "interrupt":
        wait_for(lambda: sum(checkpointed(s, store) for s in run_statuses(store)) >= 2, "two checkpointed runs")
        driver.send_signal(signal.SIGINT)
    stdout, stderr = driver.communicate(timeout=WAIT_S * 2)
    report.update(returncode=driver.returncode, stdout=stdout, stderr=stderr[-4000:])
    out.write_text(json.dumps(report))


if __name__ == "__main__":
    main()
