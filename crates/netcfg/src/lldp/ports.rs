//! When two spellings name the same port or the same host: switches abbreviate their own ports in LLDP
//! output (`Et1/1` for `Ethernet1/1`, `Gi1/0/2`), and a host announces its name fully qualified or not.

/// Long interface names by their abbreviations, as IOS, NX-OS and EOS print them.
const PREFIXES: &[(&[&str], &str)] = &[
    (&["et", "eth", "ethernet"], "ethernet"),
    (&["gi", "gig", "gigabitethernet"], "gigabitethernet"),
    (&["te", "ten", "tengigabitethernet", "tengige"], "tengigabitethernet"),
    (&["tw", "twe", "twentyfivegigabitethernet", "twentyfivegige"], "twentyfivegige"),
    (&["fo", "fortygigabitethernet", "fortygige"], "fortygigabitethernet"),
    (&["hu", "hundredgigabitethernet", "hundredgige"], "hundredgige"),
    (&["fa", "fastethernet"], "fastethernet"),
    (&["po", "port-channel", "portchannel"], "port-channel"),
    (&["ma", "mgmt", "management"], "management"),
];

/// A port name reduced to a comparable key: lower case, quotes and spaces gone, the type prefix spelled
/// out (`Et1/1`, `Eth1/1` and `Ethernet1/1` are one key).
pub fn port_key(p: &str) -> String {
    let p: String = p.trim().trim_matches('"').chars().filter(|c| !c.is_whitespace()).collect();
    let p = p.to_ascii_lowercase();
    let split = p.find(|c: char| c.is_ascii_digit()).unwrap_or(p.len());
    let (prefix, rest) = p.split_at(split);
    for (short, long) in PREFIXES {
        if short.contains(&prefix) {
            return format!("{long}{rest}");
        }
    }
    p
}

/// Whether two spellings name the same port.
pub fn same_port(a: &str, b: &str) -> bool {
    port_key(a) == port_key(b)
}

/// Whether `seen` (an LLDP system name) is the host `expected`: case-insensitive, and a fully qualified
/// name matches its first label when `expected` is not qualified itself.
pub fn same_host(expected: &str, seen: &str) -> bool {
    let (e, s) =
        (expected.trim().to_ascii_lowercase(), seen.trim().trim_end_matches('.').to_ascii_lowercase());
    if e == s {
        return true;
    }
    !e.contains('.') && s.split('.').next() == Some(e.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviations_name_the_same_port() {
        assert!(same_port("Et1/1", "Ethernet1/1"));
        assert!(same_port("Eth1/52", "Ethernet1/52"));
        assert!(same_port("Gi1/0/2", "GigabitEthernet1/0/2"));
        assert!(same_port("\"Ethernet8\"", "ethernet8"));
        assert!(same_port("swp3", "SWP3"));
        assert!(!same_port("Ethernet1", "Ethernet10"));
        assert!(!same_port("swp1", "Ethernet1"));
    }

    #[test]
    fn hosts_match_with_or_without_domain() {
        assert!(same_host("gpu-node-01", "gpu-node-01.cluster.example"));
        assert!(same_host("gpu-node-01", "GPU-NODE-01"));
        assert!(!same_host("gpu-node-01", "gpu-node-010"));
        assert!(!same_host("a.example", "a.other"));
    }
}
