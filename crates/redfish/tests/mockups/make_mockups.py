#!/usr/bin/env python3
"""Write the vendor-shaped Redfish mockups the tests serve with sushy-static (GET only).

Shapes follow what the vendors document and serve (field names, link styles, log layouts), trimmed to
what Lifeline reads. Run from this directory: `python3 make_mockups.py`; the output is committed.

- hpe-ilo5: HPE iLO 5 (ProLiant Gen10). Links end in `/`. No PowerCycle reset type. The health log is the
  IML under the System (`EntryType: Oem`, `OemRecordFormat: Hpe-IML`), the iLO's own log the IEL under the
  Manager; no SEL service. Legacy `Power` only: both supplies are named "HpeServerPowerSupply" (told apart
  by `Oem.Hpe.BayNumber`), bay 2 has failed; PowerControl has no Name.
- openbmc: OpenBMC bmcweb. `EventLog` services under the System and the Manager (`EntryType: Event`),
  plus a Journal, a Dump and PostCodes that are not the event history. Reset types via ActionInfo
  (with PowerCycle), `LastResetTime`. `Sensors` plus `PowerSubsystem` only (the legacy `Power` and
  `Thermal` resources are gone): powersupply1 lost its input, the redundancy group is in Warning.
"""
import json
import os
import shutil

R = "/redfish/v1"


def write(root, path, doc):
    d = os.path.join(root, path.strip("/")[len("redfish/v1"):].strip("/"))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def coll(path, name, members, slash=False):
    s = "/" if slash else ""
    return {"@odata.id": path, "Name": name, "Members@odata.count": len(members),
            "Members": [{"@odata.id": m + s} for m in members]}


