//! A Cumulus Linux switch run without NVUE (inventory `config-source = "files"`): its whole
//! configuration is `/etc/network/interfaces` (ifupdown2) and `/etc/frr/frr.conf` (FRR), read with
//! `cat` and written back with `sudo tee`, applied with `ifreload -a` and an FRR reload.
//!
//! Why a mode of its own: such a switch has no `nv config show`; a backup that asked NVUE would get
//! an error, and a restore that ran `nv config apply` would change nothing. The files are kept as one
//! text with a `# lifeline-file: PATH` line before each (the form Lifeline's backup reads back), so the
//! `config-change` fault and the control API's view of the running config work unchanged.

use super::configs::syslog_addr;

/// The line before each file's text in a backed-up files-mode configuration (Lifeline's wire form:
/// its fetch command prints it before each file).
pub const MARKER: &str = "# lifeline-file: ";

/// The files such a switch's configuration is made of, in the order a backup prints them.
pub const FILES: &[&str] = &["/etc/network/interfaces", "/etc/frr/frr.conf"];

/// The starting files of a leaf or spine: MTU 9000 on the eight fabric ports, a BGP unnumbered
/// uplink with a password, an OSPF key, and the syslog server's route through the management VRF
/// (the line the `config-change` fault moves).
pub fn initial(name: &str, tier: &str, i: u32, asn: u32) -> String {
    let mut interfaces = format!(
        "# This file describes the network interfaces available on your system\n\
         # and how to activate them. For more information, see interfaces(5).\n\n\
         source /etc/network/interfaces.d/*.intf\n\n\
         auto lo\niface lo inet loopback\n    address 10.0.0.{i}/32\n\n\
         auto mgmt\niface mgmt\n    address 127.0.0.1/8\n    address ::1/128\n    vrf-table auto\n\n\
         auto eth0\niface eth0 inet static\n    address 10.99.{}.{}/16\n    gateway 10.99.0.1\n    vrf mgmt\n",
        i / 250,
        i % 250 + 1
    );
    for p in 1..=8 {
        let alias = if tier == "spine" {
            format!("leaf{p}-uplink")
        } else {
            format!("rail{}-gpu-node-{:02}", p - 1, (i - 1) * 8 + p)
        };
        interfaces.push_str(&format!("\nauto swp{p}\niface swp{p}\n    alias {alias}\n    mtu 9000\n"));
    }
    interfaces.push_str("\nauto swp51\niface swp51\n    alias uplink\n    mtu 9216\n");
    let frr = format!(
        "frr version 8.4.3\nfrr defaults datacenter\nhostname {name}\nlog syslog informational\n\
         service integrated-vtysh-config\n!\nip route {}/32 10.99.0.1 nexthop-vrf mgmt\n!\n\
         interface swp51\n ip ospf message-digest-key 1 md5 ospf-key-{i}\n!\n\
         router bgp {asn}\n bgp router-id 10.0.0.{i}\n neighbor swp51 interface remote-as external\n\
          neighbor swp51 password bgp-pass-{i}\n !\n address-family ipv4 unicast\n  redistribute connected\n\
          exit-address-family\n!\nline vty\n!\n",
        syslog_addr(0)
    );
    format!("{MARKER}{}\n{interfaces}{MARKER}{}\n{frr}", FILES[0], FILES[1])
}

/// One file's text out of the combined configuration.
pub fn section(all: &str, path: &str) -> Option<String> {
    let mut out: Option<String> = None;
    for line in all.split_inclusive('\n') {
        if let Some(p) = line.trim_end().strip_prefix(MARKER) {
            if out.is_some() {
                break;
            }
            if p == path {
                out = Some(String::new());
            }
        } else if let Some(o) = out.as_mut() {
            o.push_str(line);
        }
    }
    out
}

/// The combined configuration with `path`'s text replaced by `body` (appended when it had none).
pub fn replace_section(all: &str, path: &str, body: &str) -> String {
    let parts: Vec<(String, String)> = FILES
        .iter()
        .map(|f| {
            let text = if *f == path { body.to_owned() } else { section(all, f).unwrap_or_default() };
            ((*f).to_owned(), text)
        })
        .collect();
    let mut out = String::new();
    for (f, text) in parts {
        out.push_str(&format!("{MARKER}{f}\n{text}"));
        if !text.is_empty() && !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The files a `for f in A B; do echo "# lifeline-file: $f"; sudo cat "$f"; done` line lists, when the
/// line is that loop (the one shell construct Lifeline's files-mode backup sends).
pub fn cat_loop(line: &str) -> Option<Vec<&str>> {
    let rest = line.strip_prefix("for f in ")?;
    let (list, body) = rest.split_once(';')?;
    let body = body.trim();
    let echoes_marker = body.contains(&format!("echo \"{MARKER}$f\""));
    let cats = body.contains("cat \"$f\"");
    (body.starts_with("do ") && body.ends_with("done") && echoes_marker && cats)
        .then(|| list.split_whitespace().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_split_and_replace() {
        let all = initial("fe-1", "leaf", 1, 65101);
        let ifaces = section(&all, FILES[0]).unwrap();
        let frr = section(&all, FILES[1]).unwrap();
        assert!(ifaces.starts_with("# This file describes") && ifaces.contains("iface swp8"));
        assert!(frr.starts_with("frr version") && frr.contains("neighbor swp51 password bgp-pass-1"));
        assert!(!ifaces.contains("frr version") && !frr.contains("iface"));
        assert_eq!(replace_section(&all, FILES[1], &frr), all, "replacing a file by itself changes nothing");
        let changed = replace_section(&all, FILES[1], "frr version 8.4.3\nhostname x\n");
        assert_eq!(section(&changed, FILES[0]).unwrap(), ifaces);
        assert_eq!(section(&changed, FILES[1]).unwrap(), "frr version 8.4.3\nhostname x\n");
        assert_eq!(section(&all, "/etc/passwd"), None);
    }

    #[test]
    fn only_the_backup_loop_is_a_cat_loop() {
        let line = "for f in /etc/network/interfaces /etc/frr/frr.conf; do echo \"# lifeline-file: $f\"; \
                    sudo cat \"$f\"; done";
        assert_eq!(cat_loop(line), Some(FILES.to_vec()));
        assert_eq!(cat_loop("for f in /etc/shadow; do rm \"$f\"; done"), None);
        assert_eq!(cat_loop("cat /etc/frr/frr.conf"), None);
    }
}
