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
//!   ([`Confirmation::TransitionObserved`]); the state is polled fast (`fast_poll_interval`) right after
//!   the POST so that a short off phase is seen. If no Off was seen within `cycle_grace` but the system's
//!   `LastResetTime` moved, the BMC itself recorded the reset ([`Confirmation::ResetRecorded`]). If
//!   neither, the BMC acknowledged and reports On but nothing shows that the host lost power:
//!   [`Confirmation::OffNotObserved`], which is NOT confirmed (a cycle is never reported confirmed with
//!   `[on]` as its only transition). A lost reply with no Off seen is [`Confirmation::Unconfirmed`], and it
//!   is NOT resent.
//! - Redfish cycle planned as ForceOff + On: the Off is waited for between the two requests, so the
//!   transition is always observed; if Off never comes, On is not sent and the report says so (what was
//!   sent, the last state seen), as it does for every failure after the first command.
//! - power-up is idempotent: when the requested state is On and the host still reads Off
//!   `power_up_retry_after` after the power-up was sent (its datagrams lost on a lossy link, or the BMC
//!   dropped it), it is sent again, at most `power_up_retries` times; each resend is in `commands`.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Confirmation {
    /// Already in the requested state: nothing was sent.
    AlreadyInState,
    /// The requested state was read back.
    StateReached,
    /// Off then On was read back (cycle).
    TransitionObserved,
    /// The BMC acknowledged and reports On; no off phase exists to observe (a reset keeps power on).
    AcknowledgedAndOn,
    /// A cycle whose off phase was not observed, but the BMC's own `LastResetTime` moved after the request.
    ResetRecorded,
    /// A cycle the BMC acknowledged and that reads On, but no Off was observed and the BMC recorded no
    /// reset: it may not have happened. Not confirmed.
    OffNotObserved,
    /// The requested state did not hold within the timeout, or a lost reply left the outcome unknowable.
    Unconfirmed,
}

impl Confirmation {
    pub fn is_confirmed(self) -> bool {
        !matches!(self, Confirmation::Unconfirmed | Confirmation::OffNotObserved)
    }

    /// What the kind means, in words for the operator.
    pub fn describe(self) -> &'static str {
        match self {
            Confirmation::AlreadyInState => "already in the requested state; nothing was sent",
            Confirmation::StateReached => "the requested state was read back",
            Confirmation::TransitionObserved => "Off and then On were read back",
            Confirmation::AcknowledgedAndOn => "acknowledged and On (a reset has no off phase to observe)",
            Confirmation::ResetRecorded => "Off was not seen, but the BMC recorded a reset after the request",
            Confirmation::OffNotObserved => {
                "acknowledged and On, but no Off was observed and the BMC recorded no reset: it may not have happened"
            }
            Confirmation::Unconfirmed => "not confirmed",
        }
    }
}

/// One observed power state change while confirming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Transition {
    pub after_ms: u64,
    pub state: PowerState,
}

/// Everything about one power request.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
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
    /// The BMC's record of the last reset as of the last `state` read (Redfish `LastResetTime`).
    fn reset_marker(&self) -> Option<String> {
        None
    }
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
    fn reset_marker(&self) -> Option<String> {
        self.conn.reset_marker()
    }
}