def ilo(root):
    s = lambda p: p + "/"
    write(root, R, {
        "@odata.id": s(R), "@odata.type": "#ServiceRoot.v1_5_1.ServiceRoot", "Id": "RootService",
        "Name": "HPE RESTful Root Service", "RedfishVersion": "1.6.0", "Vendor": "HPE",
        "Product": "ProLiant DL380 Gen10", "UUID": "00000000-0000-4000-8000-0000000000a1",
        "Oem": {"Hpe": {"Manager": [{"ManagerType": "iLO 5", "ManagerFirmwareVersion": "2.72"}]}},
        "Systems": {"@odata.id": s(R + "/Systems")}, "Chassis": {"@odata.id": s(R + "/Chassis")},
        "Managers": {"@odata.id": s(R + "/Managers")},
        "SessionService": {"@odata.id": s(R + "/SessionService")},
        "Links": {"Sessions": {"@odata.id": s(R + "/SessionService/Sessions")}},
    })
    sysp = R + "/Systems/1"
    write(root, R + "/Systems", coll(s(R + "/Systems"), "Computer Systems", [sysp], True))
    write(root, sysp, {
        "@odata.id": s(sysp), "@odata.type": "#ComputerSystem.v1_13_0.ComputerSystem", "Id": "1",
        "Name": "Computer System", "Manufacturer": "HPE", "Model": "ProLiant DL380 Gen10",
        "SerialNumber": "CZJ0000001", "PowerState": "On", "HostName": "gpu-node-07",
        "Status": {"Health": "Critical", "HealthRollup": "Critical", "State": "Enabled"},
        "Actions": {"#ComputerSystem.Reset": {
            "target": sysp + "/Actions/ComputerSystem.Reset/",
            "ResetType@Redfish.AllowableValues": ["On", "ForceOff", "GracefulShutdown", "ForceRestart", "Nmi",
                                                  "PushPowerButton", "GracefulRestart"]}},
        "LogServices": {"@odata.id": s(sysp + "/LogServices")},
        "Links": {"Chassis": [{"@odata.id": s(R + "/Chassis/1")}], "ManagedBy": [{"@odata.id": s(R + "/Managers/1")}]},
    })
    write(root, sysp + "/LogServices", coll(s(sysp + "/LogServices"), "Log Service Collection",
                                            [sysp + "/LogServices/IML"], True))
    iml = sysp + "/LogServices/IML"
    write(root, iml, {"@odata.id": s(iml), "@odata.type": "#LogService.v1_0_0.LogService", "Id": "IML",
                      "Name": "Integrated Management Log", "OverWritePolicy": "WrapsWhenFull",
                      "Entries": {"@odata.id": s(iml + "/Entries")},
                      "Actions": {"#LogService.ClearLog": {"target": iml + "/Actions/LogService.ClearLog/"}}})
    iml_entries = [
        ("1", "2026-11-19T22:10:05Z", "OK", "IML Cleared (iLO 5 user: Administrator)", 33, 1),
        ("2", "2026-11-20T03:14:09Z", "Critical", "Power Supply Failure (Power Supply 2, Bay 2)", 32, 5),
        ("3", "2026-11-20T03:14:11Z", "Warning", "Redundant power supplies are not redundant", 32, 31),
    ]
    write(root, iml + "/Entries", coll(s(iml + "/Entries"), "IML Entries",
                                       [f"{iml}/Entries/{e[0]}" for e in iml_entries], True))
    for i, created, sev, msg, cls, code in iml_entries:
        p = f"{iml}/Entries/{i}"
        write(root, p, {"@odata.id": s(p), "@odata.type": "#LogEntry.v1_0_0.LogEntry", "Id": i,
                        "Name": "Integrated Management Log", "EntryType": "Oem", "OemRecordFormat": "Hpe-IML",
                        "Created": created, "Severity": sev, "Message": msg,
                        "Oem": {"Hpe": {"Class": cls, "Code": code, "Count": 1, "Repaired": False,
                                        "Updated": created}}})
    mgr = R + "/Managers/1"
    write(root, R + "/Managers", coll(s(R + "/Managers"), "Managers", [mgr], True))
    write(root, mgr, {"@odata.id": s(mgr), "@odata.type": "#Manager.v1_5_1.Manager", "Id": "1",
                      "Name": "Manager", "ManagerType": "BMC", "Model": "iLO 5", "FirmwareVersion": "iLO 5 v2.72",
                      "Status": {"Health": "OK", "State": "Enabled"},
                      "LogServices": {"@odata.id": s(mgr + "/LogServices")}})
    write(root, mgr + "/LogServices", coll(s(mgr + "/LogServices"), "Log Service Collection",
                                           [mgr + "/LogServices/IEL"], True))
    iel = mgr + "/LogServices/IEL"
    write(root, iel, {"@odata.id": s(iel), "@odata.type": "#LogService.v1_0_0.LogService", "Id": "IEL",
                      "Name": "iLO Event Log", "OverWritePolicy": "WrapsWhenFull",
                      "Entries": {"@odata.id": s(iel + "/Entries")}})
    iel_entries = [
        ("1", "2026-11-20T03:14:10Z", "Warning", "Power supply 2 failed or lost input power."),
        ("2", "2026-11-20T04:00:00Z", "OK", "Browser login: Administrator - 10.0.0.9(DNS name not found)."),
    ]
    write(root, iel + "/Entries", coll(s(iel + "/Entries"), "iLO Event Log Entries",
                                       [f"{iel}/Entries/{e[0]}" for e in iel_entries], True))
    for i, created, sev, msg in iel_entries:
        p = f"{iel}/Entries/{i}"
        write(root, p, {"@odata.id": s(p), "@odata.type": "#LogEntry.v1_0_0.LogEntry", "Id": i,
                        "Name": "iLO Event Log", "EntryType": "Oem", "OemRecordFormat": "Hpe-iLOEventLog",
                        "Created": created, "Severity": sev, "Message": msg})
    ch = R + "/Chassis/1"
    write(root, R + "/Chassis", coll(s(R + "/Chassis"), "Chassis Collection", [ch], True))
    write(root, ch, {"@odata.id": s(ch), "@odata.type": "#Chassis.v1_10_0.Chassis", "Id": "1",
                     "Name": "Computer System Chassis", "ChassisType": "RackMount", "Manufacturer": "HPE",
                     "Model": "ProLiant DL380 Gen10", "SerialNumber": "CZJ0000001", "PowerState": "On",
                     "Status": {"Health": "Critical", "State": "Enabled"},
                     "Power": {"@odata.id": s(ch + "/Power")}, "Thermal": {"@odata.id": s(ch + "/Thermal")}})
    write(root, ch + "/Thermal", {
        "@odata.id": s(ch + "/Thermal"), "@odata.type": "#Thermal.v1_1_0.Thermal", "Id": "Thermal",
        "Temperatures": [
            {"@odata.id": ch + "/Thermal#Temperatures/0", "MemberId": "0", "Name": "01-Inlet Ambient",
             "ReadingCelsius": 22, "UpperThresholdCritical": 42, "UpperThresholdFatal": 47,
             "Status": {"Health": "OK", "State": "Enabled"}},
            {"@odata.id": ch + "/Thermal#Temperatures/1", "MemberId": "1", "Name": "02-CPU 1",
             "ReadingCelsius": 45, "UpperThresholdCritical": 70, "Status": {"Health": "OK", "State": "Enabled"}}],
        "Fans": [{"@odata.id": ch + "/Thermal#Fans/0", "MemberId": "0", "Name": "Fan 1", "Reading": 31,
                  "ReadingUnits": "Percent", "Status": {"Health": "OK", "State": "Enabled"}}],
    })
    write(root, ch + "/Power", {
        "@odata.id": s(ch + "/Power"), "@odata.type": "#Power.v1_3_0.Power", "Id": "Power", "Name": "PowerMetrics",
        "PowerControl": [{"@odata.id": ch + "/Power#PowerControl/0", "MemberId": "0",
                          "PowerCapacityWatts": 1600, "PowerConsumedWatts": 312,
                          "PowerMetrics": {"AverageConsumedWatts": 305, "IntervalInMin": 20}}],
        "PowerSupplies": [
            {"@odata.id": ch + "/Power#PowerSupplies/0", "MemberId": "0", "Name": "HpeServerPowerSupply",
             "FirmwareVersion": "1.00", "LastPowerOutputWatts": 312, "LineInputVoltage": 230,
             "PowerCapacityWatts": 800, "PowerSupplyType": "AC", "SerialNumber": "5WBXK0A8J1A001",
             "Model": "865414-B21", "Status": {"Health": "OK", "State": "Enabled"},
             "Oem": {"Hpe": {"BayNumber": 1, "PowerSupplyStatus": {"State": "Ok"}}}},
            {"@odata.id": ch + "/Power#PowerSupplies/1", "MemberId": "1", "Name": "HpeServerPowerSupply",
             "FirmwareVersion": "1.00", "LastPowerOutputWatts": 0, "LineInputVoltage": 0,
             "PowerCapacityWatts": 800, "PowerSupplyType": "AC", "SerialNumber": "5WBXK0A8J1A002",
             "Model": "865414-B21", "Status": {"Health": "Critical", "State": "Enabled"},
             "Oem": {"Hpe": {"BayNumber": 2, "PowerSupplyStatus": {"State": "Unknown"}}}}],
        "Redundancy": [{"@odata.id": ch + "/Power#Redundancy/0", "MemberId": "0", "Name": "PowerSupply Redundancy Group 1",
                        "Mode": "Failover", "MaxNumSupported": 2, "MinNumNeeded": 2,
                        "Status": {"Health": "Warning", "State": "Enabled"}}],
    })
    write(root, R + "/SessionService", {"@odata.id": s(R + "/SessionService"), "Id": "SessionService",
                                        "ServiceEnabled": True, "SessionTimeout": 30,
                                        "Sessions": {"@odata.id": s(R + "/SessionService/Sessions")}})
    write(root, R + "/SessionService/Sessions", coll(s(R + "/SessionService/Sessions"), "Sessions", []))


