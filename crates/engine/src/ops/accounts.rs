//! BMC accounts: `bmc users` (list), `bmc rotate` (crash-safe password rotation into the sealed store) and
//! `--disable-defaults`; plus the resolution of `sealed:NAME` credential references.
//!
//! The rotation is a small state machine whose every state is durable in the store before the BMC sees the
//! next step, so a crash (even SIGKILL) anywhere leaves a state `rotate --resume` can finish or undo:
//!
//! 1. the new password is generated and sealed as `pending` next to the `active` one (BMC untouched);
//! 2. it is set on the BMC (IPMI Set User Password, sent once; Redfish PATCH with If-Match);
//! 3. a fresh login with it proves the BMC took it;
//! 4. only then it becomes `active` and the old one `retired` (one transaction).
//!
//! Resuming decides a `pending` generation by logins, one attempt each (lockout counters): the pending
//! password logs in → it is activated (rolled forward); it is refused → it was never set (`failed`, rolled
//! back) and the active one must log in. Neither is ever deleted before one of them is proven, so no crash
//! locks Lifeline out. Built with the `test-hooks` feature (the end-to-end tests enable it; a release build
//! has no such code), `LIFELINE_TEST_ROTATE_KILL_AT=N` makes the process SIGKILL itself at step N
//! (1: generated, 2: sealed pending, 3: set on the BMC, 4: verified, 5: activated).

use lifeline_bmc::{Bmc, LoginCheck};
use lifeline_inventory::credentials;
use lifeline_ipmi::Privilege;
use lifeline_types::{AuditAction, BmcProtocol, CredentialRef};
use ring::rand::{SecureRandom, SystemRandom};
use serde::Serialize;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::{Acted, Row};
use crate::seal::SealedFiles;
use crate::targets::{BmcSelection, bmc_target};

/// Where the first rotation of a `sealed:` reference reads the current password.
pub const BOOTSTRAP_ENV: &str = "LIFELINE_BMC_PASSWORD";
/// Test-only (`test-hooks` feature): SIGKILL this process at rotation step N.
#[cfg(feature = "test-hooks")]
pub const KILL_AT_ENV: &str = "LIFELINE_TEST_ROTATE_KILL_AT";
const PASSWORD_LEN: usize = 16;

/// Options of `bmc rotate`.
#[derive(Debug, Clone, Default)]
pub struct RotateOptions {
    /// The account to rotate (default: the inventory's user of each BMC).
    pub user: Option<String>,
    /// Only finish or undo an interrupted rotation; start no new one.
    pub resume_only: bool,
    /// Disable factory-default accounts the hygiene audit finds (after proving another admin login).
    pub disable_defaults: bool,
}

/// What `bmc rotate` did on one BMC.
#[derive(Debug, Clone, Serialize)]
pub struct Rotation {
    pub bmc: String,
    pub user: String,
    pub protocol: BmcProtocol,
    /// `sealed:NAME` holding the result.
    pub reference: String,
    /// What an interrupted rotation found was decided as: `rolled-forward`, `rolled-back`, or none.
    pub resumed: Option<String>,
    /// A new password was set and proven by a login.
    pub rotated: bool,
    /// The current password was imported from the environment (first rotation of a `sealed:` reference).
    pub imported: bool,
    pub disabled_defaults: Vec<String>,
    pub steps: Vec<String>,
}

/// One account row of `bmc users`.
pub type Users = lifeline_bmc::AccountList;

