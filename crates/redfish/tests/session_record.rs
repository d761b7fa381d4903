//! `ClientOptions::record_sessions`: a caller that keeps no sessions (a one-shot command) is told of each
//! session its client logs in to, while the session is on the BMC and before the client's reads carry its
//! token, and of each it deletes, so a process killed in between leaves the session findable. Against
//! the simulator, whose own session table is the witness: the recorded URI is the session the BMC lists.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lifeline_redfish::*;
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, RunningFleet, SimOptions};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    /// URI, and how many sessions the BMC listed at that moment.
    Opened(String, usize),
    Closed(String),
}

struct Recorder {
    fleet: Arc<RunningFleet>,
    events: Mutex<Vec<Event>>,
}

#[async_trait]
impl SessionRecord for Recorder {
    async fn opened(&self, bmc: &str, uri: &str, token: &str) {
        assert!(!token.is_empty());
        let on_bmc = self.fleet.redfish(bmc).unwrap().session_count();
        self.events.lock().unwrap().push(Event::Opened(uri.to_owned(), on_bmc));
    }
    async fn closed(&self, _bmc: &str, uri: &str) {
        self.events.lock().unwrap().push(Event::Closed(uri.to_owned()));
    }
}

async fn setup() -> (Arc<RunningFleet>, Arc<Recorder>) {
    let fleet = Arc::new(Fleet::start(FleetSpec::generate(1, 0), SimOptions::for_tests()).await.unwrap());
    let r = Arc::new(Recorder { fleet: fleet.clone(), events: Mutex::new(Vec::new()) });
    (fleet, r)
}

async fn connect(f: &RunningFleet, r: &Arc<Recorder>, speculative: bool) -> Client {
    let ep = f.endpoint("gpu-node-01", EndpointKind::Redfish).unwrap();
    let opts = ClientOptions {
        request_timeout: Duration::from_secs(10),
        speculative_login: speculative,
        record_sessions: Some(SessionRecorder(r.clone())),
        ..Default::default()
    };
    Client::connect(
        BmcTarget::new("gpu-node-01", format!("https://{}:{}", ep.address, ep.port)),
        Credentials::new(&ep.username, &ep.password),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        opts,
    )
    .await
    .unwrap()
}

fn events(r: &Recorder) -> Vec<Event> {
    r.events.lock().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_is_recorded_while_on_the_bmc_and_struck_off_when_deleted() {
    for speculative in [true, false] {
        let (f, r) = setup().await;
        let c = connect(&f, &r, speculative).await;
        c.systems().await.unwrap();
        assert_eq!(c.auth_in_use(), AuthInUse::Session);
        let ev = events(&r);
        let [Event::Opened(uri, on_bmc)] = ev.as_slice() else { panic!("speculative {speculative}: {ev:?}") };
        assert_eq!(*on_bmc, 1, "recorded while the session is on the BMC");
        assert!(uri.starts_with("https://") && uri.contains("/SessionService/Sessions/"), "{uri}");
        assert_eq!(c.close().await.unwrap(), 1);
        assert_eq!(events(&r)[1..], [Event::Closed(uri.clone())], "speculative {speculative}");
        assert_eq!(f.redfish("gpu-node-01").unwrap().session_count(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_dropped_without_close_strikes_off_what_its_background_logout_deleted() {
    let (f, r) = setup().await;
    let c = connect(&f, &r, true).await;
    c.systems().await.unwrap();
    let Some(Event::Opened(uri, _)) = events(&r).first().cloned() else { panic!("{:?}", events(&r)) };
    drop(c);
    for _ in 0..100 {
        if events(&r).len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(events(&r)[1..], [Event::Closed(uri)]);
    assert_eq!(f.redfish("gpu-node-01").unwrap().session_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_basic_client_opens_no_session_and_records_nothing() {
    let (f, r) = setup().await;
    let ep = f.endpoint("gpu-node-01", EndpointKind::Redfish).unwrap();
    let opts = ClientOptions {
        auth: AuthMode::Basic,
        record_sessions: Some(SessionRecorder(r.clone())),
        ..Default::default()
    };
    let c = Client::connect(
        BmcTarget::new("gpu-node-01", format!("https://{}:{}", ep.address, ep.port)),
        Credentials::new(&ep.username, &ep.password),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        opts,
    )
    .await
    .unwrap();
    c.systems().await.unwrap();
    c.close().await.unwrap();
    assert!(events(&r).is_empty(), "{:?}", events(&r));
}