def openbmc(root):
    write(root, R, {
        "@odata.id": R, "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot", "Id": "RootService",
        "Name": "Root Service", "RedfishVersion": "1.17.0", "Vendor": "OpenBMC", "Product": "gpu-node",
        "UUID": "00000000-0000-4000-8000-0000000000b1",
        "Systems": {"@odata.id": R + "/Systems"}, "Chassis": {"@odata.id": R + "/Chassis"},
        "Managers": {"@odata.id": R + "/Managers"}, "SessionService": {"@odata.id": R + "/SessionService"},
        "Links": {"Sessions": {"@odata.id": R + "/SessionService/Sessions"}},
    })
    sysp = R + "/Systems/system"
    write(root, R + "/Systems", coll(R + "/Systems", "Computer System Collection", [sysp]))
    write(root, sysp, {
        "@odata.id": sysp, "@odata.type": "#ComputerSystem.v1_16_0.ComputerSystem", "Id": "system",
        "Name": "system", "Manufacturer": "OpenBMC", "Model": "gpu-node", "SerialNumber": "OBMC0001",
        "PowerState": "On", "LastResetTime": "2026-11-20T01:00:00+00:00",
        "Status": {"Health": "Critical", "HealthRollup": "Critical", "State": "Enabled"},
        "Actions": {"#ComputerSystem.Reset": {"target": sysp + "/Actions/ComputerSystem.Reset",
                                              "@Redfish.ActionInfo": sysp + "/ResetActionInfo"}},
        "LogServices": {"@odata.id": sysp + "/LogServices"},
        "Links": {"Chassis": [{"@odata.id": R + "/Chassis/chassis"}], "ManagedBy": [{"@odata.id": R + "/Managers/bmc"}]},
    })
    write(root, sysp + "/ResetActionInfo", {
        "@odata.id": sysp + "/ResetActionInfo", "@odata.type": "#ActionInfo.v1_1_2.ActionInfo",
        "Id": "ResetActionInfo", "Name": "Reset Action Info",
        "Parameters": [{"Name": "ResetType", "Required": True, "DataType": "String",
                        "AllowableValues": ["On", "ForceOff", "ForceOn", "ForceRestart", "GracefulRestart",
                                            "GracefulShutdown", "PowerCycle", "Nmi"]}]})

    def logservices(owner, ids):
        write(root, owner + "/LogServices", coll(owner + "/LogServices", "System Log Services",
                                                 [owner + "/LogServices/" + i for i in ids]))

    def eventlog(owner, entries):
        p = owner + "/LogServices/EventLog"
        write(root, p, {"@odata.id": p, "@odata.type": "#LogService.v1_2_0.LogService", "Id": "EventLog",
                        "Name": "Event Log Service", "Description": "System Event Log Service",
                        "OverWritePolicy": "WrapsWhenFull", "Entries": {"@odata.id": p + "/Entries"},
                        "Actions": {"#LogService.ClearLog": {"target": p + "/Actions/LogService.ClearLog"}}})
        # bmcweb embeds the entries in the collection.
        write(root, p + "/Entries", {
            "@odata.id": p + "/Entries", "@odata.type": "#LogEntryCollection.LogEntryCollection",
            "Name": "System Event Log Entries", "Members@odata.count": len(entries),
            "Members": [{"@odata.id": f"{p}/Entries/{i}", "@odata.type": "#LogEntry.v1_9_0.LogEntry",
                         "Id": str(i), "Name": "System Event Log Entry", "EntryType": "Event",
                         "Created": t, "Modified": t, "Severity": sev, "Message": msg, "MessageId": mid,
                         "Resolved": False} for i, t, sev, msg, mid in entries]})

    logservices(sysp, ["EventLog", "PostCodes", "Dump"])
    eventlog(sysp, [
        (1, "2026-11-20T02:59:58+00:00", "OK", "Host system DC power is on", "OpenBMC.0.1.DCPowerOn"),
        (2, "2026-11-20T03:14:09+00:00", "Critical", "Power supply powersupply1 input lost",
         "OpenBMC.0.1.PowerSupplyPowerLost"),
        (3, "2026-11-20T03:14:09+00:00", "Warning", "Power supply redundancy lost",
         "OpenBMC.0.1.PowerSupplyRedundancyLost"),
    ])
    for lid, name, entry in [("PostCodes", "POST Code Log Service", "Oem"), ("Dump", "Dump LogService", "Oem")]:
        p = sysp + "/LogServices/" + lid
        write(root, p, {"@odata.id": p, "@odata.type": "#LogService.v1_2_0.LogService", "Id": lid, "Name": name,
                        "Entries": {"@odata.id": p + "/Entries"}})
        write(root, p + "/Entries", {"@odata.id": p + "/Entries", "Name": name + " Entries",
                                     "Members@odata.count": 1, "Members": [
                                         {"@odata.id": p + "/Entries/1", "Id": "1", "EntryType": entry,
                                          "Severity": "Critical", "Message": "not an event: " + lid,
                                          "Created": "2026-11-20T03:00:00+00:00"}]})
    mgr = R + "/Managers/bmc"
    write(root, R + "/Managers", coll(R + "/Managers", "Manager Collection", [mgr]))
    write(root, mgr, {"@odata.id": mgr, "@odata.type": "#Manager.v1_14_0.Manager", "Id": "bmc",
                      "Name": "OpenBmc Manager", "ManagerType": "BMC", "Model": "OpenBmc",
                      "FirmwareVersion": "2.14.0-dev", "Status": {"Health": "OK", "State": "Enabled"},
                      "LogServices": {"@odata.id": mgr + "/LogServices"}})
    logservices(mgr, ["EventLog", "Journal"])
    eventlog(mgr, [(1, "2026-11-20T03:20:00+00:00", "OK", "BMC time synchronised", "OpenBMC.0.1.NTPSync")])
    j = mgr + "/LogServices/Journal"
    write(root, j, {"@odata.id": j, "@odata.type": "#LogService.v1_1_0.LogService", "Id": "Journal",
                    "Name": "Open BMC Journal Log Service", "Entries": {"@odata.id": j + "/Entries"}})
    write(root, j + "/Entries", {"@odata.id": j + "/Entries", "Name": "Open BMC Journal Entries",
                                 "Members@odata.count": 1, "Members": [
                                     {"@odata.id": j + "/Entries/1", "Id": "1", "EntryType": "Oem",
                                      "OemRecordFormat": "BMC Journal Entry", "Severity": "Critical",
                                      "Message": "not an event: journal", "Created": "2026-11-20T03:00:00+00:00"}]})
    ch = R + "/Chassis/chassis"
    write(root, R + "/Chassis", coll(R + "/Chassis", "Chassis Collection", [ch]))
    write(root, ch, {"@odata.id": ch, "@odata.type": "#Chassis.v1_16_0.Chassis", "Id": "chassis",
                     "Name": "chassis", "ChassisType": "RackMount", "Manufacturer": "OpenBMC", "PowerState": "On",
                     "Status": {"Health": "Critical", "State": "Enabled"},
                     "Sensors": {"@odata.id": ch + "/Sensors"},
                     "PowerSubsystem": {"@odata.id": ch + "/PowerSubsystem"}})
    sensors = [("temperature_inlet", "Inlet", "Temperature", 23.5, "Cel", "OK", 40),
               ("temperature_gpu0", "GPU0 Temp", "Temperature", 61.0, "Cel", "OK", 90),
               ("fan_tach_fan0", "fan0", "Rotational", 8200, "RPM", "OK", None),
               ("power_total_power", "total_power", "Power", 305, "W", "OK", None)]
    write(root, ch + "/Sensors", coll(ch + "/Sensors", "Sensors", [f"{ch}/Sensors/{s[0]}" for s in sensors]))
    for sid, name, rt, val, unit, health, crit in sensors:
        p = f"{ch}/Sensors/{sid}"
        d = {"@odata.id": p, "@odata.type": "#Sensor.v1_2_0.Sensor", "Id": sid, "Name": name, "ReadingType": rt,
             "Reading": val, "ReadingUnits": unit, "Status": {"Health": health, "State": "Enabled"}}
        if crit:
            d["Thresholds"] = {"UpperCritical": {"Reading": crit}}
        write(root, p, d)
    ps = ch + "/PowerSubsystem"
    write(root, ps, {"@odata.id": ps, "@odata.type": "#PowerSubsystem.v1_1_0.PowerSubsystem", "Id": "PowerSubsystem",
                     "Name": "Power Subsystem", "CapacityWatts": 2000, "Status": {"Health": "Warning", "State": "Enabled"},
                     "PowerSupplies": {"@odata.id": ps + "/PowerSupplies"},
                     "PowerSupplyRedundancy": [{"RedundancyType": "Failover", "MaxSupportedInGroup": 2,
                                                "MinNeededInGroup": 2,
                                                "RedundancyGroup": [{"@odata.id": ps + "/PowerSupplies/powersupply0"},
                                                                    {"@odata.id": ps + "/PowerSupplies/powersupply1"}],
                                                "Status": {"Health": "Warning", "State": "Enabled"}}]})
    write(root, ps + "/PowerSupplies", coll(ps + "/PowerSupplies", "Power Supply Collection",
                                            [ps + "/PowerSupplies/powersupply0", ps + "/PowerSupplies/powersupply1"]))
    for i, (line, health, inw, outw) in enumerate([("Normal", "OK", 320, 305), ("LossOfInput", "Warning", 0, 0)]):
        p = f"{ps}/PowerSupplies/powersupply{i}"
        write(root, p, {"@odata.id": p, "@odata.type": "#PowerSupply.v1_5_0.PowerSupply", "Id": f"powersupply{i}",
                        "Name": f"powersupply{i}", "Manufacturer": "Delta", "Model": "DPS-1600",
                        "SerialNumber": f"DLT00{i}", "PowerCapacityWatts": 1600, "LineInputStatus": line,
                        "Location": {"PartLocation": {"LocationType": "Bay", "LocationOrdinalValue": i,
                                                      "ServiceLabel": f"PSU{i}"}},
                        "Status": {"Health": health, "State": "Enabled"},
                        "Metrics": {"@odata.id": p + "/Metrics"}})
        write(root, p + "/Metrics", {"@odata.id": p + "/Metrics", "@odata.type": "#PowerSupplyMetrics.v1_0_1.PowerSupplyMetrics",
                                     "Id": "Metrics", "Name": f"Metrics for powersupply{i}",
                                     "InputPowerWatts": {"Reading": inw}, "OutputPowerWatts": {"Reading": outw}})
    write(root, R + "/SessionService", {"@odata.id": R + "/SessionService", "Id": "SessionService",
                                        "ServiceEnabled": True, "SessionTimeout": 3600,
                                        "Sessions": {"@odata.id": R + "/SessionService/Sessions"}})
    write(root, R + "/SessionService/Sessions", coll(R + "/SessionService/Sessions", "Session Collection", []))


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    for name, fn in [("hpe-ilo5", ilo), ("openbmc", openbmc)]:
        root = os.path.join(here, name)
        shutil.rmtree(root, ignore_errors=True)
        fn(root)
