//! One listening socket per protocol and port for any number of simulated BMC addresses.
//!
//! Why: a socket per BMC per protocol put 10,000 BMCs past the usual 20,000 open-file limit. Every BMC
//! still has its own address (clients must see distinct BMCs), but the addresses of one port share one
//! socket bound to the wildcard address:
//! - UDP (IPMI): `IP_PKTINFO` makes `recvmsg` report each datagram's destination address, which names the
//!   BMC; the reply leaves from that address (`sendmsg` with an `in_pktinfo` source), because clients
//!   (ours, ipmitool, FreeIPMI) drop answers from an address they did not ask.
//! - TCP (Redfish): the accepted socket's local address names the BMC.
//!
//! A fleet on loopback binds the wildcard socket to `lo` (`SO_BINDTODEVICE`, unprivileged since Linux 5.7)
//! so it listens on no other interface; anything addressed to an address that is not a simulated BMC is
//! dropped (UDP) or closed (TCP). Loopback addresses other than 127.0.0.1 need no setup on Linux. Where the
//! wildcard bind fails (the port is taken by another process, e.g. a second simulator on the same port
//! range, or `lo` binding is refused) and for IPv6, the address gets a socket of its own, as before.

use std::collections::HashMap;
use std::ffi::OsString;
use std::future::Future;
use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::socket::{
    ControlMessage, ControlMessageOwned, MsgFlags, SockaddrIn, recvmsg, sendmsg, setsockopt, sockopt,
};
use tokio::io::Interest;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Largest datagram read (IPMI over a LAN fits an Ethernet frame).
const MAX_DATAGRAM: usize = 1500;
/// Pending connections per listener: a shared listener takes the whole fleet's handshakes.
const BACKLOG: u32 = 4096;

/// What receives the datagrams addressed to one simulated BMC.
pub(crate) trait DatagramService: Send + Sync + 'static {
    /// Called on the socket's receive task: must not block (hand the datagram on).
    fn datagram(&self, data: &[u8], from: SocketAddr, reply: &UdpReply);
}

/// What serves the connections made to one simulated BMC.
pub(crate) type StreamHandler =
    Arc<dyn Fn(TcpStream) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Sends a BMC's answers from the BMC's own address.
#[derive(Clone, Debug)]
pub struct UdpReply {
    socket: Arc<UdpSocket>,
    /// The BMC's address when the socket is shared (the source to set on every datagram).
    source: Option<Ipv4Addr>,
}

impl UdpReply {
    /// Replies through a socket bound to the BMC's own address.
    pub fn direct(socket: Arc<UdpSocket>) -> UdpReply {
        UdpReply { socket, source: None }
    }

    pub async fn send_to(&self, data: &[u8], to: SocketAddr) -> io::Result<usize> {
        match (self.source, to) {
            (Some(src), SocketAddr::V4(to)) => {
                self.socket.async_io(Interest::WRITABLE, || send_from(&self.socket, data, src, to)).await
            }
            _ => self.socket.send_to(data, to).await,
        }
    }
}

fn send_from(socket: &UdpSocket, data: &[u8], src: Ipv4Addr, to: SocketAddrV4) -> io::Result<usize> {
    let info = nix::libc::in_pktinfo {
        ipi_ifindex: 0,
        ipi_spec_dst: nix::libc::in_addr { s_addr: u32::from(src).to_be() },
        ipi_addr: nix::libc::in_addr { s_addr: 0 },
    };
    let to = SockaddrIn::from(to);
    sendmsg(
        socket.as_raw_fd(),
        &[IoSlice::new(data)],
        &[ControlMessage::Ipv4PacketInfo(&info)],
        MsgFlags::empty(),
        Some(&to),
    )
    .map_err(io::Error::from)
}

/// One datagram: its length, sender and destination address.
fn recv_with_destination(
    socket: &UdpSocket,
    buf: &mut [u8],
    cmsg: &mut [u8],
) -> io::Result<(usize, SocketAddr, Option<Ipv4Addr>)> {
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<SockaddrIn>(socket.as_raw_fd(), &mut iov, Some(cmsg), MsgFlags::empty())
        .map_err(io::Error::from)?;
    let mut dst = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            if let ControlMessageOwned::Ipv4PacketInfo(info) = c {
                dst = Some(Ipv4Addr::from(u32::from_be(info.ipi_addr.s_addr)));
            }
        }
    }
    let from = msg.address.map(|a| SocketAddr::V4(SocketAddrV4::new(a.ip(), a.port())));
    let n = msg.bytes;
    let from = from.ok_or_else(|| io::Error::other("datagram without a source address"))?;
    Ok((n, from, dst))
}