/// How long after a `PowerCycle` request the state is polled at `fast_poll_interval`.
const FAST_POLL_WINDOW: Duration = Duration::from_secs(3);

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
    // Nothing is sent before this read succeeds, so retrying it is always safe (a lossy link may need it).
    let mut tries = 0;
    let before = loop {
        match ops.state().await {
            Ok(s) => break s,
            Err(e) if e.is_unreachable() && tries < 2 => {
                tries += 1;
                tracing::debug!(%bmc, error = %e, "power state unreadable before acting; reading again");
            }
            Err(e) => return Err(e),
        }
    };
    let marker_before = ops.reset_marker();
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
    if let Some(f) = &sent.failure {
        report.note = Some(match report.note.take() {
            Some(prev) => format!("{prev}; {f}"),
            None => f.clone(),
        });
    }
    if sent.gave_up {
        // Half a sequence was sent and the rest deliberately not: say what was observed, nothing more.
        if let Some(at) = sent.off_seen_at {
            report
                .transitions
                .push(Transition { after_ms: ms(at.saturating_duration_since(t0)), state: PowerState::Off });
        }
        match ops.state().await {
            Ok(s) => {
                if report.transitions.last().map(|t| t.state) != Some(s) {
                    report.transitions.push(Transition { after_ms: ms(t0.elapsed()), state: s });
                }
                report.observed = s;
            }
            Err(_) => report.poll_errors += 1,
        }
        report.confirmation = Confirmation::Unconfirmed;
        report.total_ms = ms(t0.elapsed());
        return Ok(report);
    }
    let cycle_like = matches!(effective, PowerAction::Cycle | PowerAction::Reset);
    let mut seen_off = sent.off_confirmed;
    let deadline = t0 + opts.timeout;
    let grace_end = Instant::now() + opts.cycle_grace;
    // Off phases start within a few seconds of the request; a later one lasts long enough for normal polls.
    let fast_end = Instant::now() + opts.cycle_grace.min(FAST_POLL_WINDOW);
    let mut last = before;
    let mut reset_recorded = false;
    // When the power-up (or the BMC's own cycle) was last sent, for resending it to a host that stays off.
    let mut up_sent_at = Instant::now();
    let mut resends = 0u32;
    if let Some(at) = sent.off_seen_at {
        report
            .transitions
            .push(Transition { after_ms: ms(at.saturating_duration_since(t0)), state: PowerState::Off });
        last = PowerState::Off;
    }
    loop {
        // Right after a PowerCycle the off phase may be short: poll fast until it is seen or the grace ends.
        let fast = sent.expects_off && !seen_off && Instant::now() < fast_end;
        let interval =
            if fast { opts.poll_interval.min(opts.fast_poll_interval) } else { opts.poll_interval };
        tokio::time::sleep(interval).await;
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
                let marker = ops.reset_marker();
                if marker.is_some() && marker != marker_before {
                    reset_recorded = true;
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
            Some(if reset_recorded {
                Confirmation::ResetRecorded
            } else if sent.acked {
                Confirmation::OffNotObserved
            } else {
                Confirmation::Unconfirmed
            })
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
            }
            let why = match c {
                Confirmation::ResetRecorded => Some(format!(
                    "no Off was observed (polled every {} ms for {} s, then every {} ms for {} s), but the BMC's \
                     LastResetTime moved from {} to {}",
                    opts.fast_poll_interval.as_millis(),
                    opts.cycle_grace.min(FAST_POLL_WINDOW).as_secs_f32(),
                    opts.poll_interval.as_millis(),
                    opts.cycle_grace.as_secs_f32(),
                    marker_before.as_deref().unwrap_or("none"),
                    ops.reset_marker().as_deref().unwrap_or("none"),
                )),
                Confirmation::OffNotObserved => Some(format!(
                    "the BMC acknowledged and reports On, but no Off was observed (polled every {} ms for {} s, \
                     then every {} ms for {} s) and it recorded no reset (no LastResetTime change): the cycle \
                     may not have happened",
                    opts.fast_poll_interval.as_millis(),
                    opts.cycle_grace.min(FAST_POLL_WINDOW).as_secs_f32(),
                    opts.poll_interval.as_millis(),
                    opts.cycle_grace.as_secs_f32(),
                )),
                Confirmation::Unconfirmed => Some(
                    "the reply was lost and no transition was observed: the action may or may not have run; \
                     it was not resent"
                        .into(),
                ),
                _ => None,
            };
            if let Some(w) = why {
                report.note = Some(match report.note.take() {
                    Some(prev) => format!("{prev}; {w}"),
                    None => w,
                });
            }
            break;
        }
        if now >= deadline {
            report.confirmation = Confirmation::Unconfirmed;
            let w = format!("{target} not observed within {:?} (last seen {last})", opts.timeout);
            report.note = Some(match report.note.take() {
                Some(prev) => format!("{prev}; {w}"),
                None => w,
            });
            break;
        }
        // Power-up is idempotent: a host that still reads Off well after it was sent gets it again.
        if target == PowerState::On
            && last == PowerState::Off
            && resends < opts.power_up_retries
            && now.saturating_duration_since(up_sent_at) >= opts.power_up_retry_after
        {
            resends += 1;
            up_sent_at = now;
            let waited = opts.power_up_retry_after.as_secs();
            match ops.send(PowerAction::On).await {
                Ok(s) => report.commands.extend(
                    s.commands
                        .iter()
                        .map(|c| format!("{c} (resent {resends}: still off {waited}s after power-up)")),
                ),
                Err(e) => {
                    report.commands.push(format!("power up (resend {resends} failed: {})", error_chain(&e)))
                }
            }
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
        /// States read after a resent power-up (a power-up whose first sending was lost).
        after_resend: Option<VecDeque<PowerState>>,
        /// `LastResetTime` before and after the action.
        marker: (Option<String>, Option<String>),
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
            if self.sent.len() > 1
                && action == PowerAction::On
                && let Some(a) = self.after_resend.take()
            {
                self.after = a;
            }
            Ok(self.sent_template.clone())
        }
        fn reset_marker(&self) -> Option<String> {
            if self.sent.is_empty() { self.marker.0.clone() } else { self.marker.1.clone() }
        }
    }

    fn opts() -> PowerOptions {
        PowerOptions {
            timeout: Duration::from_secs(2),
            poll_interval: Duration::from_millis(1),
            cycle_grace: Duration::from_millis(50),
            cycle_off_time: Duration::ZERO,
            fast_poll_interval: Duration::from_millis(1),
            power_up_retry_after: Duration::from_millis(30),
            power_up_retries: 2,
        }
    }

    fn bmc(before: PowerState, after: &[PowerState], acked: bool, expects_off: bool) -> Scripted {
        Scripted {
            before,
            after: after.iter().copied().collect(),
            sent: Vec::new(),
            sent_template: Sent { commands: vec!["x".into()], acked, expects_off, ..Default::default() },
            reads: 0,
            after_resend: None,
            marker: (None, None),
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
    async fn cycle_acked_without_visible_off_is_not_confirmed() {
        use PowerState::*;
        let mut b = bmc(On, &[On], true, true);
        let r = run(&mut b, PowerAction::Cycle).await;
        assert_eq!(r.confirmation, Confirmation::OffNotObserved);
        assert!(!r.confirmed, "never confirmed with [on] as the only transition: {r:#?}");
        assert!(r.note.as_deref().is_some_and(|n| n.contains("no Off was observed")), "{r:#?}");
        assert_eq!(b.sent.len(), 1, "not resent");
    }

    #[tokio::test]
    async fn cycle_without_visible_off_but_a_new_last_reset_time_is_recorded() {
        use PowerState::*;
        let mut b = bmc(On, &[On], true, true);
        b.marker = (Some("2026-11-20T01:00:00Z".into()), Some("2026-11-24T13:00:00Z".into()));
        let r = run(&mut b, PowerAction::Cycle).await;
        assert_eq!(r.confirmation, Confirmation::ResetRecorded);
        assert!(r.confirmed && r.note.as_deref().is_some_and(|n| n.contains("LastResetTime")), "{r:#?}");
        // An unchanged LastResetTime is no evidence.
        let mut same = bmc(On, &[On], true, true);
        same.marker = (Some("t".into()), Some("t".into()));
        assert_eq!(run(&mut same, PowerAction::Cycle).await.confirmation, Confirmation::OffNotObserved);
    }

    #[tokio::test]
    async fn a_lost_power_up_is_resent_while_the_host_stays_off() {
        use PowerState::*;
        // IPMI cycle: Off confirmed while sending, the power-up was lost: the host stays off until resent.
        let mut b = bmc(On, &[Off], false, false);
        b.sent_template.off_confirmed = true;
        b.after_resend = Some([Off, On].into_iter().collect());
        let r = run(&mut b, PowerAction::Cycle).await;
        assert_eq!(b.sent, vec![PowerAction::Cycle, PowerAction::On], "{r:#?}");
        assert_eq!(r.confirmation, Confirmation::TransitionObserved, "{r:#?}");
        assert!(r.commands.iter().any(|c| c.contains("resent 1")), "{r:#?}");
        // Bounded: a host that never comes on gets `power_up_retries` resends, then an honest timeout.
        let mut dead = bmc(Off, &[Off], true, false);
        let r = run(&mut dead, PowerAction::On).await;
        assert_eq!(dead.sent.len(), 3, "first sending + 2 resends: {r:#?}");
        assert_eq!(r.confirmation, Confirmation::Unconfirmed);
    }

    #[tokio::test]
    async fn a_sequence_given_up_half_way_is_a_report_of_what_was_sent() {
        use PowerState::*;
        let mut b = bmc(On, &[On], true, false);
        b.sent_template.commands = vec!["ComputerSystem.Reset ForceOff".into()];
        b.sent_template.failure =
            Some("ForceOff sent, but Off was not observed within 60s (last seen on); On was not sent".into());
        b.sent_template.gave_up = true;
        let r = run(&mut b, PowerAction::Cycle).await;
        assert!(r.action_sent && !r.confirmed, "{r:#?}");
        assert_eq!(r.commands, ["ComputerSystem.Reset ForceOff"]);
        assert_eq!(r.observed, On);
        assert!(r.note.as_deref().is_some_and(|n| n.contains("On was not sent")), "{r:#?}");
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
