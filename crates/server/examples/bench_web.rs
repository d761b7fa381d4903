//! The web console in a real browser at fleet scale: `lifeline serve` (this binary in the `serve` role,
//! as `bench_server` runs it) over an inventory of N devices, and Debian's headless Chromium driven over
//! WebDriver (chromedriver). For each page, the time from navigation to the page drawn — the overview's
//! counts (`#total` says N), the rack grid (N cells), and the fleet table with a row per device
//! (`/ui/fleet?view=table`, the baseline) — read in the page as `performance.now()`, so it counts the
//! page's own requests and drawing and not WebDriver's round trips; the DOM's element count and the JS
//! heap. Medians of the runs, the ratio to the table beside each.
//!
//! No BMC is swept (`sweep-interval = "0s"`): the figures are the pages', over the inventory's states.
//!
//! `cargo run --release -p lifeline-server --example bench_web -- [N] [RUNS]` (defaults 10000 and 3).

#[path = "bench_support/mod.rs"]
mod bench_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bench_support::{bench_token, free_listen, http_get, median, play_role, spawn_role, wait_for};
use serde_json::{Value, json};

/// An inventory of `n` devices: racks of 32 GPU nodes, and four switches per fabric in the first rack.
/// Nothing answers at the addresses: the server is not asked to sweep.
fn write_inventory(path: &Path, n: usize) {
    let mut s = String::from(
        "[cluster]\nname = \"bench-web\"\noob-subnets = [\"127.30.0.0/16\", \"127.31.0.0/16\"]\n\n\
         [defaults.bmc]\nprotocol = \"redfish\"\nusername = \"admin\"\ncredential = \"env:LIFELINE_BMC_PASSWORD\"\n\n\
         [defaults.management]\nusername = \"admin\"\ncredential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"dc1\"\n\n",
    );
    let switches = 16.min(n);
    let nodes = n - switches;
    for r in 0..nodes.div_ceil(32).max(1) {
        s.push_str(&format!("[[rack]]\nname = \"r{r:04}\"\nsite = \"dc1\"\n\n"));
    }
    for i in 0..switches {
        let fabric = ["backend", "storage", "frontend", "oob"][i / 4];
        s.push_str(&format!(
            "[[device]]\nname = \"{fabric}-sw-{:02}\"\nrole = \"switch\"\nrack = \"r0000\"\nfabric = \"{fabric}\"\ntier = \"leaf\"\nplatform = \"sonic\"\nmanagement = {{ address = \"127.31.0.{}\" }}\n\n",
            i % 4 + 1,
            i + 1
        ));
    }
    for i in 0..nodes {
        s.push_str(&format!(
            "[[device]]\nname = \"gpu-{i:05}\"\nrole = \"gpu-node\"\nrack = \"r{:04}\"\nbmc = {{ address = \"127.30.{}.{}\" }}\n\n",
            i / 32,
            i / 250,
            i % 250 + 1
        ));
    }
    std::fs::write(path, s).unwrap();
}

/// One chromedriver and one headless Chromium session.
struct Driver {
    child: Child,
    base: String,
    session: String,
    client: reqwest::Client,
    rt: tokio::runtime::Runtime,
    _profile: tempfile::TempDir,
}