/// A stored generation; the secret only when revealed.
#[derive(Debug, Clone, Serialize)]
pub struct Generation {
    #[serde(flatten)]
    pub row: lifeline_store::CredentialRow,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

fn seal_context(name: &str, device: &str, user: &str) -> String {
    format!("bmc-credential/{name}/{device}/{user}")
}

/// A random password of letters and digits with at least one of each class (BMC password policies).
pub fn generate_password() -> Result<String> {
    const UPPER: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ";
    const LOWER: &[u8] = b"abcdefghijkmnopqrstuvwxyz";
    const DIGIT: &[u8] = b"23456789";
    let rng = SystemRandom::new();
    loop {
        let mut bytes = [0u8; PASSWORD_LEN];
        rng.fill(&mut bytes).map_err(|_| EngineError::internal("no randomness", "SystemRandom failed"))?;
        let all: Vec<u8> = [UPPER, LOWER, DIGIT].concat();
        let pw: String = bytes.iter().map(|b| all[usize::from(*b) % all.len()] as char).collect();
        let has = |set: &[u8]| pw.bytes().any(|c| set.contains(&c));
        if has(UPPER) && has(LOWER) && has(DIGIT) {
            return Ok(pw);
        }
    }
}

/// A crash injected between two durable steps; compiled only for the tests that prove every step resumable.
#[cfg(feature = "test-hooks")]
fn kill_point(step: u32) {
    if std::env::var(KILL_AT_ENV).ok().and_then(|v| v.parse::<u32>().ok()) == Some(step) {
        tracing::warn!(step, "{KILL_AT_ENV}: killing this process");
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

#[cfg(not(feature = "test-hooks"))]
fn kill_point(_step: u32) {}

impl Lifeline {
    fn sealer(&self) -> SealedFiles {
        SealedFiles::new(&self.paths.data_dir, &self.paths.seal_key)
    }

    /// The password behind a BMC's credential reference: `env:` and `file:` as the inventory crate reads
    /// them, `sealed:NAME` from the store's active generation for this device. Synchronous because target
    /// selection is; a store read runs on the multi-threaded runtime (the CLI's and the server's).
    pub fn resolve_bmc_credential(
        &self,
        r: &CredentialRef,
        device: &str,
    ) -> std::result::Result<String, String> {
        let CredentialRef::Sealed(name) = r else {
            return credentials::resolve(r).map_err(|e| e.to_string());
        };
        let handle = tokio::runtime::Handle::try_current().map_err(|_| "no async runtime".to_owned())?;
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return Err("sealed secrets are read from the store on a multi-threaded runtime".into());
        }
        tokio::task::block_in_place(|| handle.block_on(self.sealed_password(name, device, None)))
            .map_err(|e| e.chain())
    }

    /// The active sealed password of `name` for `device` (optionally for one user).
    pub async fn sealed_password(&self, name: &str, device: &str, user: Option<&str>) -> Result<String> {
        let store = self.store().await?;
        let row = store
            .bmc_credentials(name, device)
            .await?
            .into_iter()
            .find(|r| r.state == "active" && user.is_none_or(|u| r.username == u))
            .ok_or_else(|| EngineError::NotFound {
                target: device.into(),
                what: format!(
                    "no sealed secret `{name}` in the store; the first `lifeline bmc rotate {device}` imports the \
                     current password from ${BOOTSTRAP_ENV}"
                ),
            })?;
        self.sealer()
            .unseal_secret(&seal_context(name, device, &row.username), &row.sealed)
            .map_err(|e| EngineError::internal("unsealing a BMC credential", e))
    }

    /// Stored generations of the named devices (all when empty), newest first; with `reveal` each carries
    /// its secret (break-glass: an operator logging in by hand while Lifeline is down), audited per device.
    pub async fn bmc_credentials(&self, devices: &[String], reveal: bool) -> Result<Vec<Generation>> {
        let store = self.store().await?;
        let rows: Vec<_> = store
            .all_bmc_credentials()
            .await?
            .into_iter()
            .filter(|r| devices.is_empty() || devices.contains(&r.device))
            .collect();
        if reveal {
            let audit = self.audit().await?;
            let mut seen: Vec<&str> = rows.iter().map(|r| r.device.as_str()).collect();
            seen.sort_unstable();
            seen.dedup();
            for d in seen {
                audit
                    .record(AuditAction::BmcCredentialsReveal, d, Outcome::Ok, None, serde_json::json!({}))
                    .await?;
            }
        }
        let sealer = self.sealer();
        rows.into_iter()
            .map(|row| {
                let secret = if reveal {
                    let ctx = seal_context(&row.name, &row.device, &row.username);
                    let s = sealer.unseal_secret(&ctx, &row.sealed);
                    Some(s.map_err(|e| EngineError::internal("unsealing", e))?)
                } else {
                    None
                };
                Ok(Generation { row, secret })
            })
            .collect()
    }

    /// The accounts of each BMC.
    pub async fn bmc_users(&self, sel: &BmcSelection) -> Result<Vec<Row<Users>>> {
        self.each_bmc(sel, |bmc| async move { bmc.accounts().await }).await
    }

    /// Rotates (or with `resume_only` only settles) the password of each named inventory BMC whose
    /// credential is a `sealed:` reference; one lease and audit trail per BMC.
    pub async fn bmc_rotate(
        &self,
        names: &[String],
        opts: &RotateOptions,
    ) -> Result<Vec<Row<Acted<Rotation>>>> {
        let inv = self.inventory()?;
        let devices = lifeline_inventory::select(&inv, names).map_err(EngineError::Select)?;
        let mut plan = Vec::new();
        let mut problems = Vec::new();
        for d in devices {
            let Some(b) = &d.bmc else { continue };
            match &b.credential {
                CredentialRef::Sealed(n) => plan.push((d.clone(), n.clone())),
                other => problems.push(format!(
                    "`{}`: credential `{other}` is not in the sealed store; point the inventory at it first \
                     (credential = \"sealed:bmc\"): the first rotation imports the current password from ${BOOTSTRAP_ENV}",
                    d.name
                )),
            }
        }
        if !problems.is_empty() {
            return Err(EngineError::Credentials { problems });
        }
        if plan.is_empty() {
            return Err(EngineError::NoTargets { what: "no BMC among the targets".into() });
        }
        let mut rows = Vec::new();
        for (d, name) in plan {
            let device = d.name.to_string();
            let r = self
                .guarded(&device, AuditAction::BmcRotate, |rid| {
                    let (d, name, opts) = (d.clone(), name.clone(), opts.clone());
                    async move { self.rotate_one(&d, &name, &opts, &rid).await }
                })
                .await;
            rows.push(Row::new("bmc", device, r));
        }
        Ok(rows)
    }

    async fn rotate_one(
        &self,
        d: &lifeline_inventory::Device,
        name: &str,
        opts: &RotateOptions,
        rid: &str,
    ) -> Result<Rotation> {
        let device = d.name.to_string();
        let admin_user = d.bmc.as_ref().map(|b| b.username.clone()).unwrap_or_default();
        let user = opts.user.clone().unwrap_or_else(|| admin_user.clone());
        let own = user == admin_user;
        let store = self.store().await?.clone();
        let sealer = self.sealer();
        let ctx = seal_context(name, &device, &user);
        let audit = self.audit().await?;
        let intent = audit
            .intent(AuditAction::BmcRotate, &device, Some(rid), serde_json::json!({ "user": user, "reference": format!("sealed:{name}"), "resume_only": opts.resume_only }))
            .await?;
        let pool = self.bmc_pool().await?;
        let unseal =
            |s: &str| sealer.unseal_secret(&ctx, s).map_err(|e| EngineError::internal("unsealing", e));

        // The admin credential Lifeline logs in with (the active generation of the inventory user, or the
        // environment for the very first rotation).
        let admin_ctx = seal_context(name, &device, &admin_user);
        let rows = store.bmc_credentials(name, &device).await?;
        let admin_active = rows.iter().find(|r| r.state == "active" && r.username == admin_user);
        let mut out = Rotation {
            bmc: device.clone(),
            user: user.clone(),
            protocol: BmcProtocol::Auto,
            reference: format!("sealed:{name}"),
            resumed: None,
            rotated: false,
            imported: false,
            disabled_defaults: Vec::new(),
            steps: Vec::new(),
        };
        let mut admin_pw = match admin_active {
            Some(r) => Some(
                sealer
                    .unseal_secret(&admin_ctx, &r.sealed)
                    .map_err(|e| EngineError::internal("unsealing", e))?,
            ),
            None => None,
        };
        let probe = |pw: &str| {
            bmc_target(d, pw.to_owned())
                .map(|t| pool.bmc(t))
                .ok_or_else(|| EngineError::failed(&device, "no BMC"))
        };
        // The protocol the BMC speaks (auto: probed with whatever credential we have).
        let seed_pw = admin_pw.clone().or_else(|| std::env::var(BOOTSTRAP_ENV).ok()).unwrap_or_default();
        let protocol = probe(&seed_pw)?
            .protocol()
            .await
            .map_err(|source| EngineError::Bmc { target: device.clone(), source })?;
        out.protocol = protocol;
        let privilege = if own { Privilege::Administrator } else { Privilege::User };

        // 1. Settle what an interrupted rotation left: pending generations are decided by logins.
        let pending: Vec<_> =
            rows.iter().filter(|r| r.state == "pending" && r.username == user).cloned().collect();
        for p in &pending {
            let pw = unseal(&p.sealed)?;
            let check = probe(&pw)?.check_login(protocol, &user, &pw, privilege).await;
            out.steps.push(format!("pending generation {}: login {}", p.id, describe(&check)));
            match check {
                LoginCheck::Accepted => {
                    store.activate_bmc_credential(p.id, "resumed: the BMC accepts it").await?;
                    out.resumed = Some("rolled-forward".into());
                    if own {
                        admin_pw = Some(pw);
                    }
                    for other in pending.iter().filter(|o| o.id != p.id) {
                        store
                            .set_bmc_credential_state(other.id, "failed", "superseded while resuming")
                            .await?;
                    }
                    break;
                }
                LoginCheck::Refused(why) => {
                    // A locked account refuses every password: only a proven active login makes this a
                    // roll-back; otherwise both stay.
                    let active = rows.iter().find(|r| r.state == "active" && r.username == user);
                    let back = match active {
                        Some(a) => {
                            let apw = unseal(&a.sealed)?;
                            probe(&apw)?.check_login(protocol, &user, &apw, privilege).await
                        }
                        None => LoginCheck::Unknown("no active generation to compare with".into()),
                    };
                    out.steps.push(format!("active generation: login {}", describe(&back)));
                    if !back.accepted() {
                        let err = EngineError::failed(
                            &device,
                            format!(
                                "neither the pending nor the active password logs in (locked?); both kept, retry `rotate --resume` ({why})"
                            ),
                        );
                        audit
                            .outcome(
                                intent,
                                Outcome::Failed,
                                serde_json::json!({ "error": err.chain(), "steps": out.steps }),
                            )
                            .await?;
                        return Err(err);
                    }
                    store
                        .set_bmc_credential_state(
                            p.id,
                            "failed",
                            &format!("never set: the BMC refuses it ({why})"),
                        )
                        .await?;
                    out.resumed = Some("rolled-back".into());
                }
                LoginCheck::Unknown(why) => {
                    let err = EngineError::failed(
                        &device,
                        format!(
                            "cannot tell whether the BMC took the pending password ({why}); both kept, retry `rotate --resume`"
                        ),
                    );
                    audit
                        .outcome(
                            intent,
                            Outcome::Failed,
                            serde_json::json!({ "error": err.chain(), "steps": out.steps }),
                        )
                        .await?;
                    return Err(err);
                }
            }
        }

        // The admin credential to act with; imported (and proven) on the first rotation.
        let admin_pw = match admin_pw {
            Some(p) => p,
            None => {
                let Ok(env_pw) = std::env::var(BOOTSTRAP_ENV) else {
                    let err = EngineError::Credentials {
                        problems: vec![format!(
                            "`{device}`: no sealed secret `{name}` yet; set ${BOOTSTRAP_ENV} to the current password to import it"
                        )],
                    };
                    audit
                        .outcome(intent, Outcome::Refused, serde_json::json!({ "error": err.chain() }))
                        .await?;
                    return Err(err);
                };
                let check = probe(&env_pw)?
                    .check_login(protocol, &admin_user, &env_pw, Privilege::Administrator)
                    .await;
                if !check.accepted() {
                    let err = EngineError::Refused {
                        target: device.clone(),
                        reason: format!(
                            "the password in ${BOOTSTRAP_ENV} does not log in as `{admin_user}` ({}); nothing changed",
                            describe(&check)
                        ),
                    };
                    audit
                        .outcome(intent, Outcome::Refused, serde_json::json!({ "error": err.chain() }))
                        .await?;
                    return Err(err);
                }
                let sealed = sealer
                    .seal_secret(&admin_ctx, &env_pw)
                    .map_err(|e| EngineError::internal("sealing", e))?;
                let id = store
                    .insert_bmc_credential(name, &device, &admin_user, "pending", &sealed, Some(rid))
                    .await?;
                store.activate_bmc_credential(id, "imported: login proven").await?;
                out.imported = true;
                out.steps.push("imported the current password (login proven)".into());
                env_pw
            }
        };
        let bmc = probe(&admin_pw)?;

        if !opts.resume_only {
            let r =
                self.rotate_fresh(&bmc, protocol, name, &device, &user, privilege, rid, &ctx, &mut out).await;
            if let Err(err) = r {
                let detail = serde_json::json!({ "error": err.chain(), "steps": out.steps });
                audit.outcome(intent, Outcome::Failed, detail).await?;
                return Err(err);
            }
        }
        let final_admin = if own && out.rotated {
            self.sealed_password(name, &device, Some(&admin_user)).await?
        } else {
            admin_pw
        };
        if opts.disable_defaults {
            out.disabled_defaults = self
                .disable_defaults(
                    d,
                    &probe(&final_admin)?,
                    protocol,
                    &admin_user,
                    &final_admin,
                    &mut out.steps,
                )
                .await?;
        }
        audit.outcome(intent, Outcome::Ok, &out).await?;
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    async fn rotate_fresh(
        &self,
        bmc: &Bmc,
        protocol: BmcProtocol,
        name: &str,
        device: &str,
        user: &str,
        privilege: Privilege,
        rid: &str,
        ctx: &str,
        out: &mut Rotation,
    ) -> Result<()> {
        let store = self.store().await?;
        let sealer = self.sealer();
        let new_pw = generate_password()?;
        kill_point(1);
        let sealed = sealer.seal_secret(ctx, &new_pw).map_err(|e| EngineError::internal("sealing", e))?;
        let id = store.insert_bmc_credential(name, device, user, "pending", &sealed, Some(rid)).await?;
        out.steps.push(format!("sealed generation {id} as pending"));
        kill_point(2);
        let sent = bmc.set_account_password(user, &new_pw).await;
        out.steps.push(match &sent {
            Ok(_) => "set on the BMC".to_owned(),
            Err(e) => format!("setting it reported: {}", lifeline_bmc::error_chain(e)),
        });
        kill_point(3);
        let check = bmc.check_login(protocol, user, &new_pw, privilege).await;
        out.steps.push(format!("login with the new password {}", describe(&check)));
        match check {
            LoginCheck::Accepted => {
                kill_point(4);
                store.activate_bmc_credential(id, "login proven").await?;
                out.steps.push(format!("generation {id} active, the previous one retired"));
                out.rotated = true;
                kill_point(5);
                Ok(())
            }
            LoginCheck::Refused(why) => {
                store.set_bmc_credential_state(id, "failed", &format!("the BMC refuses it ({why})")).await?;
                let detail = match sent {
                    Err(e) => format!("setting the password failed: {}", lifeline_bmc::error_chain(&e)),
                    Ok(_) => format!("the BMC refuses the new password after accepting it ({why})"),
                };
                Err(EngineError::failed(device, format!("{detail}; the previous password stays active")))
            }
            LoginCheck::Unknown(why) => Err(EngineError::failed(
                device,
                format!(
                    "cannot tell whether the BMC took the new password ({why}); both kept, run `rotate --resume`"
                ),
            )),
        }
    }

    /// Disables the factory-default accounts the hygiene audit finds on one BMC, each only after a login
    /// with Lifeline's own admin credential proved another way in.
    async fn disable_defaults(
        &self,
        d: &lifeline_inventory::Device,
        bmc: &Bmc,
        protocol: BmcProtocol,
        admin_user: &str,
        admin_pw: &str,
        steps: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        let device = d.name.to_string();
        let pool = self.bmc_pool().await?;
        let mut disabled = Vec::new();
        // The audit stops at the first accepted default: repeat until none is left (bounded).
        for _ in 0..4 {
            let opts = lifeline_bmc::HygieneOptions {
                max_failures_per_bmc: 2,
                check_tls: false,
                check_ipmi: false,
                ..Default::default()
            };
            let row = pool.hygiene_audit(vec![bmc.target().clone()], &opts).await.into_iter().next();
            let Some(found) = row.and_then(|r| r.accepted_defaults.into_iter().next()) else { break };
            if found.username == admin_user {
                return Err(EngineError::failed(
                    &device,
                    format!(
                        "Lifeline's own account `{admin_user}` still accepts a factory default; rotate it first"
                    ),
                ));
            }
            let check = bmc.check_login(protocol, admin_user, admin_pw, Privilege::Administrator).await;
            if !check.accepted() {
                return Err(EngineError::failed(
                    &device,
                    format!(
                        "not disabling `{}`: the admin login as `{admin_user}` is not proven ({})",
                        found.username,
                        describe(&check)
                    ),
                ));
            }
            bmc.set_account_enabled(&found.username, false)
                .await
                .map_err(|source| EngineError::Bmc { target: device.clone(), source })?;
            steps.push(format!("disabled the default account `{}` ({})", found.username, found.credential));
            disabled.push(found.username);
        }
        Ok(disabled)
    }
}

fn describe(c: &LoginCheck) -> String {
    match c {
        LoginCheck::Accepted => "accepted".into(),
        LoginCheck::Refused(w) => format!("refused ({w})"),
        LoginCheck::Unknown(w) => format!("unanswered ({w})"),
    }
}
