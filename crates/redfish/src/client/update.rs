//! UpdateService: what it offers, the firmware components and their versions, a `SimpleUpdate` (the BMC
//! pulls the image from a URL) or a DSP0266 multipart push (the image streamed from a file, read in chunks
//! for each attempt, never held whole in memory), and the task monitor an update returns.
//!
//! Why a task's link comes from the `Location` header first: DSP0266 returns the task monitor there on a
//! 202; bmcweb and iDRAC also put a `Task` document in the body, sushy-emulator answers 204 with only the
//! header. Whether the update took is never judged here: the engine reads the version back.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use reqwest::Method;
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::request::Payload;
use super::transport::{body_bytes, error_message};
use super::{Client, Listing};
use crate::error::RedfishError;
use crate::update_model::{FirmwareSlot, TaskDoc, UpdateServiceDoc, multipart_frame};

/// How an update was accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdateAccepted {
    pub status: u16,
    /// The task monitor (or task) to poll; `None`: the BMC gave none.
    pub task: Option<String>,
}

/// One poll of a task monitor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskPoll {
    pub status: u16,
    pub task: TaskDoc,
}

/// Chunk size of a streamed image.
const CHUNK: usize = 64 * 1024;

fn boundary() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let n = N.fetch_add(1, Ordering::Relaxed);
    let h =
        (t as u64 ^ n.rotate_left(32) ^ u64::from(std::process::id())).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("lifeline{h:016x}{n:016x}")
}

impl Client {
    /// The UpdateService, if the service root links one.
    pub async fn update_service(&self) -> Result<Option<UpdateServiceDoc>, RedfishError> {
        let Some(link) = self.inner.root.update_service.clone() else { return Ok(None) };
        let (v, _) = self.get_json_now(&link).await?;
        Ok(Some(UpdateServiceDoc::from_value(&v, &link)))
    }

    /// Every member of a `FirmwareInventory`; one that cannot be read is a warning.
    pub async fn firmware_slots(&self, link: &str) -> Result<Listing<FirmwareSlot>, RedfishError> {
        let l = self.members(link).await?;
        Ok(Listing {
            items: l.items.iter().map(|(id, v)| FirmwareSlot::from_value(v, id)).collect(),
            warnings: l.warnings,
        })
    }

    /// One component read fresh from the BMC (the read-back of an update).
    pub async fn firmware_slot(&self, link: &str) -> Result<FirmwareSlot, RedfishError> {
        let (v, _) = self.get_json_now(link).await?;
        Ok(FirmwareSlot::from_value(&v, link))
    }

    /// POST `SimpleUpdate` with `body` (`ImageURI`, `Targets`, `TransferProtocol` when listed).
    pub async fn simple_update(&self, target: &str, body: &Value) -> Result<UpdateAccepted, RedfishError> {
        let reply = self.request(Method::POST, target, Some(body)).await?;
        self.accepted(reply).await
    }

    /// Pushes the image at `path` to `uri` as `multipart/form-data` (`UpdateParameters` = `params`,
    /// `UpdateFile` = the image, streamed), taking at most `within`.
    pub async fn multipart_push(
        &self,
        uri: &str,
        path: &Path,
        params: &Value,
        within: Duration,
    ) -> Result<UpdateAccepted, RedfishError> {
        let bmc = self.bmc().to_owned();
        let io = |source| RedfishError::Image { bmc: bmc.clone(), path: path.to_owned(), source };
        let size = std::fs::metadata(path).map_err(io)?.len();
        let name = path.file_name().map_or("image".into(), |n| n.to_string_lossy().into_owned());
        let frame = multipart_frame(&boundary(), params, &name);
        let length = frame.head.len() as u64 + size + frame.tail.len() as u64;
        let make = || -> Result<reqwest::Body, RedfishError> {
            let file = std::fs::File::open(path).map_err(io)?;
            let file = tokio::fs::File::from_std(file);
            let head = futures::stream::once(futures::future::ready(Ok::<_, std::io::Error>(
                bytes::Bytes::from(frame.head.clone()),
            )));
            let tail =
                futures::stream::once(futures::future::ready(Ok(bytes::Bytes::from(frame.tail.clone()))));
            let image = futures::stream::unfold(Some(file), |f| async move {
                let mut f = f?;
                let mut buf = vec![0u8; CHUNK];
                match f.read(&mut buf).await {
                    Ok(0) => None,
                    Ok(n) => {
                        buf.truncate(n);
                        Some((Ok(bytes::Bytes::from(buf)), Some(f)))
                    }
                    Err(e) => Some((Err(e), None)),
                }
            });
            Ok(reqwest::Body::wrap_stream(head.chain(image).chain(tail)))
        };
        let payload = Payload::Upload { make: &make, content_type: &frame.content_type, length, within };
        let reply = self.request_upload(uri, payload).await?;
        self.accepted(reply).await
    }

    async fn accepted(&self, reply: super::transport::Reply) -> Result<UpdateAccepted, RedfishError> {
        let t = &self.inner.t;
        let status = reply.resp.status();
        let location = reply
            .resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned);
        let (url, m) = (reply.url.clone(), reply.method);
        let bytes = body_bytes(t, reply).await?;
        if !status.is_success() {
            return Err(RedfishError::Status {
                bmc: t.bmc.clone(),
                method: m,
                url: url.to_string(),
                status: status.as_u16(),
                message: error_message(&bytes),
            });
        }
        let body: Option<Value> = serde_json::from_slice(&bytes).ok();
        let from_body = body.as_ref().and_then(|v| {
            let ty = v.get("@odata.type")?.as_str()?;
            ty.contains("Task").then(|| v.get("@odata.id")?.as_str().map(str::to_owned))?
        });
        // A Location is a task monitor only within this BMC: a foreign one is ignored, never followed.
        let location = location.filter(|l| t.url(l).is_ok());
        Ok(UpdateAccepted { status: status.as_u16(), task: location.or(from_body) })
    }

    /// Every task of the service's `TaskService` (DSP0266 fixes its path), with its link.
    pub async fn tasks(&self) -> Result<Vec<(String, TaskDoc)>, RedfishError> {
        let l = self.members("/redfish/v1/TaskService/Tasks").await?;
        Ok(l.items.iter().map(|(link, v)| (link.clone(), TaskDoc::from_value(v))).collect())
    }

    /// Polls a task monitor (or task): 202 carries the running task; a 2xx whose body has no `TaskState`
    /// is the finished operation's own answer (`Completed`).
    pub async fn task_poll(&self, link: &str) -> Result<TaskPoll, RedfishError> {
        let t = &self.inner.t;
        let reply = self.request(Method::GET, link, None).await?;
        let status = reply.resp.status();
        let (url, m) = (reply.url.clone(), reply.method);
        let bytes = body_bytes(t, reply).await?;
        if !status.is_success() {
            return Err(RedfishError::Status {
                bmc: t.bmc.clone(),
                method: m,
                url: url.to_string(),
                status: status.as_u16(),
                message: error_message(&bytes),
            });
        }
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let mut task = TaskDoc::from_value(&v);
        if task.state.is_none() && status.as_u16() != 202 {
            task.state = Some("Completed".into());
        }
        Ok(TaskPoll { status: status.as_u16(), task })
    }
}