/// Which wildcard socket an address can share: the requested port, and whether it is loopback (bound to
/// `lo`) or another IPv4 address (bound to every interface).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct GroupKey {
    port: u16,
    loopback: bool,
}

fn group_key(addr: SocketAddr) -> Option<(GroupKey, Ipv4Addr)> {
    match addr {
        SocketAddr::V4(a) if !a.ip().is_unspecified() => {
            Some((GroupKey { port: a.port(), loopback: a.ip().is_loopback() }, *a.ip()))
        }
        _ => None,
    }
}

struct UdpGroup {
    /// `Some` for a shared wildcard socket (routes by destination), `None` for a socket of one address.
    key: Option<GroupKey>,
    socket: Arc<UdpSocket>,
    routes: HashMap<Ipv4Addr, Arc<dyn DatagramService>>,
    /// The only service of a socket of one address.
    single: Option<Arc<dyn DatagramService>>,
}

struct TcpGroup {
    key: Option<GroupKey>,
    listener: TcpListener,
    routes: HashMap<IpAddr, StreamHandler>,
    /// The only handler of a listener of one address.
    single: Option<StreamHandler>,
}

/// The listening sockets of a fleet, filled while it starts, served once everything is bound.
#[derive(Default)]
pub(crate) struct Listeners {
    udp: Vec<UdpGroup>,
    tcp: Vec<TcpGroup>,
    /// Share one wildcard socket per port. Off for small fleets: a wildcard socket on a port makes every
    /// later bind of a single address on that port fail, so two small simulators on the same port offset
    /// (parallel tests, each on its own loopback addresses) could not run side by side.
    share: bool,
}

/// Fleets with more BMCs than this share one socket per port and protocol.
pub(crate) const SHARE_ABOVE: usize = 64;

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listeners").field("udp", &self.udp.len()).field("tcp", &self.tcp.len()).finish()
    }
}

fn wildcard(key: GroupKey) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), key.port)
}

fn bind_lo<F: std::os::fd::AsFd>(fd: &F) -> io::Result<()> {
    setsockopt(fd, sockopt::BindToDevice, &OsString::from("lo")).map_err(io::Error::from)
}

fn shared_udp(key: GroupKey) -> io::Result<UdpSocket> {
    let std = std::net::UdpSocket::bind(wildcard(key))?;
    std.set_nonblocking(true)?;
    if key.loopback {
        bind_lo(&std)?;
    }
    setsockopt(&std, sockopt::Ipv4PacketInfo, &true).map_err(io::Error::from)?;
    // One socket takes every BMC's datagrams: a 1,000-BMC sweep's logins arrive at once and overflowed the
    // default ~208 KiB buffer (drops counted by the kernel; each cost the client a retransmission wait).
    // The kernel caps this at net.core.rmem_max; best effort.
    let _ = setsockopt(&std, sockopt::RcvBuf, &(4usize << 20));
    UdpSocket::from_std(std)
}

fn tcp_listener(addr: SocketAddr, lo: bool) -> io::Result<TcpListener> {
    let sock = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    sock.set_reuseaddr(true)?;
    if lo {
        bind_lo(&sock)?;
    }
    sock.bind(addr)?;
    sock.listen(BACKLOG)
}

impl Listeners {
    /// Listeners for a fleet of `bmcs` BMCs: shared sockets above [`SHARE_ABOVE`].
    pub fn for_fleet(bmcs: usize) -> Listeners {
        Listeners { share: bmcs > SHARE_ABOVE, ..Listeners::default() }
    }

