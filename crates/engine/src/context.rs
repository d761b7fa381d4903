//! The [`Lifeline`] context: built once per process (a CLI command, the server, a runbook executor) from the
//! configuration and the acting identity; it holds the store, the inventory and the long-lived pools, and
//! every operation in `ops/` is a method on it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use lifeline_bmc::{BmcOptions, BmcPool, TlsPolicy};
use lifeline_inventory::{Inventory, InventoryError};
use lifeline_store::Store;
use tokio::sync::OnceCell;

use crate::adapters::{StoreMemory, StorePins};
use crate::audit::AuditService;
use crate::config::{self, LoadedConfig, Paths, Settings};
use crate::error::{EngineError, Result};
use crate::lease::Leases;

/// Who is acting, for the audit log and lease holders.
#[derive(Debug, Clone)]
pub struct Identity {
    /// `cli:<unix user>`, `web:<user>`, `scheduler`, `runbook:<run id>`.
    pub actor: String,
    /// The front end's request id (a CLI `--request-id`, an HTTP `Idempotency-Key`); per-target request ids
    /// are derived from it. `None`: a fresh one per call.
    pub request_id: Option<String>,
    /// Wait this long for a busy target instead of refusing.
    pub wait: Option<Duration>,
}

impl Identity {
    pub fn new(actor: impl Into<String>) -> Self {
        Identity { actor: actor.into(), request_id: None, wait: None }
    }
}

/// The Unix user behind this process, as `cli:<user>`.
pub fn cli_actor() -> String {
    let uid = nix::unistd::getuid();
    let user = std::env::var("SUDO_USER")
        .ok()
        .or_else(|| nix::unistd::User::from_uid(uid).ok().flatten().map(|u| u.name))
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| format!("uid{uid}"));
    format!("cli:{user}")
}

/// The service core.
pub struct Lifeline {
    pub config: LoadedConfig,
    pub paths: Paths,
    identity: Identity,
    /// Unique per context: names this process in leases (`cli:ops pid 42 on jump1 #3fa2`).
    holder: String,
    bmc_options: BmcOptions,
    store: OnceCell<Store>,
    inventory: OnceLock<Arc<Inventory>>,
    /// This actor's handle on the process's pool: its actions audited as this actor.
    bmc_pool: OnceLock<BmcPool>,
    /// The process's one BMC pool, shared by every context derived from the first (every web request,
    /// scheduled job and runbook run), so its limits (fan-out, connections per BMC, per-BMC locks) and what
    /// it learns (kept sessions, paths, cipher suites) hold for the process, not per request.
    shared_pool: Arc<OnceLock<BmcPool>>,
    /// The process's console manager when it has one (the server's always-on logger): console operations
    /// attach to it instead of opening a second SOL session, which the BMC would refuse or steal.
    consoles: Option<lifeline_console::ConsoleManager>,
    /// The process's image server when it runs one (`lifeline serve` with `[image-server]`): served images
    /// are offered by it, under tokens of its own, to every context derived from this one.
    image_server: Option<Arc<crate::image_serve::ImageServer>>,
}

impl std::fmt::Debug for Lifeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lifeline").field("paths", &self.paths).field("actor", &self.identity.actor).finish()
    }
}

impl Lifeline {
    /// Reads the configuration; opens nothing yet (the store and the inventory load on first use, so
    /// commands that need neither work without them).
    pub fn new(settings: &Settings, identity: Identity) -> Result<Lifeline> {
        let config = config::load(settings)?;
        let paths = Paths::resolve(settings, &config);
        Ok(Self::from_parts(config, paths, identity))
    }

    /// A context over a fresh data directory with the default configuration: the engine's own tests.
    #[cfg(test)]
    pub(crate) fn in_dir(dir: &std::path::Path) -> Lifeline {
        let settings = crate::Settings { data_dir: Some(dir.into()), ..Default::default() };
        let config = LoadedConfig::default();
        let paths = crate::Paths::resolve(&settings, &config);
        Self::from_parts(config, paths, Identity::new("test"))
    }

