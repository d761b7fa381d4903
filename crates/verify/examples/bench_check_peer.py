#!/usr/bin/env python3
"""The peer of `bench_check`: an NHC-style health check script doing the same reads as Lifeline's check.

Per rail (in the same order as `lifeline_verify::run`): port exists, state, phys_state, rate, link_layer,
the GID table until the rail's RoCEv2 address (plus its type and ndev), the netdev MTU, rp_filter (all and
the interface), the error counters and the recorded `ethtool -S` output twice, an interval apart; the
default route; gpus.json (NVML's place on a node without a driver). Each value is judged against the same
policy the bench gives Lifeline (policy.json beside the tree). Prints one JSON line: checks, failures.

Usage: bench_check_peer.py TREE INTERVAL_MS
"""
import json
import os
import sys
import time


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def sys_read(tree, rel):
    t = read(os.path.join(tree, "sysfs", rel))
    return None if t is None else t.strip()


def numeric_sorted(names):
    try:
        return sorted(names, key=int)
    except ValueError:
        return sorted(names)


def gid_ipv4(text):
    """The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), else None."""
    parts = text.strip().split(":")
    if len(parts) != 8 or parts[:5] != ["0000"] * 5 or parts[5] != "ffff":
        return None
    hi, lo = int(parts[6], 16), int(parts[7], 16)
    return "%d.%d.%d.%d" % (hi >> 8, hi & 255, lo >> 8, lo & 255)


def counters(tree, port, names):
    out = {}
    for n in names:
        t = sys_read(tree, "%s/counters/%s" % (port, n))
        out[n] = int(t) if t is not None and t.isdigit() else None
    return out


def pause(tree, netdev):
    text = read(os.path.join(tree, "ethtool", netdev))
    if text is None:
        return None
    stats = {}
    for line in text.splitlines():
        k, _, v = line.strip().partition(":")
        if v.strip().isdigit():
            stats[k.strip()] = int(v)
    rx = sum(v for k, v in stats.items() if k.startswith("rx") and "pause" in k and "duration" not in k)
    tx = sum(v for k, v in stats.items() if k.startswith("tx") and "pause" in k and "duration" not in k)
    return rx, tx


def main():
    tree, interval = sys.argv[1], int(sys.argv[2]) / 1000.0
    policy = json.loads(read(os.path.join(tree, "policy.json")))
    results = []  # (check, subject, ok)

    def check(name, subject, ok):
        results.append((name, subject, bool(ok)))

    rails = policy["rails"]
    for r in rails:
        hca, netdev = r["hca"], r["netdev"]
        port = "class/infiniband/%s/ports/1" % hca
        subj = "rail %s/%s" % (hca, netdev)
        os.path.isdir(os.path.join(tree, "sysfs", "class/infiniband"))
        os.listdir(os.path.join(tree, "sysfs", "class/infiniband"))
        if not os.path.isdir(os.path.join(tree, "sysfs", port)):
            check("rail.present", subj, False)
            continue
        check("rail.present", subj, True)
        state, phys = sys_read(tree, port + "/state"), sys_read(tree, port + "/phys_state")
        check("rail.state", subj, state is not None and "ACTIVE" in state and phys is not None and "LinkUp" in phys)
        rate = sys_read(tree, port + "/rate")
        check("rail.rate", subj, rate is not None and rate.split()[0] == str(r["rate_gbps"]))
        ll = sys_read(tree, port + "/link_layer")
        check("rail.link_layer", subj, ll is not None and ll.lower() == r["link_layer"])
        want = r["ipv4"].split("/")[0]
        found = False
        for idx in numeric_sorted(os.listdir(os.path.join(tree, "sysfs", port, "gids"))):
            g = sys_read(tree, "%s/gids/%s" % (port, idx))
            if g is None or gid_ipv4(g) != want:
                continue
            ty = sys_read(tree, "%s/gid_attrs/types/%s" % (port, idx))
            if ty is None or ty.lower() == "roce v2":
                if ty is not None:
                    sys_read(tree, "%s/gid_attrs/ndevs/%s" % (port, idx))
                found = True
                break
        check("rail.gid", subj, found)
        mtu = sys_read(tree, "class/net/%s/mtu" % netdev)
        check("rail.mtu", subj, mtu is not None and int(mtu) >= r["mtu"])

    route = read(os.path.join(tree, "proc", "net/route")) or ""
    front = policy["frontend_interface"]
    default = [l.split("\t") for l in route.splitlines()[1:] if l.split("\t")[1:2] == ["00000000"]]
    check("host.default_route", "host", any(f[0] == front for f in default))
    for r in rails:
        vals = [read(os.path.join(tree, "proc", "sys/net/ipv4/conf/%s/rp_filter" % s)) for s in ("all", r["netdev"])]
        ok = all(v is not None for v in vals) and max(int(v) for v in vals) in policy["rp_filter"]
        check("host.rp_filter", r["netdev"], ok)

    names = policy["counters"]
    first = [counters(tree, "class/infiniband/%s/ports/1" % r["hca"], names) for r in rails]
    first_pause = [pause(tree, r["netdev"]) for r in rails]
    start = time.monotonic()

    snap = json.loads(read(policy["gpus_json"]))
    gpus, gp = snap.get("gpus", []), policy["gpus"]
    check("gpu.count", "gpus", len(gpus) == gp["count"])
    check("gpu.model", "gpus", all(gp["model"] in g.get("name", "") for g in gpus))
    for g in gpus:
        subj = "gpu %d" % g.get("index", 0)
        check("gpu.ecc", subj, g.get("ecc_volatile_uncorrected", 0) == 0)
        check("gpu.retired", subj, not g.get("retired_pages_pending") and not g.get("remapped_rows_pending")
              and not g.get("remapped_rows_failure"))
        check("gpu.xid", subj, not g.get("xid_events"))
        check("gpu.nvlink", subj, g.get("nvlinks_up") == gp["nvlinks"] and not g.get("nvlinks_down"))
        check("gpu.pcie", subj, g.get("pcie_gen_current") == gp["pcie_gen"] and g.get("pcie_width_current") == gp["pcie_width"])
        bad = {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"}
        check("gpu.thermal", subj, g.get("temperature_c") is not None and g["temperature_c"] <= gp["max_temp_c"]
              and not bad.intersection(g.get("throttle_reasons", [])))

    left = interval - (time.monotonic() - start)
    if left > 0:
        time.sleep(left)
    measured = max(time.monotonic() - start, 1e-3)
    for i, r in enumerate(rails):
        second = counters(tree, "class/infiniband/%s/ports/1" % r["hca"], names)
        ok = all(second[n] is not None and first[i][n] is not None and second[n] <= first[i][n] for n in names)
        check("rail.counters", r["netdev"], ok)
        p2 = pause(tree, r["netdev"])
        ok = first_pause[i] is not None and p2 is not None and \
            (sum(p2) - sum(first_pause[i])) / measured <= policy["pfc_max_pause_per_sec"]
        check("host.pfc", r["netdev"], ok)

    failed = [("%s %s" % (n, s)) for n, s, ok in results if not ok]
    print(json.dumps({"checks": len(results), "failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
