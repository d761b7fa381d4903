//! A UDP relay in front of a BMC, for tests of what a lossy or cut OOB link does to a client: it drops a
//! seeded share of the datagrams each way, or every datagram toward the BMC while the link is cut, and
//! counts what it dropped and passed. Each client address gets an upstream socket of its own, so replies
//! find their way back to the socket that asked (a client that spreads sessions over several sockets,
//! such as the IPMI mux, works through it).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use tokio::net::UdpSocket;

pub struct UdpRelay {
    /// Where clients send instead of the BMC.
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    counts: Arc<Counts>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Counts {
    dropped: AtomicU32,
    passed: AtomicU32,
}

impl Drop for UdpRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl UdpRelay {
    /// Relays to `upstream` from a fresh loopback address, dropping `loss` (0.0–1.0) of the datagrams
    /// each way, chosen by a generator seeded with `seed` (reproducible for one interleaving).
    pub async fn start(upstream: SocketAddr, loss: f64, seed: u64) -> UdpRelay {
        let ip = crate::unique_loopback();
        let front = Arc::new(UdpSocket::bind((ip, 0)).await.expect("relay socket"));
        let addr = front.local_addr().expect("relay address");
        let cut = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let rng = Arc::new(AtomicU64::new(seed));
        let (c, n) = (cut.clone(), counts.clone());
        let task = tokio::spawn(async move {
            let mut ups: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
            let mut back = tokio::task::JoinSet::new();
            let mut buf = vec![0u8; 2048];
            loop {
                let Ok((len, from)) = front.recv_from(&mut buf).await else { continue };
                if c.load(Ordering::SeqCst) || chance(&rng) < loss {
                    n.dropped.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                n.passed.fetch_add(1, Ordering::SeqCst);
                let up = match ups.get(&from) {
                    Some(up) => up.clone(),
                    None => {
                        let up = Arc::new(UdpSocket::bind((ip, 0)).await.expect("relay upstream socket"));
                        let (up2, front2, n2, rng2) = (up.clone(), front.clone(), n.clone(), rng.clone());
                        back.spawn(async move {
                            let mut buf = vec![0u8; 2048];
                            while let Ok((len, _)) = up2.recv_from(&mut buf).await {
                                if chance(&rng2) < loss {
                                    n2.dropped.fetch_add(1, Ordering::SeqCst);
                                    continue;
                                }
                                n2.passed.fetch_add(1, Ordering::SeqCst);
                                let _ = front2.send_to(&buf[..len], from).await;
                            }
                        });
                        ups.insert(from, up.clone());
                        up
                    }
                };
                let _ = up.send_to(&buf[..len], upstream).await;
            }
        });
        UdpRelay { addr, cut, counts, task }
    }

    /// Cuts the link toward the BMC (every datagram dropped and counted) or restores it.
    pub fn cut(&self, on: bool) {
        self.cut.store(on, Ordering::SeqCst);
    }

    pub fn dropped(&self) -> u32 {
        self.counts.dropped.load(Ordering::SeqCst)
    }

    pub fn passed(&self) -> u32 {
        self.counts.passed.load(Ordering::SeqCst)
    }
}

/// A uniform draw in [0, 1) from a shared splitmix64 state.
fn chance(state: &AtomicU64) -> f64 {
    let mut z = state.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}
