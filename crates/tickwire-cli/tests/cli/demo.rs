//! `tickwire demo` as a user runs it, briefly and small: it exits 0, its summary says every
//! client that keeps up got every message in order with no gap, and it writes its report.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::wait_bounded;

#[test]
fn a_short_demo_checks_every_fast_client_and_writes_its_report() {
    let dir = std::env::temp_dir().join(format!("tickwire-demo-test-{}", std::process::id()));
    let report = dir.join("nested").join("report.html");
    let child = Command::new(env!("CARGO_BIN_EXE_tickwire"))
        .args(["demo", "--duration", "2", "--clients", "6", "--slow", "2"])
        .args(["--rate", "400", "--client-threads", "1", "--workers", "1"])
        .arg("--report")
        .arg(&report)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let finished = wait_bounded(child, Duration::from_secs(60), "tickwire demo");
    let stdout = String::from_utf8_lossy(&finished.stdout);
    assert!(
        finished.status.success(),
        "stdout: {stdout}\nstderr: {}",
        finished.stderr
    );
    // Four fast clients: each saw every message of every topic, in order, with no gap.
    assert!(
        stdout.contains("4 of 4 got every message of every topic in order, with no gap"),
        "{stdout}"
    );
    assert!(stdout.contains("check           passed"), "{stdout}");
    for topic in ["book", "trades", "status"] {
        assert!(
            stdout.contains(&format!("\n  {topic} ")),
            "{topic}: {stdout}"
        );
    }
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    for chart in [
        "deliveries",
        "latency-over-time",
        "percentiles",
        "histogram",
        "drops",
    ] {
        assert!(
            html.contains(&format!(r#"data-chart="{chart}""#)),
            "{chart}"
        );
    }
    assert!(!html.contains("<script"), "the report runs no script");
    let _ = std::fs::remove_dir_all(&dir);
}
