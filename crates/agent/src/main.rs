//! lifeline-agent (wip).
fn main() {}
