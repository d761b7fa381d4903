//! Long-lived streams — the live SSE feed and console WebSockets — counted per user and per source. Each
//! holds a task, a store poller or a console viewer's buffer for as long as a client keeps it open; without
//! a count one token (or one address) could open thousands. The source limit is higher than the user limit
//! because behind the documented `ssh -L` every browser of a team comes from 127.0.0.1.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Streams one user may hold open at once.
pub const PER_USER: usize = 16;
/// Streams one source address may hold open at once (all its users together).
pub const PER_SOURCE: usize = 64;

/// Open streams by key (`user NAME`, `source ADDR`).
#[derive(Debug, Default)]
pub struct StreamCounts(Mutex<HashMap<String, usize>>);

/// One open stream; gives its place back when dropped (the stream ended or the client went away).
#[derive(Debug)]
pub struct StreamSlot {
    s: AppState,
    keys: Vec<String>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut m = self.s.streams.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for k in &self.keys {
            if let Some(n) = m.get_mut(k) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    m.remove(k);
                }
            }
        }
    }
}

/// Takes a place for one more stream of `caller`, or refuses (429) when the user or the source is full.
pub fn open(s: &AppState, caller: &Caller) -> ApiResult<StreamSlot> {
    let mut keys = vec![(format!("user {}", caller.user), PER_USER)];
    if let Some(a) = caller.addr {
        keys.push((format!("source {a}"), PER_SOURCE));
    }
    let mut m = s.streams.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (k, limit) in &keys {
        if m.get(k).copied().unwrap_or(0) >= *limit {
            return Err(ApiError::TooManyStreams { who: k.clone(), limit: *limit });
        }
    }
    for (k, _) in &keys {
        *m.entry(k.clone()).or_default() += 1;
    }
    Ok(StreamSlot { s: s.clone(), keys: keys.into_iter().map(|(k, _)| k).collect() })
}
