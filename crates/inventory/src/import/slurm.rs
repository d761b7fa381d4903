//! `slurm.conf` → GPU nodes: the `NodeName` lines, their `Gres` (GPU count and model) and `Features`.
//!
//! The syntax read is slurm.conf(5)'s: `#` comments, `\` line continuation, case-insensitive
//! `Key=Value` pairs (values may be quoted), hostlist expressions in `NodeName`/`NodeAddr`, and
//! `NodeName=DEFAULT` lines whose values apply to the node lines after them. slurm.conf knows no BMCs and
//! no racks; the importer fills those from the current inventory or from its options.

use super::hostlist::{self, HostlistError};
use super::{ImportProblem, Imported};

/// What slurm.conf says about one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmNode {
    pub name: String,
    /// `NodeAddr`: where slurmd is reached (the node's frontend address).
    pub addr: Option<String>,
    pub gpus: u32,
    /// The GPU type of `Gres=gpu:TYPE:N` when there is one type.
    pub gpu_model: Option<String>,
    pub features: Vec<String>,
    pub line: usize,
}

/// Reads every node of a slurm.conf; problems are reported per line and the rest is still read.
pub fn parse(text: &str) -> (Vec<SlurmNode>, Vec<ImportProblem>) {
    let mut nodes = Vec::new();
    let mut problems = Vec::new();
    let mut defaults: Vec<(String, String)> = Vec::new();
    for (line_no, line) in logical_lines(text) {
        let pairs = match pairs(&line) {
            Ok(p) => p,
            Err(e) => {
                problems.push(ImportProblem { line: line_no, message: e });
                continue;
            }
        };
        let Some((first_key, first_value)) = pairs.first() else { continue };
        if first_key.eq_ignore_ascii_case("include") {
            problems.push(ImportProblem {
                line: line_no,
                message: format!(
                    "`Include {first_value}` is not followed: import the included file on its own"
                ),
            });
            continue;
        }
        if !first_key.eq_ignore_ascii_case("nodename") {
            continue;
        }
        if first_value.eq_ignore_ascii_case("default") {
            for (k, v) in &pairs[1..] {
                defaults.retain(|(dk, _)| !dk.eq_ignore_ascii_case(k));
                defaults.push((k.clone(), v.clone()));
            }
            continue;
        }
        let get = |key: &str| -> Option<&str> {
            pairs[1..]
                .iter()
                .rev()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .or_else(|| defaults.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)))
                .map(|(_, v)| v.as_str())
        };
        let names = match hostlist::expand(first_value) {
            Ok(n) => n,
            Err(e) => {
                problems.push(ImportProblem { line: line_no, message: format!("NodeName: {e}") });
                continue;
            }
        };
        let addrs: Result<Vec<String>, HostlistError> =
            get("NodeAddr").map(hostlist::expand).transpose().map(|a| a.unwrap_or_default());
        let addrs = match addrs {
            Ok(a) if a.is_empty() || a.len() == names.len() => a,
            Ok(a) => {
                problems.push(ImportProblem {
                    line: line_no,
                    message: format!("NodeAddr names {} addresses for {} nodes", a.len(), names.len()),
                });
                Vec::new()
            }
            Err(e) => {
                problems.push(ImportProblem { line: line_no, message: format!("NodeAddr: {e}") });
                Vec::new()
            }
        };
        let (gpus, gpu_model) = match get("Gres").map(gres_gpus).transpose() {
            Ok(g) => g.unwrap_or((0, None)),
            Err(e) => {
                problems.push(ImportProblem { line: line_no, message: format!("Gres: {e}") });
                (0, None)
            }
        };
        let features: Vec<String> = get("Features")
            .or_else(|| get("Feature"))
            .map(|f| f.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default();
        for (i, name) in names.into_iter().enumerate() {
            nodes.push(SlurmNode {
                name,
                addr: addrs.get(i).cloned(),
                gpus,
                gpu_model: gpu_model.clone(),
                features: features.clone(),
                line: line_no,
            });
        }
    }
    (nodes, problems)
}

/// The nodes with GPUs, as imported devices (role `gpu-node`, GPU count and model, features as groups).
pub fn gpu_nodes(nodes: &[SlurmNode]) -> Vec<Imported> {
    nodes
        .iter()
        .filter(|n| n.gpus > 0)
        .map(|n| Imported {
            name: n.name.clone(),
            role: Some(lifeline_types::Role::GpuNode),
            gpus: Some(n.gpus),
            gpu_model: n.gpu_model.clone(),
            groups: n
                .features
                .iter()
                .filter(|f| lifeline_types::DeviceName::new(f.to_string()).is_ok())
                .cloned()
                .collect(),
            frontend: n.addr.clone(),
            line: n.line,
            ..Imported::default()
        })
        .collect()
}

/// Joins `\`-continued lines and strips comments; yields (first line number, text).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut acc = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = strip_comment(raw);
        if acc.is_empty() {
            start = i + 1;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(cont) => {
                acc.push_str(cont);
                acc.push(' ');
            }
            None => {
                acc.push_str(line);
                if !acc.trim().is_empty() {
                    out.push((start, std::mem::take(&mut acc)));
                }
                acc.clear();
            }
        }
    }
    if !acc.trim().is_empty() {
        out.push((start, acc));
    }
    out
}

fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// `Key=Value Key2="a b"` → pairs; a word without `=` is a problem (slurm.conf has none on node lines).
fn pairs(line: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = line.trim().chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        if chars.next() != Some('=') {
            // `Include FILE` is the one directive without `=`.
            if key.eq_ignore_ascii_case("include") {
                let rest: String = chars.collect();
                out.push((key, rest.trim().to_owned()));
                return Ok(out);
            }
            return Err(format!("`{key}` is not KEY=VALUE"));
        }
        let mut value = String::new();
        let mut quoted = false;
        while let Some(&c) = chars.peek() {
            if c == '"' {
                quoted = !quoted;
            } else if c.is_whitespace() && !quoted {
                break;
            } else {
                value.push(c);
            }
            chars.next();
        }
        if quoted {
            return Err(format!("unterminated quote in the value of `{key}`"));
        }
        out.push((key, value));
    }
}

/// `gpu:8`, `gpu:h100:8`, `gpu:a100:4,gpu:v100:4`, `gpu:h100:8(S:0-1)`, `gpu:8,mps:100` → (count, model).
fn gres_gpus(gres: &str) -> Result<(u32, Option<String>), String> {
    let mut count = 0u32;
    let mut models: Vec<String> = Vec::new();
    // Split at commas outside the `(S:0-1)` socket binding.
    let items =
        hostlist::split_outside(gres, '(', ')').ok_or_else(|| format!("unbalanced `(` in `{gres}`"))?;
    for item in items {
        let item = item.split('(').next().unwrap_or("").trim();
        let fields: Vec<&str> = item.split(':').collect();
        if !fields[0].eq_ignore_ascii_case("gpu") {
            continue;
        }
        let (model, n) = match fields.as_slice() {
            [_] => (None, "1"),
            [_, n] if n.bytes().all(|b| b.is_ascii_digit()) => (None, *n),
            [_, t] => (Some(*t), "1"),
            [_, t, n] => (Some(*t), *n),
            _ => return Err(format!("`{item}` is not gpu[:TYPE][:COUNT]")),
        };
        let n: u32 = match n.strip_suffix(['k', 'K']) {
            Some(k) => k.parse::<u32>().map(|k| k.saturating_mul(1024)),
            None => n.parse(),
        }
        .map_err(|_| format!("`{item}`: count `{n}` is not a number"))?;
        count = count.saturating_add(n);
        if let Some(m) = model
            && !models.iter().any(|x| x == m)
        {
            models.push(m.to_owned());
        }
    }
    let model = if models.len() == 1 { models.pop() } else { None };
    Ok((count, model))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONF: &str = r#"# slurm.conf excerpt in slurm.conf(5) syntax
ClusterName=ai
SlurmctldHost=head01(10.0.0.1)
GresTypes=gpu
NodeName=DEFAULT CPUs=96 RealMemory=1000000 Gres=gpu:h100:8 State=UNKNOWN
NodeName=gpu[01-03] NodeAddr=10.1.0.[1-3] Features=h100,ib,pod-1
NodeName=gpu04 \
    Gres=gpu:a100:4,gpu:a100:4(S:0-1) Features="a100,ib"   # two sockets
NodeName=login01 CPUs=8 Gres=   # no GPUs
NodeName=mix01 Gres=gpu:a100:2,gpu:v100:2,mps:200
PartitionName=gpu Nodes=gpu[01-04] Default=YES
Include /etc/slurm/nodes.conf
"#;

    #[test]
    fn reads_node_lines_defaults_continuations_and_gres() {
        let (nodes, problems) = parse(CONF);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("Include"), "{problems:?}");
        let names: Vec<_> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["gpu01", "gpu02", "gpu03", "gpu04", "login01", "mix01"]);
        assert_eq!(nodes[0].addr.as_deref(), Some("10.1.0.1"));
        assert_eq!(nodes[2].addr.as_deref(), Some("10.1.0.3"));
        assert_eq!((nodes[0].gpus, nodes[0].gpu_model.as_deref()), (8, Some("h100")));
        assert_eq!(nodes[0].features, ["h100", "ib", "pod-1"]);
        assert_eq!((nodes[3].gpus, nodes[3].gpu_model.as_deref()), (8, Some("a100")));
        assert_eq!(nodes[3].features, ["a100", "ib"]);
        assert_eq!(nodes[3].line, 7);
        assert_eq!(nodes[4].gpus, 0, "an empty Gres overrides the default");
        assert_eq!((nodes[5].gpus, nodes[5].gpu_model.as_deref()), (4, None));
        let gpu = gpu_nodes(&nodes);
        assert_eq!(gpu.len(), 5);
        assert_eq!(gpu[0].groups, ["h100", "ib", "pod-1"]);
    }

    proptest::proptest! {
        /// Any text: nodes and problems, never a panic; every node name comes from a NodeName line.
        #[test]
        fn never_panics(text in "(NodeName=[a-z0-9\\[\\],-]{0,12} (Gres=[a-z0-9:(),]{0,16} )?(Features=[a-z,\"]{0,8})?\\\\?\n|#.*\n|[A-Za-z=\" ]{0,20}\n){0,6}") {
            let (nodes, _) = parse(&text);
            for n in nodes {
                proptest::prop_assert!(text.contains(n.name.split(|c: char| c.is_ascii_digit()).next().unwrap_or("")));
            }
        }
    }

    #[test]
    fn bad_lines_are_reported_and_the_rest_read() {
        let (nodes, problems) =
            parse("NodeName=a[1-2 Gres=gpu:8\nNodeName=b1 Gres=gpu:x:y:z\nNodeName=c1 Gres=gpu:2\n");
        assert_eq!(nodes.len(), 2);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(problems[0].line, 1);
        assert_eq!(problems[1].line, 2);
    }
}
