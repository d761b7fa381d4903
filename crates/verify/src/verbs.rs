//! Checks through libibverbs (feature `verbs`): the port's active MTU as the HCA negotiated it, and a
//! loopback transfer through each rail's HCA.
//!
//! sysfs says what the kernel believes; verbs proves the HCA can actually move data. These checks only run
//! against the live `/sys` (the tree libibverbs itself reads): with a recorded tree they are skipped, and on
//! a machine without RDMA they FAIL cleanly with the errno libibverbs gives (ENOSYS: no kernel support).
//!
//! The `ibverbs` crate exposes SEND/RECV only (no RDMA WRITE work request, no port attributes), so the
//! active MTU is read with a direct `ibv_query_port` call and the loopback uses SEND/RECV on an RC queue
//! pair connected to itself.

use std::ffi::CStr;
use std::time::{Duration, Instant};

use ibverbs_sys as ffi;

use crate::policy::RailPolicy;
use crate::rails::subject;
use crate::report::{Check, Evidence, Status};
use crate::roots::Roots;
use crate::timed;

const LOOPBACK_TIMEOUT: Duration = Duration::from_secs(2);

pub fn checks(roots: &Roots, rail: &RailPolicy, enabled: bool) -> Vec<Check> {
    if !enabled {
        // Not asked for (e.g. `--no-verbs`): no rows, so reports look the same with or without the feature.
        return Vec::new();
    }
    let subj = subject(rail);
    if !roots.is_live() {
        let why = format!("verbs checks need the live /sys (sysfs root is {})", roots.sysfs.display());
        return vec![
            Check::new("rail.active_mtu", subj.clone(), Status::Skip, why.clone()),
            Check::new("rail.loopback", subj, Status::Skip, why),
        ];
    }
    vec![timed(|| active_mtu(rail)), timed(|| loopback(rail))]
}

/// IBV_MTU_* enum value to bytes.
pub fn mtu_bytes(v: u32) -> Option<u32> {
    match v {
        1 => Some(256),
        2 => Some(512),
        3 => Some(1024),
        4 => Some(2048),
        5 => Some(4096),
        _ => None,
    }
}

/// The largest IB MTU (path MTU) that fits in a netdev MTU: RoCE uses 4096 under a 9000-byte netdev MTU.
pub fn expected_ib_mtu(netdev_mtu: u32) -> u32 {
    [4096, 2048, 1024, 512, 256].into_iter().find(|m| *m <= netdev_mtu).unwrap_or(256)
}

fn list_error(e: &std::io::Error) -> (Status, String) {
    if e.raw_os_error() == Some(libc::ENOSYS) {
        (Status::Fail, format!("libibverbs: no kernel RDMA support (ENOSYS: {e})"))
    } else {
        (Status::Error, format!("libibverbs: ibv_get_device_list failed: {e}"))
    }
}

fn active_mtu(rail: &RailPolicy) -> Check {
    let subj = subject(rail);
    let src = format!("ibv_query_port({}, {})", rail.hca, rail.port);
    match query_active_mtu(&rail.hca, rail.port) {
        Ok(Some(raw)) => {
            let bytes = mtu_bytes(raw).unwrap_or(0);
            let want = if rail.link_layer == crate::policy::LinkLayer::Ethernet {
                expected_ib_mtu(rail.mtu)
            } else {
                4096
            };
            let ev = vec![Evidence::new("active_mtu", format!("{bytes} (IBV_MTU enum {raw})"), src)];
            if bytes == want {
                Check::new("rail.active_mtu", subj, Status::Pass, format!("active MTU {bytes}"))
                    .with_evidence(ev)
            } else {
                Check::new(
                    "rail.active_mtu",
                    subj,
                    Status::Fail,
                    format!("active MTU {bytes}, expected {want}"),
                )
                .with_evidence(ev)
            }
        }
        Ok(None) => Check::new(
            "rail.active_mtu",
            subj,
            Status::Fail,
            format!("libibverbs lists no device {} (ENODEV)", rail.hca),
        ),
        Err((status, msg)) => Check::new("rail.active_mtu", subj, status, msg),
    }
}

