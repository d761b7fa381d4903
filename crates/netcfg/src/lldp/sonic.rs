//! SONiC `show lldp table`: a fixed-width table whose column starts are given by the dashes under the
//! header. The last column (RemotePortDescr) may hold spaces or be empty, so rows are cut at the
//! columns, not split on whitespace; a table printed without its dashes falls back to whitespace.

use super::{Neighbor, value};

fn is_rule(l: &str) -> bool {
    let t = l.trim();
    !t.is_empty() && t.chars().all(|c| c == '-' || c == ' ')
}

/// Start offsets (in chars) of each dash group.
fn columns(rule: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut prev = ' ';
    for (i, c) in rule.chars().enumerate() {
        if c == '-' && prev != '-' {
            out.push(i);
        }
        prev = c;
    }
    out
}

fn cut(line: &[char], starts: &[usize], i: usize) -> String {
    let from = starts[i].min(line.len());
    let to = starts.get(i + 1).copied().unwrap_or(line.len()).min(line.len());
    line[from..to.max(from)].iter().collect()
}

pub fn parse_table(text: &str) -> Vec<Neighbor> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(h) = lines.iter().position(|l| l.contains("LocalPort") && l.contains("RemoteDevice")) else {
        return Vec::new();
    };
    let ruled = lines.get(h + 1).is_some_and(|l| is_rule(l) && columns(l).len() >= 3);
    let starts = if ruled { columns(lines[h + 1]) } else { Vec::new() };
    let mut out = Vec::new();
    for l in &lines[h + 1 + usize::from(ruled)..] {
        let t = l.trim();
        if t.is_empty() || is_rule(l) {
            if is_rule(l) && !out.is_empty() {
                break;
            }
            continue;
        }
        if t.starts_with("Total entries") {
            break;
        }
        let n = if ruled {
            let chars: Vec<char> = l.chars().collect();
            let col = |i: usize| if i < starts.len() { value(&cut(&chars, &starts, i)) } else { None };
            Neighbor {
                local_port: col(0).unwrap_or_default(),
                system_name: col(1),
                port_id: col(2),
                port_descr: col(4),
                chassis_id: None,
            }
        } else {
            let w: Vec<&str> = t.split_whitespace().collect();
            Neighbor {
                local_port: w.first().map(|s| s.to_string()).unwrap_or_default(),
                system_name: w.get(1).and_then(|s| value(s)),
                port_id: w.get(2).and_then(|s| value(s)),
                port_descr: w.get(4..).map(|r| r.join(" ")).and_then(|s| value(&s)),
                chassis_id: None,
            }
        };
        out.push(n);
    }
    out
}
