//! A firmware image pushed to N simulated BMCs: `lifeline firmware apply` (multipart push, the image
//! streamed from the file; task polls; the version read back) beside a `curl` multipart push of the same
//! image to the same BMCs in the same run, twice: one curl per BMC all at once (lifeline's concurrency),
//! and a plain loop, one push after the other. Both sides are child processes in their own
//! process group; peak memory is the highest sum of the group's resident sets, sampled every 10 ms
//! (the curl side runs one process per BMC).
//!
//! `cargo build --release --bin lifeline && cargo run --release -p lifeline-engine --example
//! bench_firmware_push -- [N=100] [MIB=64]`; `LIFELINE_BIN` names the binary (default
//! `target/release/lifeline`).
//!
//! Goal (a ratio): lifeline's peak memory at most a tenth of N images (the image is streamed from the
//! file to each BMC in 64 KiB chunks, never held once per BMC); the one-image ratio is printed beside.

use std::io::Write;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A child killed and reaped when dropped (on every way out of the run).
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Resident bytes of every process in process group `pgrp`.
fn group_rss(pgrp: u32) -> u64 {
    let page = 4096;
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    let mut total = 0;
    for e in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // Fields after the command's closing parenthesis: state ppid pgrp ...; rss is field 24 (1-based).
        let Some(rest) = stat.rsplit_once(')').map(|x| x.1) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgrp) {
            total += f.get(21).and_then(|r| r.parse::<u64>().ok()).unwrap_or(0) * page;
        }
    }
    total
}

