#!/usr/bin/env python3
"""The Redfish peer of `bench_sweep`: a Python `requests` thread-pool sweep doing the requests Lifeline's
health sweep does with the CLI's defaults on a BMC it has never seen: service root, session login, Systems
collection, the ComputerSystem, the Chassis it links to (no HealthRollup), and the newest events (Managers
and Systems, their LogServices, every SEL-like or event log service, its Entries), then logout. One
`requests.Session` (keep-alive) per BMC, requests one after another as such scripts are written,
certificates not verified (the simulator's are self-signed).

    python3 bench_sweep_peer.py --threads 64 [--events 3] HOSTS_FILE
HOSTS_FILE: one `https://ADDR:PORT` per line. Prints `ok N` and `fail N` and the first failure.
"""
import argparse
import concurrent.futures
import sys

import requests
import urllib3

urllib3.disable_warnings()

NOT_EVENTS = ("journal", "dump", "postcode", "hostlogger", "audit", "crash", "fault")


def event_log(service):
    """Whether a LogService holds the event history (the same rule as Lifeline's `LogService::kind`)."""
    t = (service.get("LogEntryType") or "").lower()
    i = (service.get("Id") or "").lower()
    n = (service.get("Name") or "").lower()
    if t == "sel" or i in ("sel", "ipmisel") or "system event log" in n:
        return True
    if any(w in i for w in NOT_EVENTS):
        return False
    return t == "event" or i in ("eventlog", "event", "iml", "iel") or any(
        x in n for x in ("event log", "integrated management log", "eventlog"))


def visit(base, user, password, timeout, events):
    s = requests.Session()

    def get(path):
        # verify=False on each request: a REQUESTS_CA_BUNDLE in the environment would override a session's.
        r = s.get(base + path, timeout=timeout, verify=False)
        r.raise_for_status()
        return r.json()

    def members(path):
        return [get(m["@odata.id"]) if len(m) == 1 else m for m in get(path).get("Members", [])]

    try:
        root = get("/redfish/v1")
        r = s.post(base + "/redfish/v1/SessionService/Sessions",
                   json={"UserName": user, "Password": password}, timeout=timeout, verify=False)
        r.raise_for_status()
        s.headers["X-Auth-Token"] = r.headers["X-Auth-Token"]
        location = r.headers.get("Location", "")
        try:
            systems = members(root["Systems"]["@odata.id"])
            doc = systems[0]
            power = doc.get("PowerState")
            if "HealthRollup" not in doc.get("Status", {}):
                for c in doc.get("Links", {}).get("Chassis", []):
                    get(c["@odata.id"])
            if events > 0:
                holders = [m for m in members(root["Managers"]["@odata.id"])] if "Managers" in root else []
                holders += systems
                for h in holders:
                    if "LogServices" not in h:
                        continue
                    for svc in members(h["LogServices"]["@odata.id"]):
                        if event_log(svc) and "Entries" in svc:
                            entries = get(svc["Entries"]["@odata.id"]).get("Members", [])
                            entries.sort(key=lambda e: e.get("Created", ""), reverse=True)
                            _ = entries[:events]
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
    p.add_argument("--events", type=int, default=3)
    p.add_argument("hosts")
    a = p.parse_args()
    bases = [l.strip() for l in open(a.hosts) if l.strip()]
    ok, failures = 0, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.threads) as pool:
        for good, err in pool.map(lambda b: visit(b, a.user, a.password, a.timeout, a.events), bases):
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
