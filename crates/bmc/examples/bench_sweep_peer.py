#!/usr/bin/env python3
"""The Redfish peer of `bench_sweep`: a Python `requests` thread-pool sweep doing the requests Lifeline's
health-rollup sweep does on a BMC it has never seen (service root, session login, Systems collection, the
ComputerSystem, the Chassis it links to, logout), one `requests.Session` (keep-alive) per BMC, certificates
not verified (the simulator's are self-signed).

    python3 bench_sweep_peer.py --threads 64 HOSTS_FILE
HOSTS_FILE: one `https://ADDR:PORT` per line. Prints `ok N` and `fail N` and the first failure.
"""
import argparse
import concurrent.futures
import sys

import requests
import urllib3

urllib3.disable_warnings()


def visit(base, user, password, timeout):
    s = requests.Session()
    # verify=False on each request: a REQUESTS_CA_BUNDLE in the environment would override a session's.
    try:
        s.get(base + "/redfish/v1", timeout=timeout, verify=False).raise_for_status()
        r = s.post(base + "/redfish/v1/SessionService/Sessions",
                   json={"UserName": user, "Password": password}, timeout=timeout, verify=False)
        r.raise_for_status()
        s.headers["X-Auth-Token"] = r.headers["X-Auth-Token"]
        location = r.headers.get("Location", "")
        try:
            systems = s.get(base + "/redfish/v1/Systems", timeout=timeout, verify=False)
            systems.raise_for_status()
            member = systems.json()["Members"][0]["@odata.id"]
            system = s.get(base + member, timeout=timeout, verify=False)
            system.raise_for_status()
            doc = system.json()
            power = doc.get("PowerState")
            status = doc.get("Status", {})
            if "HealthRollup" not in status:
                for c in doc.get("Links", {}).get("Chassis", []):
                    s.get(base + c["@odata.id"], timeout=timeout, verify=False).raise_for_status()
            return power is not None, None
        finally:
            if location:
                url = location if location.startswith("http") else base + location
                s.delete(url, timeout=timeout, verify=False)
    except Exception as e:  # a failed BMC is a row, not the end of the sweep
        return False, f"{base}: {e}"
    finally:
        s.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=64)
    p.add_argument("--user", default="admin")
    p.add_argument("--password", default="password")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("hosts")
    a = p.parse_args()
    bases = [l.strip() for l in open(a.hosts) if l.strip()]
    ok, failures = 0, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.threads) as pool:
        for good, err in pool.map(lambda b: visit(b, a.user, a.password, a.timeout), bases):
            ok += good
            if err:
                failures.append(err)
    print(f"ok {ok}")
    print(f"fail {len(bases) - ok}")
    if failures:
        print(f"first failure: {failures[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