    /// Routes the datagrams for `addr` to the service `make` builds for the port bound; returns that port.
    pub fn udp(
        &mut self,
        addr: SocketAddr,
        make: impl FnOnce(u16) -> Arc<dyn DatagramService>,
    ) -> io::Result<u16> {
        if let Some((key, ip)) = group_key(addr).filter(|_| self.share) {
            if let Some(g) = self.udp.iter_mut().find(|g| g.key == Some(key) && !g.routes.contains_key(&ip)) {
                let port = g.socket.local_addr()?.port();
                g.routes.insert(ip, make(port));
                return Ok(port);
            }
            match shared_udp(key) {
                Ok(socket) => {
                    let port = socket.local_addr()?.port();
                    // Port 0 asked for any port: later addresses share the one the OS picked.
                    let key = GroupKey { port: if key.port == 0 { 0 } else { port }, ..key };
                    let routes = HashMap::from([(ip, make(port))]);
                    self.udp.push(UdpGroup {
                        key: Some(key),
                        socket: Arc::new(socket),
                        routes,
                        single: None,
                    });
                    return Ok(port);
                }
                Err(e) => {
                    tracing::debug!(%addr, error = %e, "shared UDP socket refused; binding the address")
                }
            }
        }
        let std = std::net::UdpSocket::bind(addr)?;
        std.set_nonblocking(true)?;
        let socket = Arc::new(UdpSocket::from_std(std)?);
        let port = socket.local_addr()?.port();
        self.udp.push(UdpGroup { key: None, socket, routes: HashMap::new(), single: Some(make(port)) });
        Ok(port)
    }

    /// Routes the connections made to `addr` to `handler`; returns the port it listens on.
    pub fn tcp(&mut self, addr: SocketAddr, handler: StreamHandler) -> io::Result<u16> {
        if let Some((key, ip)) = group_key(addr).filter(|_| self.share) {
            let ip = IpAddr::V4(ip);
            if let Some(g) = self.tcp.iter_mut().find(|g| g.key == Some(key) && !g.routes.contains_key(&ip)) {
                g.routes.insert(ip, handler);
                return g.listener.local_addr().map(|a| a.port());
            }
            match tcp_listener(wildcard(key), key.loopback) {
                Ok(listener) => {
                    let port = listener.local_addr()?.port();
                    let key = GroupKey { port: if key.port == 0 { 0 } else { port }, ..key };
                    let routes = HashMap::from([(ip, handler)]);
                    self.tcp.push(TcpGroup { key: Some(key), listener, routes, single: None });
                    return Ok(port);
                }
                Err(e) => {
                    tracing::debug!(%addr, error = %e, "shared TCP listener refused; binding the address")
                }
            }
        }
        let listener = tcp_listener(addr, false)?;
        let port = listener.local_addr()?.port();
        self.tcp.push(TcpGroup { key: None, listener, routes: HashMap::new(), single: Some(handler) });
        Ok(port)
    }

    /// Descriptors held: one per shared port, plus one per address that could not share.
    pub fn sockets(&self) -> usize {
        self.udp.len() + self.tcp.len()
    }

    /// Serves every socket until `cancel` fires.
    pub fn serve(self, cancel: &CancellationToken, tasks: &mut JoinSet<()>) {
        for g in self.udp {
            tasks.spawn(serve_udp(g, cancel.clone()));
        }
        for g in self.tcp {
            tasks.spawn(serve_tcp(g, cancel.clone()));
        }
    }
}

async fn serve_udp(g: UdpGroup, cancel: CancellationToken) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut cmsg = nix::cmsg_space!(nix::libc::in_pktinfo);
    let direct = UdpReply::direct(g.socket.clone());
    loop {
        let r = tokio::select! {
            _ = cancel.cancelled() => return,
            r = g.socket.async_io(Interest::READABLE, || {
                if g.single.is_some() {
                    let (n, from) = g.socket.try_recv_from(&mut buf)?;
                    Ok((n, from, None))
                } else {
                    recv_with_destination(&g.socket, &mut buf, &mut cmsg)
                }
            }) => r,
        };
        let Ok((n, from, dst)) = r else { continue };
        match (&g.single, dst) {
            (Some(s), _) => s.datagram(&buf[..n], from, &direct),
            (None, Some(dst)) => {
                if let Some(s) = g.routes.get(&dst) {
                    let reply = UdpReply { socket: g.socket.clone(), source: Some(dst) };
                    s.datagram(&buf[..n], from, &reply);
                }
            }
            (None, None) => {}
        }
    }
}

async fn serve_tcp(g: TcpGroup, cancel: CancellationToken) {
    loop {
        let tcp = tokio::select! {
            r = g.listener.accept() => match r {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = cancel.cancelled() => return,
        };
        let handler = match &g.single {
            Some(h) => h,
            None => match tcp.local_addr().ok().and_then(|a| g.routes.get(&a.ip())) {
                Some(h) => h,
                None => continue,
            },
        };
        let conn = handler(tcp);
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = conn => {}
                _ = cancel.cancelled() => {}
            }
        });
    }
}
