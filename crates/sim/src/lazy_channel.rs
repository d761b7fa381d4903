//! A broadcast channel that exists only once someone subscribes.
//!
//! Why: every simulated host has a console channel and an event channel, and a tokio broadcast channel
//! allocates all its slots up front (128 console chunks are ~7 KiB). With 100,000 BMCs nearly all of them
//! are never watched, so the channel is made on the first `subscribe`. Sending before that drops the
//! value, exactly what a broadcast channel without receivers does.

use std::sync::OnceLock;

use tokio::sync::broadcast::{self, Receiver, Sender, error::SendError};

pub struct LazyBroadcast<T> {
    capacity: usize,
    tx: OnceLock<Sender<T>>,
}

impl<T> std::fmt::Debug for LazyBroadcast<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyBroadcast").field("receivers", &self.receiver_count()).finish()
    }
}

impl<T: Clone> LazyBroadcast<T> {
    pub const fn new(capacity: usize) -> Self {
        LazyBroadcast { capacity, tx: OnceLock::new() }
    }

    pub fn subscribe(&self) -> Receiver<T> {
        self.tx.get_or_init(|| broadcast::channel(self.capacity).0).subscribe()
    }

    /// Like [`Sender::send`]: the number of receivers, or the value back when there are none.
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        match self.tx.get() {
            Some(tx) => tx.send(value),
            None => Err(SendError(value)),
        }
    }
}

impl<T> LazyBroadcast<T> {
    pub fn receiver_count(&self) -> usize {
        self.tx.get().map_or(0, Sender::receiver_count)
    }
}

#[cfg(test)]
mod tests {
    use super::LazyBroadcast;

    #[tokio::test]
    async fn values_reach_subscribers_and_are_dropped_without_them() {
        let ch = LazyBroadcast::new(4);
        assert!(ch.send(1).is_err(), "nobody listens yet");
        let mut rx = ch.subscribe();
        assert_eq!(ch.send(2).ok(), Some(1));
        assert_eq!(rx.recv().await.ok(), Some(2));
        drop(rx);
        assert_eq!(ch.receiver_count(), 0);
        assert!(ch.send(3).is_err());
    }
}
