//! A console that plays back recorded output: the expect engine over a saved transcript or console log,
//! read in the pieces given, with nothing to send to. Why: a runbook's patterns can be tried against
//! what a console printed last night without touching the machine, and the fuzz target and the
//! regression tests drive the engine with the reads a link could deliver.

use std::collections::VecDeque;

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::ConsoleError;
use crate::expect::ConsoleIo;

/// Recorded output, one read per piece; the console closes after the last. What is sent is dropped.
#[derive(Debug, Default)]
pub struct Replay(VecDeque<Bytes>);

impl Replay {
    /// `output` in reads of `chunk` bytes (at least one).
    pub fn in_reads(output: &[u8], chunk: usize) -> Replay {
        Replay(output.chunks(chunk.max(1)).map(Bytes::copy_from_slice).collect())
    }
}

#[async_trait]
impl ConsoleIo for Replay {
    async fn recv_bytes(&mut self) -> Option<Bytes> {
        self.0.pop_front()
    }
    async fn send_bytes(&mut self, _: &[u8]) -> Result<(), ConsoleError> {
        Ok(())
    }
    async fn send_break(&mut self) -> Result<(), ConsoleError> {
        Ok(())
    }
}
