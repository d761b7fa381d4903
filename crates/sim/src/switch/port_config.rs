//! The `port-mtu=PORT:MTU` fault: an operator's edit of one port's MTU in the running configuration, in
//! the platform's own syntax (SONiC `config_db` `PORT|NAME` `mtu`, the `mtu N` line of an EOS / IOS /
//! NX-OS `interface` block, NVUE `nv set interface NAME link mtu N`), so that a later backup sees a real
//! port-level diff and the correlation can set it beside the rail faults on that port.

use chrono::Utc;
use lifeline_types::Platform;

use super::{SwitchState, configs};

impl SwitchState {
    /// Sets `port`'s MTU in the running config; an error names a port the config does not have.
    pub fn set_port_mtu(&self, port: &str, mtu: u32) -> Result<(), String> {
        let mut i = self.lock();
        let changed = match self.platform {
            Platform::Sonic => sonic(&i.running, port, mtu),
            Platform::Cumulus => Some(nvue(&i.running, port, mtu)),
            Platform::Eos | Platform::Ios | Platform::Nxos => block(&i.running, port, mtu),
        };
        let Some(text) = changed else {
            return Err(format!("port-mtu: no port `{port}` in {}'s configuration", self.name));
        };
        i.running = text;
        i.last_change = Utc::now();
        Ok(())
    }
}

fn sonic(running: &str, port: &str, mtu: u32) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(running).ok()?;
    let p = v.get_mut("PORT")?.get_mut(port)?.as_object_mut()?;
    p.insert("mtu".into(), mtu.to_string().into());
    Some(configs::pretty(&v))
}

fn nvue(running: &str, port: &str, mtu: u32) -> String {
    let prefix = format!("nv set interface {port} link mtu ");
    let line = format!("{prefix}{mtu}");
    if running.lines().any(|l| l.starts_with(&prefix)) {
        running
            .lines()
            .map(|l| if l.starts_with(&prefix) { line.as_str() } else { l })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    } else {
        format!("{running}{line}\n")
    }
}

/// The `mtu` line of `interface PORT`'s block replaced (or added under its header, indented as its
/// other lines are).
fn block(running: &str, port: &str, mtu: u32) -> Option<String> {
    let lines: Vec<&str> = running.lines().collect();
    let header = lines.iter().position(|l| l.trim_end() == format!("interface {port}"))?;
    let end =
        lines[header + 1..].iter().position(|l| !l.starts_with(' ')).map_or(lines.len(), |n| header + 1 + n);
    let indent: String = lines
        .get(header + 1)
        .filter(|_| end > header + 1)
        .map_or(" ".into(), |l| l.chars().take_while(|c| *c == ' ').collect());
    let new = format!("{indent}mtu {mtu}");
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    match (header + 1..end).find(|&n| lines[n].trim_start().starts_with("mtu ")) {
        Some(n) => out[n] = new,
        None => out.insert(header + 1, new),
    }
    Some(out.join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_platform_changes_that_port_only() {
        for (platform, port, other) in [
            (Platform::Sonic, "Ethernet8", "Ethernet16"),
            (Platform::Eos, "Ethernet2/1", "Ethernet3/1"),
            (Platform::Ios, "Ethernet1/2", "Ethernet1/3"),
            (Platform::Cumulus, "swp2", "swp3"),
        ] {
            let s = SwitchState::new("leaf-03", platform, "leaf", "admin", "pw");
            let before = s.running_config();
            s.set_port_mtu(port, 1500).unwrap();
            let after = s.running_config();
            if platform == Platform::Sonic {
                // Every port's `"mtu": "9000"` line reads the same: compare the table itself.
                let v: serde_json::Value = serde_json::from_str(&after).unwrap();
                assert_eq!(v["PORT"][port]["mtu"], "1500");
                assert_eq!(v["PORT"][other]["mtu"], "9000");
                assert!(s.set_port_mtu("Ethernet999", 1500).is_err());
                continue;
            }
            // Every port's MTU line reads the same: compare the port's own lines.
            let mine = |text: &str, p: &str| -> Vec<String> {
                let lines: Vec<&str> = text.lines().collect();
                match lines.iter().position(|l| *l == format!("interface {p}")) {
                    Some(h) => lines[h + 1..]
                        .iter()
                        .take_while(|l| l.starts_with(' '))
                        .map(|l| l.to_string())
                        .collect(),
                    None => lines
                        .iter()
                        .filter(|l| l.starts_with(&format!("nv set interface {p} ")))
                        .map(|l| l.to_string())
                        .collect(),
                }
            };
            assert!(mine(&before, port).iter().any(|l| l.ends_with("mtu 9000")), "{platform:?}: {before}");
            assert!(mine(&after, port).iter().any(|l| l.ends_with("mtu 1500")), "{platform:?}: {after}");
            assert!(!mine(&after, port).iter().any(|l| l.ends_with("mtu 9000")), "{platform:?}: {after}");
            assert_eq!(mine(&after, other), mine(&before, other), "{platform:?}");
            assert_eq!(after.lines().count(), before.lines().count(), "{platform:?}");
            assert!(s.set_port_mtu("Ethernet999", 1500).is_err() || platform == Platform::Cumulus);
        }
    }
}
