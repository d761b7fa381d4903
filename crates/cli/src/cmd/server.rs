//! `lifeline serve`, `lifeline user …`, `lifeline token …`, `lifeline fault …`: thin wrappers over the
//! server crate. Users, tokens and faults are managed through the engine (no running server needed),
//! audited as the Unix user.

use std::io::Read;

use anyhow::anyhow;
use clap::{Args, Subcommand, ValueEnum};
use lifeline_server::{Role, accounts};

use crate::args::Global;
use crate::cmd::{lifeline, print_json, settings};
use crate::exit::{CmdResult, Code, Exit};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// `ADDR:PORT` to listen on (default 127.0.0.1:7443, or `listen` in [server]).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Serve plain HTTP instead of HTTPS: only on a loopback address.
    #[arg(long)]
    pub plain_http: bool,
    /// Where the runbook runs the server drives reach schedulers and agent reports.
    #[command(flatten)]
    pub runbook: crate::cmd::runbook::EnvArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RoleArg {
    Viewer,
    Operator,
    Admin,
}

impl From<RoleArg> for Role {
    fn from(r: RoleArg) -> Role {
        match r {
            RoleArg::Viewer => Role::Viewer,
            RoleArg::Operator => Role::Operator,
            RoleArg::Admin => Role::Admin,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum UserCmd {
    /// Add a user; the password is read from standard input (one line).
    Add {
        name: String,
        #[arg(long, value_enum)]
        role: RoleArg,
        /// Read the password from stdin (required: passwords never go on the command line).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// Set a user's password from standard input (ends their sessions).
    Passwd {
        name: String,
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// Disable a user: sessions end, tokens are revoked.
    Disable { name: String },
    /// List users.
    List,
}

#[derive(Debug, Subcommand)]
pub enum TokenCmd {
    /// Create a token and print it once (only its hash is kept).
    Create {
        #[arg(long)]
        user: String,
        /// Default and ceiling: the user's role.
        #[arg(long, value_enum, conflicts_with = "agent")]
        role: Option<RoleArg>,
        /// A node's agent token: it may deliver only that node's reports, nothing else (for
        /// `lifeline-agent --server` on the node; the user must be an operator or an admin).
        #[arg(long, value_name = "NODE")]
        agent: Option<String>,
        /// e.g. `90d`; default: no expiry.
        #[arg(long, value_name = "DURATION")]
        expires: Option<String>,
    },
    /// List tokens (never their secrets).
    List,
    /// Revoke a token by id.
    Revoke { id: String },
}

#[derive(Debug, Subcommand)]
pub enum FaultCmd {
    /// Fault records, newest first.
    List {
        /// `open`, `acked` or `resolved`.
        #[arg(long)]
        state: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// One fault record.
    Show { id: i64 },
    /// Acknowledge an open fault.
    Ack { id: i64 },
    /// Nodes that fail again after re-admission (lemons), with their history; `--all` adds every node on
    /// probation or with a recurrence.
    Lemons {
        #[arg(long)]
        all: bool,
    },
    /// A person's word that a lemon may be re-admitted once (audited).
    ReleaseLemon {
        node: String,
        /// Why (recorded and audited).
        #[arg(long)]
        reason: String,
    },
    /// Check the nodes on probation in band: a failing report is a recurrence and drains the node again.
    ProbationCheck(crate::cmd::probation::ProbationCheckArgs),
}

pub async fn serve(g: &Global, a: ServeArgs) -> CmdResult {
    let opts = lifeline_server::ServeOptions {
        settings: settings(g),
        listen: a.listen,
        plain_http: a.plain_http,
        runbook_env: a.runbook.env(),
        ..Default::default()
    };
    match lifeline_server::serve(opts).await {
        Ok(()) => Ok(Code::Ok),
        Err(lifeline_server::ServeError::Engine(e)) => Err(e.into()),
        Err(
            e @ (lifeline_server::ServeError::BadListen { .. }
            | lifeline_server::ServeError::PlainNotLoopback { .. }),
        ) => Err(Exit::usage(anyhow!("{}", lifeline_engine::error_chain(&e)))),
        Err(e) => Err(Exit::internal(anyhow!("{}", lifeline_engine::error_chain(&e)))),
    }
}

fn read_password() -> Result<String, Exit> {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).map_err(Exit::io)?;
    let pw = s.lines().next().unwrap_or("").to_owned();
    if pw.is_empty() {
        return Err(Exit::usage(anyhow!("no password on standard input")));
    }
    Ok(pw)
}

pub async fn user(g: &Global, c: UserCmd) -> CmdResult {
    let l = lifeline(g)?;
    let audit = l.audit().await?;
    match c {
        UserCmd::Add { name, role, .. } => {
            let pw = read_password()?;
            let u = accounts::user_add(&l, &audit, &name, role.into(), &pw).await?;
            if g.json {
                print_json(&u)?;
            } else {
                println!("user {} added ({})", u.name, u.role);
            }
        }
        UserCmd::Passwd { name, .. } => {
            let pw = read_password()?;
            accounts::user_passwd(&l, &audit, &name, &pw).await?;
            println!("password of {name} changed; their sessions ended");
        }
        UserCmd::Disable { name } => {
            accounts::user_disable(&l, &audit, &name, true).await?;
            println!("{name} disabled; sessions ended, tokens revoked");
        }
        UserCmd::List => {
            let users = l.users().await?;
            if g.json {
                print_json(&users)?;
            } else {
                for u in users {
                    println!("{}\t{}{}", u.name, u.role, if u.disabled { "\tdisabled" } else { "" });
                }
            }
        }
    }
    l.close().await;
    Ok(Code::Ok)
}

pub async fn token(g: &Global, c: TokenCmd) -> CmdResult {
    let l = lifeline(g)?;
    let audit = l.audit().await?;
    match c {
        TokenCmd::Create { user, role, agent, expires } => {
            let expires = expires
                .as_deref()
                .map(humantime::parse_duration)
                .transpose()
                .map_err(|e| Exit::usage(anyhow!("--expires: {e}")))?;
            let t = match &agent {
                Some(node) => {
                    if !l.inventory()?.devices.iter().any(|d| d.name.as_str() == node) {
                        return Err(lifeline_engine::EngineError::UnknownDevice { name: node.clone() }.into());
                    }
                    accounts::agent_token_create(&l, &audit, &user, node, expires).await?
                }
                None => accounts::token_create(&l, &audit, &user, role.map(Into::into), expires).await?,
            };
            if g.json {
                print_json(&t)?;
            } else {
                match &t.node {
                    Some(node) => {
                        eprintln!("token {} for {node}'s agent (of {}); shown once, keep it:", t.id, t.user)
                    }
                    None => {
                        eprintln!("token {} for {} ({}); shown once, keep it:", t.id, t.user, t.role.as_str())
                    }
                }
                println!("{}", t.token);
            }
        }
        TokenCmd::List => {
            let tokens = l.tokens(None).await?;
            print_json(&tokens)?;
        }
        TokenCmd::Revoke { id } => {
            accounts::token_revoke(&l, &audit, &id).await?;
            println!("token {id} revoked");
        }
    }
    l.close().await;
    Ok(Code::Ok)
}

pub async fn fault(g: &Global, c: FaultCmd) -> CmdResult {
    let l = lifeline(g)?;
    match c {
        FaultCmd::List { state, limit } => {
            let f = l.faults(state.as_deref(), limit).await?;
            if g.json {
                print_json(&f)?;
            } else {
                for f in f {
                    println!(
                        "{}\t{}\t{}\t{}\t{}\t{}",
                        f.id, f.state, f.severity, f.kind, f.device, f.message
                    );
                }
            }
        }
        FaultCmd::Show { id } => {
            let f = l.fault_record(id).await?.ok_or_else(|| Exit::usage(anyhow!("no fault {id}")))?;
            print_json(&f)?;
        }
        FaultCmd::Ack { id } => {
            let f = l.fault_ack(id).await?;
            if g.json {
                print_json(&f)?;
            } else {
                println!("fault {id} acknowledged");
            }
        }
        FaultCmd::Lemons { all } => crate::cmd::probation::lemons(g, &l, all).await?,
        FaultCmd::ReleaseLemon { node, reason } => {
            crate::cmd::probation::release(g, &l, &node, &reason).await?
        }
        FaultCmd::ProbationCheck(a) => {
            let code = crate::cmd::probation::check(g, &l, a).await?;
            l.close().await;
            return Ok(code);
        }
    }
    l.close().await;
    Ok(Code::Ok)
}