    pub fn from_parts(config: LoadedConfig, paths: Paths, identity: Identity) -> Lifeline {
        let holder = crate::lease::holder_name(&identity.actor);
        Lifeline {
            config,
            paths,
            identity,
            holder,
            bmc_options: BmcOptions::default(),
            store: OnceCell::new(),
            inventory: OnceLock::new(),
            bmc_pool: OnceLock::new(),
            shared_pool: Arc::default(),
            consoles: None,
            image_server: None,
        }
    }

    /// Served images are offered by `server` (kept by every context derived from this one).
    pub fn with_image_server(mut self, server: Arc<crate::image_serve::ImageServer>) -> Self {
        self.image_server = Some(server);
        self
    }

    pub fn image_server(&self) -> Option<&Arc<crate::image_serve::ImageServer>> {
        self.image_server.as_ref()
    }

    /// Console operations attach to this manager (kept by the caller) instead of opening their own.
    pub fn with_console_manager(mut self, m: lifeline_console::ConsoleManager) -> Self {
        self.consoles = Some(m);
        self
    }

    pub fn shared_consoles(&self) -> Option<&lifeline_console::ConsoleManager> {
        self.consoles.as_ref()
    }

    /// Options of the BMC pool (fan-out, timeouts), before its first use. A context given options of its
    /// own gets a pool of its own (and the contexts derived from it share that one).
    pub fn with_bmc_options(mut self, f: impl FnOnce(&mut BmcOptions)) -> Self {
        f(&mut self.bmc_options);
        self.bmc_pool = OnceLock::new();
        self.shared_pool = Arc::default();
        self
    }

    /// Uses an inventory loaded elsewhere (the demo builds a simulated fleet from it first).
    pub fn with_inventory(self, inv: Inventory) -> Self {
        let _ = self.inventory.set(Arc::new(inv));
        self
    }

    /// The same context (store, inventory, pools, lease holder) acting under another request id: a runbook
    /// step's actions are replayable by the step's own id and nest under the run's lease.
    pub fn scoped(&self, request_id: Option<String>) -> Lifeline {
        Lifeline {
            config: self.config.clone(),
            paths: self.paths.clone(),
            identity: Identity { request_id, ..self.identity.clone() },
            holder: self.holder.clone(),
            bmc_options: self.bmc_options.clone(),
            store: self.store.clone(),
            inventory: self.inventory.clone(),
            bmc_pool: self.bmc_pool.clone(),
            shared_pool: self.shared_pool.clone(),
            consoles: self.consoles.clone(),
            image_server: self.image_server.clone(),
        }
    }

    /// A context for another actor over the same store, inventory and configuration (a runbook run inside
    /// the CLI or the server): its own lease holder and its own handle on the process's BMC pool (whose audit
    /// rows carry the new actor).
    /// Why share the store instead of opening it again: a process must open a SQLite file once — a second
    /// open reads the file's header through a new descriptor, and closing that descriptor drops every
    /// POSIX lock the process holds on the file, after which another process's last close may checkpoint
    /// and delete the WAL under our feet (lost writes, "database disk image is malformed").
    pub fn for_actor(&self, identity: Identity) -> Lifeline {
        let mut l = Lifeline::from_parts(self.config.clone(), self.paths.clone(), identity);
        l.bmc_options = self.bmc_options.clone();
        l.store = self.store.clone();
        l.inventory = self.inventory.clone();
        l.shared_pool = self.shared_pool.clone();
        l.consoles = self.consoles.clone();
        l.image_server = self.image_server.clone();
        l
    }