/// Opens the device by name and queries one port. `Ok(None)`: no such device.
#[allow(unsafe_code)]
fn query_active_mtu(hca: &str, port: u32) -> Result<Option<u32>, (Status, String)> {
    let mut n = 0i32;
    // SAFETY: ibv_get_device_list writes the count to `n` and returns NULL (errno set) or an array of `n`
    // device pointers that stays valid until ibv_free_device_list, which every path below calls.
    let list = unsafe { ffi::ibv_get_device_list(&mut n) };
    if list.is_null() {
        return Err(list_error(&std::io::Error::last_os_error()));
    }
    let mut result = Ok(None);
    for i in 0..n.max(0) as usize {
        // SAFETY: i < n, within the array returned above.
        let dev = unsafe { *list.add(i) };
        // SAFETY: dev is a valid device from the list; the name is a NUL-terminated string owned by it.
        let name = unsafe { CStr::from_ptr(ffi::ibv_get_device_name(dev)) };
        if name.to_bytes() != hca.as_bytes() {
            continue;
        }
        // SAFETY: dev is valid while the list is alive; the context is closed below.
        let ctx = unsafe { ffi::ibv_open_device(dev) };
        if ctx.is_null() {
            result =
                Err((Status::Error, format!("ibv_open_device({hca}): {}", std::io::Error::last_os_error())));
            break;
        }
        let mut attr = ffi::ibv_port_attr::default();
        // SAFETY: ctx is an open context; attr is a properly sized, writable ibv_port_attr.
        let rc =
            unsafe { ffi::ibv_query_port(ctx, port as u8, &mut attr as *mut ffi::ibv_port_attr as *mut _) };
        result = if rc == 0 {
            Ok(Some(attr.active_mtu))
        } else {
            Err((
                Status::Error,
                format!("ibv_query_port({hca}, {port}): {}", std::io::Error::from_raw_os_error(rc)),
            ))
        };
        // SAFETY: ctx was opened above and is not used afterwards.
        unsafe { ffi::ibv_close_device(ctx) };
        break;
    }
    // SAFETY: list came from ibv_get_device_list and is freed exactly once.
    unsafe { ffi::ibv_free_device_list(list) };
    result
}

fn loopback(rail: &RailPolicy) -> Check {
    let subj = subject(rail);
    let t = Instant::now();
    match loopback_inner(rail) {
        Ok(bytes) => Check::new(
            "rail.loopback",
            subj,
            Status::Pass,
            format!("{bytes}-byte loopback SEND/RECV in {} us", t.elapsed().as_micros()),
        ),
        Err((status, msg)) => Check::new("rail.loopback", subj, status, msg),
    }
}

#[allow(unsafe_code)]
fn loopback_inner(rail: &RailPolicy) -> Result<usize, (Status, String)> {
    let devices = ibverbs::devices().map_err(|e| list_error(&e))?;
    let dev = devices
        .iter()
        .find(|d| d.name().is_some_and(|n| n.to_bytes() == rail.hca.as_bytes()))
        .ok_or((Status::Fail, format!("libibverbs lists no device {} (ENODEV)", rail.hca)))?;
    let e = |what: &str, err: std::io::Error| (Status::Fail, format!("{} {what}: {err}", rail.hca));
    let ctx = dev.open().map_err(|err| e("open", err))?;
    let cq = ctx.create_cq(16, 0).map_err(|err| e("create_cq", err))?;
    let pd = ctx.alloc_pd().map_err(|err| e("alloc_pd", err))?;
    let gid_index = rail.address().and_then(|want| {
        ctx.gid_table().iter().find(|g| {
            let bits = (u128::from(g.gid.subnet_prefix()) << 64) | u128::from(g.gid.interface_id());
            std::net::Ipv6Addr::from(bits).to_ipv4_mapped() == Some(want)
        })
    });
    let mut builder = pd.create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC);
    if let Some(g) = gid_index {
        builder.set_gid_index(g.gid_index);
    }
    let prepared = builder.build().map_err(|err| e("build qp", err))?;
    let me = prepared.endpoint();
    let mut qp = prepared.handshake(me).map_err(|err| e("connect qp to itself", err))?;
    let mut send = pd.allocate::<u8>(4096).map_err(|err| e("reg_mr", err))?;
    let mut recv = pd.allocate::<u8>(4096).map_err(|err| e("reg_mr", err))?;
    for (i, b) in send.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    // SAFETY: the regions must outlive their work requests. We return normally only after both
    // completions were polled; every early return after posting leaks the regions (mem::forget), so the
    // HCA never DMAs into freed memory.
    unsafe {
        qp.post_receive(&mut recv, .., 2).map_err(|err| e("post_receive", err))?;
        if let Err(err) = qp.post_send(&mut send, .., 1) {
            std::mem::forget(recv);
            return Err(e("post_send", err));
        }
    }
    let mut done = 0;
    let mut completions = [ibverbs::ibv_wc::default(); 4];
    let deadline = Instant::now() + LOOPBACK_TIMEOUT;
    while done < 2 {
        let got = match cq.poll(&mut completions) {
            Ok(got) => got,
            Err(err) => {
                std::mem::forget(send);
                std::mem::forget(recv);
                return Err(e("poll_cq", err));
            }
        };
        for wc in got.iter() {
            if let Some((status, vendor)) = wc.error() {
                std::mem::forget(send);
                std::mem::forget(recv);
                return Err((
                    Status::Fail,
                    format!("{} loopback completion error {status:?} (vendor {vendor})", rail.hca),
                ));
            }
            done += 1;
        }
        if Instant::now() > deadline {
            std::mem::forget(send);
            std::mem::forget(recv);
            return Err((
                Status::Fail,
                format!("{} loopback timed out after {LOOPBACK_TIMEOUT:?}", rail.hca),
            ));
        }
    }
    if recv[..] != send[..] {
        return Err((Status::Fail, format!("{} loopback data corrupted", rail.hca)));
    }
    Ok(send.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtu_mapping() {
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(mtu_bytes(9), None);
        assert_eq!(expected_ib_mtu(9000), 4096);
        assert_eq!(expected_ib_mtu(1500), 1024);
    }
}
