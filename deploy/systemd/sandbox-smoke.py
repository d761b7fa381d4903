#!/usr/bin/env python3
"""Starts `lifeline serve` the way lifeline.service confines it, without systemd as PID 1 (a container, CI).

Approximates the unit's sandbox with the kernel's own primitives: a private mount namespace (unshare -m)
with / remounted read-only (ProtectSystem=strict), a fresh /tmp (PrivateTmp=), a writable 0700 state
directory owned by the service user (StateDirectory=), then setpriv to an unprivileged uid with an empty
capability bounding set and no_new_privs (User=, CapabilityBoundingSet=, NoNewPrivileges=). It listens on a
notify socket like systemd does (Type=notify, WatchdogSec=) and checks: READY=1 with MAINPID, two WATCHDOG=1
pings, /healthz and /readyz answer, SIGTERM gives STOPPING=1 and exit 0. Needs root, unshare and setpriv
(util-linux). Usage: sandbox-smoke.py LIFELINE_BIN INVENTORY WORKDIR (WORKDIR outside /tmp).
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

SANDBOX = r"""
set -e
mount --make-rprivate /
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir /tmp/state && chown 65534:65534 /tmp/state && chmod 700 /tmp/state
mount -o remount,bind,ro /
if touch /etc/.lifeline-sandbox-probe 2>/dev/null; then echo "/ is still writable" >&2; exit 1; fi
exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs \
  env -i HOME=/tmp/state LIFELINE_DATA_DIR=/tmp/state LIFELINE_SEAL_KEY=/tmp/state/seal.key \
  NOTIFY_SOCKET="$NOTIFY_SOCKET" WATCHDOG_USEC="$WATCHDOG_USEC" "$@"
"""


def main() -> int:
    binary, inventory, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    shutil.copy(binary, f"{work}/lifeline")
    shutil.copy(inventory, f"{work}/inventory.toml")
    with open(f"{work}/lifeline.toml", "w") as f:
        f.write('inventory = "inventory.toml"\n[server]\nsweep-interval = "0s"\nconsole-logging = false\n')
    for p in (work, f"{work}/lifeline", f"{work}/inventory.toml", f"{work}/lifeline.toml"):
        os.chmod(p, 0o755)
    sock_path = f"{work}/notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    os.chmod(sock_path, 0o777)
    sock.settimeout(60)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="2000000")
    child = subprocess.Popen(
        ["unshare", "-m", "sh", "-c", SANDBOX, "sandbox", f"{work}/lifeline", "serve", "--plain-http",
         "--listen", f"127.0.0.1:{port}", "--config", f"{work}/lifeline.toml"],
        env=env, stdout=subprocess.DEVNULL)
    try:
        ready = sock.recv(512).decode()
        # unshare, sh and setpriv each exec the next: the server is the process we started.
        assert ready.startswith("READY=1") and f"MAINPID={child.pid}" in ready, ready
        pings = 0
        t0 = time.time()
        while pings < 2:
            if sock.recv(512).decode() == "WATCHDOG=1":
                pings += 1
        took = time.time() - t0
        assert took < 4, f"two watchdog pings took {took:.1f} s (period 2 s)"
        for path, want in (("/healthz", b"ok\n"), ("/readyz", b"ready\n")):
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5).read()
            assert body == want, (path, body)
        child.terminate()
        assert sock.recv(512).decode() == "STOPPING=1"
        code = child.wait(30)
        assert code == 0, f"exit {code}"
    finally:
        if child.poll() is None:
            child.kill()
    print(f"READY=1, 2 watchdog pings in {took:.1f} s, /healthz and /readyz, STOPPING=1, exit 0 "
          "(read-only /, private /tmp, uid 65534, no capabilities, no_new_privs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