impl Driver {
    fn start() -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (apt-get install chromium chromium-driver)");
        let base = format!("http://127.0.0.1:{port}");
        wait_for("chromedriver", Duration::from_secs(30), || {
            http_get(&format!("{base}/status"), None).is_ok()
        });
        let client = reqwest::Client::builder().timeout(Duration::from_secs(600)).build().unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut d = Driver {
            child,
            base,
            session: String::new(),
            client,
            rt: tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            _profile: profile,
        };
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,800", "--enable-precise-memory-info",
                    format!("--user-data-dir={}", d._profile.path().display()),
                ],
            },
        }}});
        let v = d.call("POST", "/session", caps);
        d.session = v["sessionId"].as_str().expect("a WebDriver session").to_owned();
        d.call_session("POST", "/timeouts", json!({"script": 600_000, "pageLoad": 600_000}));
        d
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        self.rt.block_on(async {
            let r = self.client.request(m, &url).json(&body).send().await.expect("chromedriver");
            let st = r.status();
            let v: Value = r.json().await.unwrap_or(Value::Null);
            assert!(st.is_success(), "{method} {path}: {st} {v}");
            v["value"].clone()
        })
    }

    fn call_session(&self, method: &str, path: &str, body: Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    fn goto(&self, url: &str) {
        self.call_session("POST", "/url", json!({ "url": url }));
    }

    /// Runs `script` (its last argument is the callback) and returns what it passed.
    fn js_async(&self, script: &str) -> Value {
        self.call_session("POST", "/execute/async", json!({ "script": script, "args": [] }))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let url = format!("{}/session/{}", self.base, self.session);
            // The request is built inside the runtime: its timeout needs the reactor.
            let _ = self.rt.block_on(async { self.client.delete(url).send().await });
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits in the page, a frame at a time, until `done` (a JS expression) holds; answers the time since
/// navigation began, the page's element count, the grid's or table's element count, and the JS heap.
fn drawn(d: &Driver, done: &str, part: &str) -> (f64, u64, u64, f64) {
    let script = format!(
        "const cb = arguments[arguments.length - 1];
         const tick = () => {{
           if ({done}) {{
             cb([performance.now(), document.querySelectorAll('*').length,
                 document.querySelectorAll('{part} *').length,
                 performance.memory ? performance.memory.usedJSHeapSize : 0]);
           }} else requestAnimationFrame(tick);
         }};
         tick();"
    );
    let v = d.js_async(&script);
    (
        v[0].as_f64().unwrap(),
        v[1].as_u64().unwrap(),
        v[2].as_u64().unwrap(),
        v[3].as_f64().unwrap() / 1048576.0,
    )
}

fn main() {
    if play_role() {
        return;
    }
    let a: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = a.first().map_or(10_000, |v| v.parse().expect("N"));
    let runs: usize = a.get(1).map_or(3, |v| v.parse().expect("RUNS"));
    let dir = tempfile::tempdir().unwrap();
    let (cfg, inv, data) =
        (dir.path().join("lifeline.toml"), dir.path().join("inv.toml"), dir.path().join("data"));
    std::fs::write(&cfg, "[server]\nsweep-interval = \"0s\"\n").unwrap();
    write_inventory(&inv, n);
    let token = bench_token(&cfg, &inv, &data, None);
    let listen = free_listen();
    let args: Vec<String> =
        [&cfg, &inv, &data].iter().map(|p| p.display().to_string()).chain([listen.clone()]).collect();
    let _server = spawn_role("serve", &args, &[]);
    let url = format!("http://{listen}");
    wait_for("the server", Duration::from_secs(120), || {
        http_get(&format!("{url}/api/v1/summary"), Some(&token)).is_ok_and(|b| b.contains("\"total\""))
    });
    let d = Driver::start();
    d.goto(&format!("{url}/ui/login"));
    // The console's own login call (sets the session cookie for the pages that follow).
    let login = d.js_async(
        "const cb = arguments[arguments.length - 1];
         fetch('/api/v1/login', {method: 'POST', headers: {'Content-Type': 'application/json'},
           body: JSON.stringify({username: 'bench', password: 'bench password'})}).then(r => cb(r.status));",
    );
    assert_eq!(login, json!(200), "login");
    let pages = [
        (
            "overview: counts",
            "/ui/overview",
            format!(
                "document.getElementById('total')?.textContent === '{n}' && document.querySelector('#state-counts li[data-state]')"
            ),
            "#state-counts",
        ),
        (
            "fleet: rack grid",
            "/ui/fleet",
            format!("document.querySelectorAll('#grid a.c').length === {n}"),
            "#grid",
        ),
        (
            "fleet: table (baseline)",
            "/ui/fleet?view=table",
            format!("document.querySelectorAll('#fleet-table tbody tr').length === {n}"),
            "#fleet-table",
        ),
    ];
    let mut figures: Vec<Vec<(f64, u64, u64, f64)>> = vec![Vec::new(); pages.len()];
    for run in 0..runs {
        for (i, (name, path, done, part)) in pages.iter().enumerate() {
            d.goto(&format!("{url}{path}"));
            let f = drawn(&d, done, part);
            eprintln!(
                "run {}: {name}: {:.0} ms, {} elements ({} in {part}), heap {:.1} MiB",
                run + 1,
                f.0,
                f.1,
                f.2,
                f.3
            );
            figures[i].push(f);
        }
    }
    let med = |i: usize| {
        let f = &figures[i];
        (
            median(&f.iter().map(|x| x.0).collect::<Vec<_>>()),
            median(&f.iter().map(|x| x.1 as f64).collect::<Vec<_>>()),
            median(&f.iter().map(|x| x.2 as f64).collect::<Vec<_>>()),
            median(&f.iter().map(|x| x.3).collect::<Vec<_>>()),
        )
    };
    let table = med(2);
    println!(
        "\n{n} devices, medians of {runs} runs, headless Chromium 1280x800 (times from navigation to drawn)\n"
    );
    println!(
        "| page | drawn in | × table's time | elements in the page | × table's | in the part | per device | JS heap |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (i, (name, ..)) in pages.iter().enumerate() {
        let m = med(i);
        println!(
            "| {name} | {:.0} ms | {:.3} | {:.0} | {:.3} | {:.0} | {:.2} | {:.1} MiB |",
            m.0,
            m.0 / table.0,
            m.1,
            m.1 / table.1,
            m.2,
            m.2 / n as f64,
            m.3
        );
    }
    let (ov, grid) = (med(0), med(1));
    println!(
        "\noverview + grid: {:.0} ms = {:.3} × the table's {:.0} ms (goal ≤ 0.2); grid elements per device {:.2} (goal ≤ 2)",
        ov.0 + grid.0,
        (ov.0 + grid.0) / table.0,
        table.0,
        grid.2 / n as f64
    );
}
