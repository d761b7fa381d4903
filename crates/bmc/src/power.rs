//! Confirmed power actions in the fence-agent sense: read the state, act once, poll until the requested state
//! holds or a timeout passes, and report both what was asked and what was observed.
//!
//! Why read first: a retried request whose earlier reply was lost must never double the action. If the host
//! is already in the requested state (on/off/soft), nothing is sent. A cycle or reset has no "already done"
//! state; for those a caller-supplied request id makes a retry return the first attempt's report (see
//! [`crate::Bmc::power`]).
//!
//! What "confirmed" means ([`Confirmation`]):
//! - on / off / soft: the BMC reports the target power state (IPMI: Get Chassis Status power bit; Redfish:
//!   `PowerState`). A lost reply is harmless here: the state answers the question.
//! - cycle over IPMI: power down, Off confirmed by Get Chassis Status, `cycle_off_time` pause, power up,
//!   On confirmed ([`Confirmation::TransitionObserved`]), as fence_ipmilan reboots. Chassis Control 0x02
//!   (power cycle) is deliberately not used: a lost reply to it can neither be confirmed from the power
//!   state (the off phase may be shorter than a poll) nor safely resent; the two idempotent halves can.
//! - cycle over Redfish `PowerCycle`: an Off reading followed by an On reading
//!   ([`Confirmation::TransitionObserved`]); if the BMC acknowledged but no Off was seen within
//!   `cycle_grace`, the weaker [`Confirmation::AcknowledgedAndOn`]; if the reply was lost and no Off was
//!   seen, [`Confirmation::Unconfirmed`], and it is NOT resent.
//! - Redfish cycle planned as ForceOff + On: the Off is waited for between the two requests, so the
//!   transition is always observed.
//! - reset (IPMI hard reset, Redfish `ForceRestart`): the host never loses power, so no transition exists
//!   in the power state; confirmed means acknowledged by the BMC and On afterwards
//!   ([`Confirmation::AcknowledgedAndOn`]). A reset whose reply was lost cannot be confirmed at all.
//! - cycle / reset of a host that is Off powers it on (as `ipmipower` and Redfish clients do).

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use lifeline_types::{BmcProtocol, PowerAction, PowerState};
use serde::Serialize;
use tokio::time::Instant;

use crate::conn::{Conn, Sent};
use crate::error::{BmcError, error_chain};
use crate::options::PowerOptions;

/// How an action was confirmed (or why not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confirmation {
    /// Already in the requested state: nothing was sent.
    AlreadyInState,
    /// The requested state was read back.
    StateReached,
    /// Off then On was read back (cycle).
    TransitionObserved,
    /// The BMC acknowledged and reports On; no off phase was observable.
    AcknowledgedAndOn,
    /// The requested state did not hold within the timeout, or a lost reply left the outcome unknowable.
    Unconfirmed,
}

impl Confirmation {
    pub fn is_confirmed(self) -> bool {
        !matches!(self, Confirmation::Unconfirmed)
    }
}

/// One observed power state change while confirming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Transition {
    pub after_ms: u64,
    pub state: PowerState,
}

/// Everything about one power request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerReport {
    pub bmc: String,
    pub protocol: BmcProtocol,
    pub action: PowerAction,
    pub request_id: Option<String>,
    /// State the action waits for.
    pub requested: PowerState,
    pub before: PowerState,
    /// Last state read.
    pub observed: PowerState,
    /// Whether any command was put on the wire.
    pub action_sent: bool,
    /// Whether the BMC acknowledged every command (false: a reply was lost, the state decided).
    pub acknowledged: bool,
    pub commands: Vec<String>,
    pub confirmation: Confirmation,
    pub confirmed: bool,
    pub transitions: Vec<Transition>,
    pub started_at: DateTime<Utc>,
    pub ack_after_ms: Option<u64>,
    pub confirmed_after_ms: Option<u64>,
    pub total_ms: u64,
    /// Power-state reads that failed while polling (a BMC may stop answering during a cycle).
    pub poll_errors: u32,
    /// A retry with the same request id: this is the first attempt's report, nothing was sent now.
    pub replayed: bool,
    pub note: Option<String>,
}

/// What the confirmation loop needs from a connection; a trait so that the state machine is tested on its
/// own with scripted BMCs as well as against the real peers.
#[async_trait]
pub(crate) trait PowerOps: Send {
    async fn state(&mut self) -> Result<PowerState, BmcError>;
    async fn send(&mut self, action: PowerAction) -> Result<Sent, BmcError>;
}

pub(crate) struct ConnOps<'a> {
    pub conn: &'a mut Conn,
    pub opts: PowerOptions,
}

