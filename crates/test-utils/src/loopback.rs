//! Per-test loopback addresses: 127.0.0.0/8 has 16 million, so no two tests ever share a port space.

use std::net::{Ipv4Addr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A loopback address no other test process is using: derived from the process id and a counter, in
/// 127.64.0.0–127.254.255.255 (below that are the example inventory's and the peers' addresses), and
/// checked by binding TCP and UDP port 0 on it.
pub fn unique_loopback() -> Ipv4Addr {
    let pid = std::process::id();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mixed = pid.wrapping_mul(2_654_435_761).wrapping_add(n.wrapping_mul(40_503));
        let a = 64 + (mixed >> 16) % 191;
        let b = (mixed >> 8) & 0xff;
        let c = 1 + (mixed % 254);
        let ip = Ipv4Addr::new(127, a as u8, b as u8, c as u8);
        if TcpListener::bind((ip, 0)).is_ok() && UdpSocket::bind((ip, 0)).is_ok() {
            return ip;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_differ_and_are_loopback() {
        let a = unique_loopback();
        let b = unique_loopback();
        assert_ne!(a, b);
        assert!(a.is_loopback() && b.is_loopback());
        assert!(a.octets()[1] >= 64);
    }
}