/// Runs `cmd` in its own process group; (wall, peak group RSS bytes, stdout, success).
fn measured(mut cmd: Command) -> Res<(Duration, u64, String, bool)> {
    use std::os::unix::process::CommandExt;
    let t0 = Instant::now();
    let child = cmd.process_group(0).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let pid = child.id();
    let (done, peak) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let sampler = {
        let (done, peak) = (done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(group_rss(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let out = child.wait_with_output()?;
    let wall = t0.elapsed();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok((
        wall,
        peak.load(Ordering::Relaxed),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    ))
}

const HELP: &str =
    "bench_firmware_push: a firmware image pushed to N simulated Redfish BMCs by `lifeline firmware
apply` (multipart push streamed from the file, task polls, version read back) beside one `curl -F`
multipart push per BMC, all at once, in the same run; wall time and peak memory of each side's
process group, and the ratios.

usage: bench_firmware_push [N] [MIB]   N BMCs (default 100, 1 to 62500), an image of MIB MiB (default 64)
       bench_firmware_push --help

LIFELINE_BIN names the lifeline binary (default target/release/lifeline); curl must be on PATH.";

/// `(N, MIB)` from the command line, or the text to print and the exit code.
fn parse_args() -> Result<(usize, usize), (String, u8)> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Err((HELP.to_owned(), 0));
    }
    let usage = |what: String| (format!("bench_firmware_push: {what}\n\n{HELP}"), 2);
    if args.len() > 2 {
        return Err(usage(format!("at most two arguments (N, MIB), got {}", args.len())));
    }
    let num = |i: usize, name: &str, default: usize, max: usize| match args.get(i) {
        None => Ok(default),
        Some(v) => match v.parse::<usize>() {
            Ok(x) if (1..=max).contains(&x) => Ok(x),
            _ => Err(usage(format!("{name} must be a whole number from 1 to {max}, not `{v}`"))),
        },
    };
    Ok((num(0, "N", 100, 62_500)?, num(1, "MIB", 64, 4096)?))
}

fn main() -> ExitCode {
    let (n, mib) = match parse_args() {
        Ok(x) => x,
        Err((text, 0)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Err((text, code)) => {
            eprintln!("{text}");
            return ExitCode::from(code);
        }
    };
    match run(n, mib) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_firmware_push: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(n: usize, mib: usize) -> Res<()> {
    let bin = std::env::var("LIFELINE_BIN").unwrap_or_else(|_| "target/release/lifeline".into());
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    // BMCs on 127.89.x.y; every push in one wave after the canary (the guard's limits set to N).
    let addr = |i: usize| format!("127.89.{}.{}", i / 250, 1 + i % 250);
    let mut inv = String::from(
        "[cluster]\nname = \"bench\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for i in 0..n {
        inv.push_str(&format!(
            "\n[[device]]\nname = \"b{i:04}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = 24443, protocol = \"redfish\", flavor = \"generic\" }}\n",
            addr(i)
        ));
    }
    std::fs::write(d.join("inventory.toml"), inv)?;
    std::fs::write(
        d.join("lifeline.toml"),
        format!(
            "[runbooks.guard]\nmax-concurrent = {n}\nmax-concurrent-per-rack = {n}\nmax-concurrent-per-role = {n}\n"
        ),
    )?;
    let image = d.join("bios-2.0.0.bin");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&image)?);
        f.write_all(b"LIFELINE-SIM-FIRMWARE 2.0.0\n")?;
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut buf = vec![0u8; 1 << 20];
        for _ in 0..mib {
            for b in buf.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.copy_from_slice(&x.to_le_bytes()[..b.len()]);
            }
            f.write_all(&buf)?;
        }
    }
    let env = [("LIFELINE_BMC_PASSWORD", "bench-pw")];
    let endpoints = d.join("endpoints.json");
    let sim = Command::new(&bin)
        .args(["sim", "--inventory"])
        .arg(d.join("inventory.toml"))
        .arg("--endpoints-json")
        .arg(&endpoints)
        .envs(env)
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("{bin}: {e} (build it: cargo build --release --bin lifeline)"))?;
    let sim = Reaped(sim);
    let t0 = Instant::now();
    while !endpoints.exists() {
        if t0.elapsed() > Duration::from_secs(60) {
            return Err("the simulator did not start".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let lifeline = |args: &[&str]| {
        let mut c = Command::new(&bin);
        c.args(args)
            .arg("--inventory")
            .arg(d.join("inventory.toml"))
            .arg("--config")
            .arg(d.join("lifeline.toml"));
        c.arg("--data-dir").arg(d.join("data")).envs(env).stdin(Stdio::null());
        c
    };
    let plan = d.join("plan.json");
    let (img, out) = (image.to_string_lossy().into_owned(), plan.to_string_lossy().into_owned());
    let plan_args = [
        "firmware",
        "plan",
        "all",
        "--component",
        "bios",
        "--version",
        "2.0.0",
        "--image",
        &img,
        "--out",
        &out,
    ];
    let o = lifeline(&plan_args).output()?;
    if !o.status.success() {
        return Err(format!("plan failed: {}", String::from_utf8_lossy(&o.stderr)).into());
    }
    let apply = lifeline(&["firmware", "apply", &out, "--yes", "--poll", "0.2", "--json"]);
    let (ours_wall, ours_rss, out, ok) = measured(apply)?;
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    let done = report["targets"].as_array().map_or(0, |t| t.iter().filter(|x| x["state"] == "done").count());
    if !ok || done != n {
        eprintln!("warning: {done} of {n} BMCs confirmed");
    }
    // The peers: the same multipart push with curl (no task polls, no read-back), one process per BMC
    // all at once (lifeline's concurrency), then a plain loop, one push after the other.
    let push = |i: usize| {
        format!(
            "curl -sk -o /dev/null -w '%{{http_code}}\\n' -u admin:bench-pw \
             -F 'UpdateParameters={{\"Targets\":[\"/redfish/v1/UpdateService/FirmwareInventory/BIOS\"]}};type=application/json' \
             -F 'UpdateFile=@{};type=application/octet-stream' https://{}:24443/redfish/v1/UpdateService/update-multipart",
            image.display(),
            addr(i)
        )
    };
    let peer = |script: String| -> Res<(Duration, u64, usize)> {
        let mut curl = Command::new("sh");
        curl.arg("-c").arg(script);
        let (wall, rss, out, _) = measured(curl)?;
        Ok((wall, rss, out.lines().filter(|l| *l == "202").count()))
    };
    let at_once = peer((0..n).map(|i| push(i) + " &\n").collect::<String>() + "wait\n")?;
    let looped = peer((0..n).map(|i| push(i) + "\n").collect())?;
    drop(sim);
    let m = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "firmware image of {mib} MiB pushed to {n} simulated BMCs (multipart; lifeline: a canary, then the rest at once)"
    );
    println!("| contender | BMCs | wall s | peak RSS MiB | lifeline ÷ this, wall | lifeline ÷ this, RSS |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| lifeline firmware apply (push, task, read-back) | {done} confirmed | {:.2} | {:.1} | 1 | 1 |",
        ours_wall.as_secs_f64(),
        m(ours_rss)
    );
    for (what, (wall, rss, accepted)) in [
        ("curl, one per BMC, all at once (push only)", at_once),
        ("curl loop, one push after the other (push only)", looped),
    ] {
        println!(
            "| {what} | {accepted} accepted | {:.2} | {:.1} | {:.3} | {:.3} |",
            wall.as_secs_f64(),
            m(rss),
            ours_wall.as_secs_f64() / wall.as_secs_f64().max(1e-9),
            ours_rss as f64 / rss.max(1) as f64
        );
    }
    println!(
        "lifeline's peak RSS / ({n} × the image): {:.4} (goal <= 0.1 where N × MIB dwarfs the process's own ~35 MiB: the image never held once per BMC); / one image: {:.2}",
        m(ours_rss) / (mib * n) as f64,
        m(ours_rss) / mib as f64
    );
    if done != n {
        return Err(format!("{done} of {n} BMCs confirmed the new version").into());
    }
    Ok(())
}
