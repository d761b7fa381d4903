//! Re-admission (wip).
