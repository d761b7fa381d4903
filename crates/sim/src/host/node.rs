//! A host's in-band state, built on first use.
//!
//! Eight GPUs, eight rails and the host settings cost about 3.5 KiB per node, and most nodes of a
//! 100,000-BMC simulated fleet are never asked about their GPUs, sensors or rails (issue 17: under 10 KiB per
//! idle simulated BMC, the fleet under 1 GiB). Until then a node keeps only what builds it. Building is
//! deterministic (from the node's name), so a node built late is the node it would have been at start.

use crate::node_state::NodeState;
use crate::spec::{GpuSpec, RailSpec};

#[derive(Debug)]
pub(crate) struct LazyNode {
    gpus: GpuSpec,
    /// Moved into the state when it is built.
    rails: Vec<RailSpec>,
    built: Option<Box<NodeState>>,
}

impl LazyNode {
    pub(crate) fn new(gpus: GpuSpec, rails: Vec<RailSpec>) -> LazyNode {
        LazyNode { gpus, rails, built: None }
    }

    /// The state of node `name` (built now if it was not yet).
    pub(crate) fn get(&mut self, name: &str) -> &mut NodeState {
        let (gpus, rails) = (&self.gpus, &mut self.rails);
        self.built.get_or_insert_with(|| Box::new(NodeState::new(name, gpus, &std::mem::take(rails))))
    }

    /// [`NodeState::reboot`]; a node never built is in its first state already, which a reboot keeps.
    pub(crate) fn reboot(&mut self) {
        if let Some(n) = &mut self.built {
            n.reboot();
        }
    }

    /// The state if it was built (a node never built has nothing to undo).
    pub(crate) fn built_mut(&mut self) -> Option<&mut NodeState> {
        self.built.as_deref_mut()
    }
}