    /// The same as [`Lifeline::for_actor`] (the server's name for it).
    pub fn with_identity(&self, identity: Identity) -> Lifeline {
        self.for_actor(identity)
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    pub fn actor(&self) -> &str {
        &self.identity.actor
    }

    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// The store, opened (and migrated) on first use.
    pub(crate) async fn store(&self) -> Result<&Store> {
        self.store
            .get_or_try_init(|| async {
                let store = Store::open(&self.paths.data_dir, self.paths.database_url.as_deref())
                    .await
                    .map_err(EngineError::from)?;
                // Outcomes a store refused earlier, and the slots of processes that died after sending
                // (recorded as interrupted), go in first.
                if !store.is_read_only() {
                    crate::outcome_wal::OutcomeWal::for_dir(&self.paths.data_dir).replay(&store).await;
                }
                Ok(store)
            })
            .await
    }

    /// The inventory, loaded on first use.
    pub fn inventory(&self) -> Result<Arc<Inventory>> {
        if let Some(i) = self.inventory.get() {
            return Ok(i.clone());
        }
        let path = self.paths.inventory(&self.config)?;
        let inv = match lifeline_inventory::load(path) {
            Ok((inv, warnings)) => {
                for w in warnings {
                    tracing::debug!("{w}");
                }
                inv
            }
            Err(e @ InventoryError::Read { .. }) => return Err(EngineError::InventoryRead(e)),
            Err(e) => return Err(EngineError::InventoryInvalid(e)),
        };
        Ok(self.inventory.get_or_init(|| Arc::new(inv)).clone())
    }

    pub async fn audit(&self) -> Result<AuditService> {
        Ok(AuditService::new(self.store().await?.clone(), self.identity.actor.clone())
            .with_wal(crate::outcome_wal::OutcomeWal::for_dir(&self.paths.data_dir)))
    }

    pub async fn leases(&self) -> Result<Leases> {
        Ok(Leases::new(self.store().await?.clone(), self.holder.clone()).with_wait(self.identity.wait))
    }

    /// The process's long-lived BMC pool (fan-out limit, per-BMC locks, SDR and path caches), built on first
    /// use, as this actor.
    pub async fn bmc_pool(&self) -> Result<BmcPool> {
        if let Some(p) = self.bmc_pool.get() {
            return Ok(p.clone());
        }
        let sink = self.audit().await?.bmc_sink();
        let shared = match self.shared_pool.get() {
            Some(p) => p.clone(),
            None => {
                let store = self.store().await?.clone();
                let sealed = crate::seal::SealedFiles::new(&self.paths.data_dir, &self.paths.seal_key);
                let opts = BmcOptions {
                    tls: TlsPolicy::Pin(Arc::new(StorePins(store.clone()))),
                    ledger: Some(lifeline_bmc::SharedLedger(crate::bmc_sessions::store_ledger(
                        store.clone(),
                        sealed,
                    ))),
                    ..self.bmc_options.clone()
                };
                let pool = BmcPool::with_memory(opts, sink.clone(), Arc::new(StoreMemory(store)));
                self.shared_pool.get_or_init(|| pool).clone()
            }
        };
        Ok(self.bmc_pool.get_or_init(|| shared.with_audit(sink)).clone())
    }

    /// The request id for one target of this call: the front end's, or a fresh one, scoped to the target
    /// (`BASE/TARGET` either way, so that the id a hint names, [`Lifeline::retry_key`], finds it again).
    pub fn request_id_for(&self, target: &str) -> String {
        match &self.identity.request_id {
            Some(base) => format!("{base}/{target}"),
            None => format!("{}/{target}", uuid::Uuid::new_v4()),
        }
    }

    /// What a caller passes to repeat request `request_id` on `target` (the CLI's `--request-id`, the HTTP
    /// `Idempotency-Key`): the id less its `/TARGET` and the front end's `ACTOR/` scope (the server scopes
    /// each caller's keys by actor).
    pub fn retry_key<'a>(&self, request_id: &'a str, target: &str) -> &'a str {
        let base = request_id.strip_suffix(target).and_then(|b| b.strip_suffix('/')).unwrap_or(request_id);
        base.strip_prefix(self.identity.actor.as_str()).and_then(|b| b.strip_prefix('/')).unwrap_or(base)
    }

    /// Closes the kept BMC sessions (Close Session on each, so none is left on a BMC), then the store's pool
    /// (SQLite checkpoints its WAL on last close).
    pub async fn close(&self) {
        if let Some(kept) = &self.bmc_options.kept {
            kept.close_all().await;
        }
        if let Some(s) = self.store.get() {
            s.close().await;
        }
    }
}
