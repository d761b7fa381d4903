//! Shared helpers for the netcfg integration tests: contexts, targets, a connection-cutting proxy.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lifeline_netcfg::BlobStore;
use lifeline_netcfg::backup::{BackupContext, BackupTarget};
use lifeline_netcfg::index::{MemoryHostKeyPins, MemoryIndex, MemoryRawStore};
use lifeline_netcfg::ssh::{SshAuth, SshTarget, Timeouts, Transport};
use lifeline_types::{DeviceName, Platform};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub fn ctx(dir: &std::path::Path, raw: bool) -> BackupContext {
    BackupContext {
        pins: Arc::new(MemoryHostKeyPins::default()),
        index: Arc::new(MemoryIndex::default()),
        blobs: BlobStore::new(dir.join("blobs")),
        raw: if raw { Some(Arc::new(MemoryRawStore::default())) } else { None },
    }
}

pub fn target(
    name: &str,
    host: &str,
    port: u16,
    user: &str,
    auth: SshAuth,
    platform: Platform,
) -> BackupTarget {
    BackupTarget::new(
        SshTarget {
            device: DeviceName::new(name).unwrap(),
            host: host.to_owned(),
            port,
            username: user.to_owned(),
            auth,
            enable_password: None,
            algorithms: None,
            transport: Transport::Auto,
            timeouts: Timeouts {
                connect: Duration::from_secs(10),
                auth: Duration::from_secs(10),
                prompt: Duration::from_secs(20),
                command: Duration::from_secs(20),
                total: Duration::from_secs(60),
            },
        },
        platform,
    )
}

/// A TCP proxy to `upstream` that forwards everything but closes both sides once `limit` bytes came
/// from the server (a cable pulled mid-transfer). Returns its address and a counter of bytes forwarded
/// server->client.
pub async fn cutting_proxy(upstream: String, limit: Option<usize>) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let count = Arc::new(AtomicUsize::new(0));
    let c2 = count.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = l.accept().await {
            let upstream = upstream.clone();
            let count = c2.clone();
            tokio::spawn(async move {
                let Ok(mut server) = TcpStream::connect(&upstream).await else { return };
                let (mut cr, mut cw) = client.split();
                let (mut sr, mut sw) = server.split();
                let up = async {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                };
                let down = async {
                    let mut buf = [0u8; 4096];
                    loop {
                        let n = match sr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        let so_far = count.load(Ordering::SeqCst);
                        let allowed = match limit {
                            Some(lim) => n.min(lim.saturating_sub(so_far)),
                            None => n,
                        };
                        if allowed > 0 && cw.write_all(&buf[..allowed]).await.is_err() {
                            break;
                        }
                        count.fetch_add(allowed, Ordering::SeqCst);
                        if allowed < n {
                            break;
                        }
                    }
                };
                // Whichever side ends first ends the connection (the cut closes both).
                tokio::select! { _ = up => {}, _ = down => {} }
            });
        }
    });
    (addr, count)
}
