//! The NATS suite's feed side: the clock its stamps use, the pacing shared by both
//! publishers (the bench's NATS publisher here and a `--local` node's own), the NATS
//! publisher thread, and the nats-server process.
//!
//! Send times are CLOCK_MONOTONIC ns, not rdtsc: a `--local` node stamps in another process,
//! and the monotonic clock is one clock for every process of the machine.

use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tickwire_nats::{Backing, Kind, Publisher, async_nats};

use super::node::{PREFIX, TOPIC};
use crate::pubsub::wire::Stamp;
use crate::servers;
use crate::timing;

/// How long nats-server may take to accept connections.
const NATS_START_LIMIT: Duration = Duration::from_secs(10);

/// CLOCK_MONOTONIC now, in ns.
pub fn monotonic_ns() -> u64 {
    let now = crate::timing::clock_gettime(libc::CLOCK_MONOTONIC);
    u64::try_from(now.as_nanos()).unwrap_or(u64::MAX)
}

/// An open-loop schedule: message i is due `i / rate` seconds after the start. A publisher
/// that falls behind sends what is due back to back, so the rate achieved is the offered one
/// unless the path pushes back.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    rate: f64,
    sent: u64,
}

impl Pacer {
    /// A schedule of `rate` messages per second, nothing sent yet.
    pub fn new(rate: f64) -> Self {
        Self {
            rate: rate.max(f64::MIN_POSITIVE),
            sent: 0,
        }
    }

    /// Messages due and not sent `elapsed` after the start.
    pub fn due(&self, elapsed: Duration) -> u64 {
        let scheduled = (elapsed.as_secs_f64() * self.rate) as u64 + 1;
        scheduled.saturating_sub(self.sent)
    }

    /// Counts one message sent.
    pub fn sent(&mut self) {
        self.sent += 1;
    }

    /// How long from `elapsed` until the next message is due (zero when one is due now).
    pub fn until_next(&self, elapsed: Duration) -> Duration {
        let next = Duration::from_secs_f64(self.sent as f64 / self.rate);
        next.saturating_sub(elapsed)
    }
}

/// What the feed did.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    /// Messages published (numbered 1 ..= this).
    pub messages: u64,
    /// Messages per second over the publishing time.
    pub rate: f64,
}

/// The bench's NATS publisher: a thread pinned to `core` with a tokio runtime (async-nats's
/// connection task on its one worker, the pacing on the thread itself, blocking between
/// messages so that a sleep is as fine as the kernel's timer).
pub struct Feed {
    thread: JoinHandle<Result<Published, String>>,
}

impl Feed {
    /// Connects to `url`, declares the topic (core NATS, numbered from 1) and publishes 100 B
    /// stamped messages at `rate` per second for `seconds`, then flushes.
    pub fn start(url: String, core: usize, rate: f64, seconds: Duration) -> Self {
        let thread = thread::Builder::new()
            .name("nats-feed".to_owned())
            .spawn(move || {
                // Before the runtime starts, so that its worker inherits the core.
                timing::pin_to(core);
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .map_err(|e| format!("tokio runtime: {e}"))?;
                runtime.block_on(publish(&url, rate, seconds))
            })
            .expect("spawn the feed");
        Self { thread }
    }

    /// Waits for the feed to finish.
    pub fn join(self) -> Result<Published, String> {
        self.thread
            .join()
            .unwrap_or_else(|_| Err("the feed panicked".to_owned()))
    }
}

async fn publish(url: &str, rate: f64, seconds: Duration) -> Result<Published, String> {
    let nats = |e: &dyn std::fmt::Display| format!("NATS publisher: {e}");
    let client = async_nats::connect(url).await.map_err(|e| nats(&e))?;
    let mut publisher = Publisher::new(client, PREFIX);
    publisher
        .topic(TOPIC, Backing::Core { first_seq: 1 })
        .await
        .map_err(|e| nats(&e))?;
    let mut pacer = Pacer::new(rate);
    let mut messages = 0;
    let start = Instant::now();
    while start.elapsed() < seconds {
        for _ in 0..pacer.due(start.elapsed()) {
            publisher
                .publish(TOPIC, 0, Kind::Binary, |sequence| {
                    let stamp = Stamp {
                        sent_at: monotonic_ns(),
                        sequence,
                    };
                    Bytes::copy_from_slice(&stamp.payload())
                })
                .await
                .map_err(|e| nats(&e))?;
            pacer.sent();
            messages += 1;
        }
        // Blocks this thread only: the connection task runs on the runtime's worker.
        thread::sleep(pacer.until_next(start.elapsed()));
    }
    let elapsed = start.elapsed().as_secs_f64();
    publisher.flush().await.map_err(|e| nats(&e))?;
    Ok(Published {
        messages,
        rate: messages as f64 / elapsed,
    })
}

/// A nats-server on 127.0.0.1 pinned to one core (no JetStream: the suite's topic is core
/// NATS); killed on drop.
pub struct NatsServer {
    child: Child,
    /// Its client port.
    pub port: u16,
}

impl NatsServer {
    /// Starts `binary` on a free port, pinned to `core`, and waits until it accepts.
    pub fn start(binary: &Path, core: usize) -> Result<Self, String> {
        let port = servers::free_port()?;
        let mut command = servers::pinned(binary, &core.to_string())?;
        let child = command
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start nats-server: {e}"))?;
        let mut server = Self { child, port };
        let started = Instant::now();
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("nats-server exited ({status})"));
            }
            if started.elapsed() > NATS_START_LIMIT {
                return Err("nats-server did not accept connections in 10 s".to_owned());
            }
            thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The nats-server binary: `explicit`, else what `scripts/nats-server.sh` installs (it prints
/// the path; run from the repository root).
pub fn nats_server_binary(explicit: Option<&PathBuf>) -> Result<PathBuf, String> {
    if let Some(binary) = explicit {
        return Ok(binary.clone());
    }
    let output = Command::new("bash")
        .arg("scripts/nats-server.sh")
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("bash scripts/nats-server.sh: {e}"))?;
    if !output.status.success() {
        return Err(
            "scripts/nats-server.sh failed (run from the repository root, or pass \
                    --nats-server-bin)"
                .to_owned(),
        );
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .map(|line| PathBuf::from(line.trim()))
        .ok_or_else(|| "scripts/nats-server.sh printed no path".to_owned())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Pacer;

    #[test]
    fn the_pacer_owes_what_the_rate_scheduled_and_no_more() {
        let mut pacer = Pacer::new(2_000.0);
        assert_eq!(
            pacer.due(Duration::ZERO),
            1,
            "message 0 is due at the start"
        );
        pacer.sent();
        assert_eq!(pacer.due(Duration::from_micros(499)), 0);
        assert_eq!(
            pacer.until_next(Duration::from_micros(100)),
            Duration::from_micros(400)
        );
        // A publisher 10 ms late owes the 20 messages due by then, back to back.
        assert_eq!(pacer.due(Duration::from_micros(10_000)), 20);
        for _ in 0..20 {
            pacer.sent();
        }
        assert_eq!(pacer.due(Duration::from_micros(10_000)), 0);
        assert_eq!(
            pacer.until_next(Duration::from_micros(10_000)),
            Duration::from_micros(500)
        );
    }
}
