//! An IPMI BMC that answers every request in 1.5 s (a busy or throttled controller, the simulator's
//! `bmc-slow=1500`) is reached: the client's retransmission schedule adapts to the first answer's delay
//! instead of burying the BMC, which answers one request after the other, under duplicates. With the fixed
//! 250 ms..1 s schedule the login never completed ("no reply to Open Session after 8.8 s").

use lifeline_test_utils::{SimProcess, output_text, unique_loopback};

#[test]
fn an_ipmi_bmc_answering_in_one_and_a_half_seconds_is_read() {
    let ip = unique_loopback();
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"ip\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{ip}\", port = {}, protocol = \"ipmi\", flavor = \"openbmc-like\" }}\n",
        623 + 42100
    );
    let sim = SimProcess::start(&inv, 42100, &[("LIFELINE_BMC_PASSWORD", "pw")]);
    sim.fault("ip", "bmc-slow=1500");
    let o = sim.lifeline(&["power", "status", "ip", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v = lifeline_test_utils::output_json(&o);
    assert_eq!(v[0]["power"], "on", "{v}");
}