#[async_trait]
impl PowerOps for ConnOps<'_> {
    async fn state(&mut self) -> Result<PowerState, BmcError> {
        self.conn.power_state().await
    }
    async fn send(&mut self, action: PowerAction) -> Result<Sent, BmcError> {
        self.conn.send_power(action, &self.opts).await
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

/// Run one confirmed action. An error before anything was sent is returned as `Err`; once a command may have
/// reached the BMC, the outcome is always a report (with `note` saying what went wrong).
pub(crate) async fn confirm(
    ops: &mut dyn PowerOps,
    bmc: &str,
    protocol: BmcProtocol,
    action: PowerAction,
    request_id: Option<String>,
    opts: &PowerOptions,
) -> Result<PowerReport, BmcError> {
    let started_at = Utc::now();
    let t0 = Instant::now();
    let before = ops.state().await?;
    let mut report = PowerReport {
        bmc: bmc.to_owned(),
        protocol,
        action,
        request_id,
        requested: action.target_state(),
        before,
        observed: before,
        action_sent: false,
        acknowledged: false,
        commands: Vec::new(),
        confirmation: Confirmation::Unconfirmed,
        confirmed: false,
        transitions: vec![Transition { after_ms: 0, state: before }],
        started_at,
        ack_after_ms: None,
        confirmed_after_ms: None,
        total_ms: 0,
        poll_errors: 0,
        replayed: false,
        note: None,
    };
    let effective = match (action, before) {
        (PowerAction::On, PowerState::On) | (PowerAction::Off | PowerAction::Soft, PowerState::Off) => {
            report.confirmation = Confirmation::AlreadyInState;
            report.confirmed = true;
            report.confirmed_after_ms = Some(ms(t0.elapsed()));
            report.total_ms = ms(t0.elapsed());
            return Ok(report);
        }
        (PowerAction::Cycle | PowerAction::Reset, PowerState::Off) => {
            report.note = Some("host was off: powered on instead".into());
            PowerAction::On
        }
        _ => action,
    };

    let sent = match ops.send(effective).await {
        Ok(s) => s,
        Err(e) => {
            // A definite refusal (completion code, HTTP 4xx, no reset type) means nothing happened; an
            // ambiguous failure is reported as unconfirmed with the state read back.
            if !e.is_unreachable() {
                return Err(e);
            }
            report.action_sent = true;
            report.note = Some(format!("sending failed, outcome unknown: {}", error_chain(&e)));
            Sent { commands: vec![format!("{effective}")], acked: false, ..Default::default() }
        }
    };
    report.action_sent = true;
    report.acknowledged = sent.acked;
    report.commands = sent.commands.clone();
    let ack_at = t0.elapsed();
    report.ack_after_ms = Some(ms(ack_at));

    let target = effective.target_state();
    let cycle_like = matches!(effective, PowerAction::Cycle | PowerAction::Reset);
    let mut seen_off = sent.off_confirmed;
    let deadline = t0 + opts.timeout;
    let grace_end = Instant::now() + opts.cycle_grace;
    let mut last = before;
    if let Some(at) = sent.off_seen_at {
        report
            .transitions
            .push(Transition { after_ms: ms(at.saturating_duration_since(t0)), state: PowerState::Off });
        last = PowerState::Off;
    }
    loop {
        tokio::time::sleep(opts.poll_interval).await;
        match ops.state().await {
            Ok(s) => {
                if s != last {
                    report.transitions.push(Transition { after_ms: ms(t0.elapsed()), state: s });
                    last = s;
                }
                report.observed = s;
                if s == PowerState::Off {
                    seen_off = true;
                }
            }
            Err(e) => {
                report.poll_errors += 1;
                tracing::debug!(%bmc, error = %e, "power state read failed while confirming");
            }
        }
        let now = Instant::now();
        let decided = if !cycle_like {
            (last == target).then_some(Confirmation::StateReached)
        } else if seen_off && last == target {
            Some(Confirmation::TransitionObserved)
        } else if !sent.expects_off && sent.acked && last == target {
            Some(Confirmation::AcknowledgedAndOn)
        } else if sent.expects_off && !seen_off && now >= grace_end && last == target {
            Some(if sent.acked { Confirmation::AcknowledgedAndOn } else { Confirmation::Unconfirmed })
        } else if !sent.expects_off && !sent.acked && last == target {
            // A reset whose reply was lost leaves no trace in the power state.
            Some(Confirmation::Unconfirmed)
        } else {
            None
        };
        if let Some(c) = decided {
            report.confirmation = c;
            report.confirmed = c.is_confirmed();
            if report.confirmed {
                report.confirmed_after_ms = Some(ms(t0.elapsed()));
            } else {
                report.note.get_or_insert_with(|| {
                    "the reply was lost and no transition was observed: the action may or may not have run; \
                     it was not resent"
                        .into()
                });
            }
            break;
        }
        if now >= deadline {
            report.confirmation = Confirmation::Unconfirmed;
            report.note.get_or_insert_with(|| {
                format!("{target} not observed within {:?} (last seen {last})", opts.timeout)
            });
            break;
        }
    }
    report.total_ms = ms(t0.elapsed());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A scripted BMC: the state sequence returned by successive reads after the action.
    struct Scripted {
        before: PowerState,
        after: VecDeque<PowerState>,
        sent: Vec<PowerAction>,
        sent_template: Sent,
        reads: usize,
    }

    #[async_trait]
    impl PowerOps for Scripted {
        async fn state(&mut self) -> Result<PowerState, BmcError> {
            self.reads += 1;
            if self.sent.is_empty() {
                return Ok(self.before);
            }
            Ok(if self.after.len() > 1 { self.after.pop_front().unwrap() } else { self.after[0] })
        }
        async fn send(&mut self, action: PowerAction) -> Result<Sent, BmcError> {
            self.sent.push(action);
            Ok(self.sent_template.clone())
        }
    }

    fn opts() -> PowerOptions {
        PowerOptions {
            timeout: Duration::from_secs(2),
            poll_interval: Duration::from_millis(1),
            cycle_grace: Duration::from_millis(50),
            cycle_off_time: Duration::ZERO,
        }
    }

    fn bmc(before: PowerState, after: &[PowerState], acked: bool, expects_off: bool) -> Scripted {
        Scripted {
            before,
            after: after.iter().copied().collect(),
            sent: Vec::new(),
            sent_template: Sent { commands: vec!["x".into()], acked, expects_off, ..Default::default() },
            reads: 0,
        }
    }

    async fn run(b: &mut Scripted, a: PowerAction) -> PowerReport {
        confirm(b, "t", BmcProtocol::Ipmi, a, None, &opts()).await.unwrap()
    }

    #[tokio::test]
    async fn already_in_state_sends_nothing() {
        use PowerState::*;
        for (a, s) in [(PowerAction::On, On), (PowerAction::Off, Off), (PowerAction::Soft, Off)] {
            let mut b = bmc(s, &[s], true, false);
            let r = run(&mut b, a).await;
            assert!(b.sent.is_empty(), "{a}");
            assert_eq!(
                (r.confirmation, r.action_sent, r.confirmed),
                (Confirmation::AlreadyInState, false, true)
            );
        }
    }

    #[tokio::test]
    async fn off_waits_for_off() {
        use PowerState::*;
        let mut b = bmc(On, &[On, PoweringOff, PoweringOff, Off], true, false);
        let r = run(&mut b, PowerAction::Off).await;
        assert_eq!(b.sent, vec![PowerAction::Off]);
        assert_eq!(r.confirmation, Confirmation::StateReached);
        assert_eq!(r.transitions.iter().map(|t| t.state).collect::<Vec<_>>(), vec![On, PoweringOff, Off]);
    }

    #[tokio::test]
    async fn cycle_needs_the_off_phase() {
        use PowerState::*;
        let mut b = bmc(On, &[On, On, Off, Off, On], true, true);
        let r = run(&mut b, PowerAction::Cycle).await;
        assert_eq!(r.confirmation, Confirmation::TransitionObserved);
        assert_eq!(b.sent, vec![PowerAction::Cycle], "sent exactly once");
    }

    #[tokio::test]
    async fn cycle_acked_without_visible_off_is_weaker() {
        use PowerState::*;
        let mut b = bmc(On, &[On], true, true);
        let r = run(&mut b, PowerAction::Cycle).await;
        assert_eq!(r.confirmation, Confirmation::AcknowledgedAndOn);
        assert!(r.confirmed);
    }

    #[tokio::test]
    async fn lost_cycle_reply_without_transition_is_unconfirmed_and_not_resent() {
        use PowerState::*;
        let mut b = bmc(On, &[On], false, true);
        let r = run(&mut b, PowerAction::Cycle).await;
        assert_eq!(r.confirmation, Confirmation::Unconfirmed);
        assert!(!r.confirmed && r.action_sent && !r.acknowledged);
        assert_eq!(b.sent.len(), 1);
    }

    #[tokio::test]
    async fn lost_cycle_reply_with_transition_is_confirmed() {
        use PowerState::*;
        let mut b = bmc(On, &[Off, On], false, true);
        let r = run(&mut b, PowerAction::Cycle).await;
        assert_eq!(r.confirmation, Confirmation::TransitionObserved);
    }

    #[tokio::test]
    async fn cycle_of_an_off_host_powers_on() {
        use PowerState::*;
        let mut b = bmc(Off, &[Off, On], true, false);
        let r = run(&mut b, PowerAction::Cycle).await;
        assert_eq!(b.sent, vec![PowerAction::On]);
        assert_eq!(r.confirmation, Confirmation::StateReached);
        assert!(r.note.is_some());
    }

    #[tokio::test]
    async fn timeout_is_reported_not_an_error() {
        use PowerState::*;
        let mut b = bmc(On, &[On], true, false);
        let r = run(&mut b, PowerAction::Off).await;
        assert_eq!(r.confirmation, Confirmation::Unconfirmed);
        assert_eq!(r.observed, On);
        assert!(r.total_ms >= 2000);
    }
}
