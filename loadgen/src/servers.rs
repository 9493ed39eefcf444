//! The echo servers under test, each a process of its own pinned to one core: starting one,
//! learning its port from its first stdout line, reading its memory (VmRSS) and CPU time
//! from /proc, and stopping it.
//!
//! Owns the process side only; the two Rust peers' server loops are in `echo.rs`, the load
//! in `generator.rs`.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long a server may take to print its first line.
const START_LIMIT: Duration = Duration::from_secs(10);

/// Clock ticks per second of the utime and stime fields of /proc/PID/stat (USER_HZ, 100 on
/// every Linux build that matters here).
const USER_HZ: f64 = 100.0;

/// The busy-polling window of the `tickwire-busy-poll` row, microseconds: about three round
/// trips of one connection on loopback here (17.5 µs at N = 1 with it on).
const BUSY_POLL_US: u64 = 50;

/// A server library under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// The workspace's CLI, `tickwire --runtime R serve`.
    Tickwire,
    /// The same with a fixed busy-polling window (`--busy-poll 50`, reactor only): the
    /// worker polls again without sleeping for that long after each wake-up's work.
    TickwireBusyPoll,
    /// The same with busy polling off (`--busy-poll off`, reactor only; the default is
    /// adaptive): the worker sleeps in `epoll_wait` whenever it has nothing to do.
    TickwireNoPoll,
    /// The same with batched sends off (`--no-batched-sends`, reactor only): each
    /// connection's replies go out with a `send(2)` of their own rather than in the
    /// wake-up's io_uring submission.
    TickwireUnbatched,
    /// uWebSockets' echo server (`/work/shared/peers/uws`).
    Uws,
    /// fastwebsockets behind hyper's upgrade, the hidden `fastwebsockets-echo-server`.
    Fastwebsockets,
    /// tokio-tungstenite's `accept_async`, the hidden `tokio-tungstenite-echo-server`.
    TokioTungstenite,
}

impl Library {
    /// Table order: tickwire, the baseline, first.
    pub const ALL: [Self; 7] = [
        Self::Tickwire,
        Self::TickwireBusyPoll,
        Self::TickwireNoPoll,
        Self::TickwireUnbatched,
        Self::Uws,
        Self::Fastwebsockets,
        Self::TokioTungstenite,
    ];

    /// The `--servers` name and row label.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tickwire => "tickwire",
            Self::TickwireBusyPoll => "tickwire-busy-poll",
            Self::TickwireNoPoll => "tickwire-no-poll",
            Self::TickwireUnbatched => "tickwire-unbatched",
            Self::Uws => "uws",
            Self::Fastwebsockets => "fastwebsockets",
            Self::TokioTungstenite => "tokio-tungstenite",
        }
    }
}

/// Where the server binaries are and how tickwire runs.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The `tickwire` CLI binary.
    pub tickwire_bin: PathBuf,
    /// `--runtime` passed to it: `reactor`, `blocking` or `tokio`.
    pub tickwire_runtime: String,
    /// The uWebSockets echo binary.
    pub uws_bin: PathBuf,
    /// The core every server is pinned to.
    pub core: usize,
}

/// A running server; killed when dropped.
pub struct ServerProcess {
    child: Child,
    /// Where its stderr goes (removed with the process).
    log: PathBuf,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// Starts `library` pinned to `launch.core`, with `extra` arguments after its own (the
    /// pub/sub suite's `--pubsub`), and waits (up to 10 s) for the first stdout line, whose
    /// last number is the port. Err says why the server could not run, for a "skipped" note.
    pub fn start(library: Library, launch: &Launch, extra: &[&str]) -> Result<Self, String> {
        let core = launch.core.to_string();
        let mut command = match library {
            Library::Tickwire
            | Library::TickwireBusyPoll
            | Library::TickwireNoPoll
            | Library::TickwireUnbatched => {
                let mut command = pinned(&launch.tickwire_bin, &core)?;
                command.args([
                    "--runtime",
                    &launch.tickwire_runtime,
                    "serve",
                    "--port",
                    "0",
                ]);
                if library == Library::TickwireBusyPoll {
                    command.args(["--busy-poll", &BUSY_POLL_US.to_string()]);
                }
                if library == Library::TickwireNoPoll {
                    command.args(["--busy-poll", "off"]);
                }
                if library == Library::TickwireUnbatched {
                    command.arg("--no-batched-sends");
                }
                command
            }
            Library::Uws => {
                let mut command = pinned(&launch.uws_bin, &core)?;
                command.arg(free_port()?.to_string());
                command
            }
            Library::Fastwebsockets | Library::TokioTungstenite => {
                let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
                let mut command = Command::new(exe);
                let subcommand = if library == Library::Fastwebsockets {
                    "fastwebsockets-echo-server"
                } else {
                    "tokio-tungstenite-echo-server"
                };
                command.args([subcommand, "--port", "0", "--core", &core]);
                command
            }
        };
        command.args(extra);
        Self::spawn(library.name(), command)
    }

    /// Runs `command` (a server called `name` in messages) and waits (up to 10 s) for its
    /// first stdout line, whose last number is the port: [`start`](Self::start) for the
    /// suites' libraries, the NATS suite for its nodes.
    pub fn spawn(name: &str, mut command: Command) -> Result<Self, String> {
        // stderr goes to a file: a server that fails to start says why there, and one that
        // logs every reset connection cannot fill a pipe nobody reads. The port in the name
        // of a free port keeps the logs of several servers of one run apart.
        let log = std::env::temp_dir().join(format!(
            "tickwire-bench-{name}-{}-{}.log",
            std::process::id(),
            free_port()?
        ));
        let stderr = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        let stdout = child.stdout.take().expect("stdout was piped");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let mut stdout = BufReader::new(stdout);
            let _ = stdout.read_line(&mut line);
            let _ = sender.send(line);
            // Keep reading, so a server that prints more never meets a closed pipe.
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        });
        let mut server = Self {
            child,
            log: log.clone(),
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        };
        let line = receiver.recv_timeout(START_LIMIT).unwrap_or_default();
        match last_number(&line) {
            Some(port) => {
                server.addr.set_port(port);
                Ok(server)
            }
            None => {
                let _ = server.child.kill();
                let status = server.child.wait().ok();
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                let said = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                Err(format!(
                    "{name} printed no port (stdout: {:?}; stderr: {said:?}; {})",
                    line.trim(),
                    status.map_or("no exit status".to_owned(), |s| s.to_string())
                ))
            }
        }
    }

    /// The process id, for /proc.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Err when the process has exited.
    pub fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!("the server exited ({status})")),
            Err(e) => Err(format!("cannot check the server: {e}")),
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The process's resident set (VmRSS), in bytes.
pub fn resident_bytes(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| format!("no VmRSS in /proc/{pid}/status"))
}

/// CPU seconds (user + system, every thread) the process has used so far; None when /proc
/// cannot say (the process is gone).
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command: state is the first, utime the 12th, stime the
    // 13th (proc(5) fields 14 and 15).
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / USER_HZ)
}

/// CPU seconds the calling thread has run (the first field of /proc/thread-self/schedstat,
/// in ns); None when the kernel does not expose it.
pub fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// Jiffies core `core` spent idle (idle + iowait) and in total (every field of its /proc/stat
/// line: user, nice, system, idle, iowait, irq, softirq, steal), so far.
pub fn core_jiffies(core: usize) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let prefix = format!("cpu{core} ");
    let line = stat.lines().find(|l| l.starts_with(&prefix))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    (fields.len() == 8).then(|| (fields[3] + fields[4], fields.iter().sum()))
}

/// `taskset -c CORE BINARY`, or Err when the binary is missing.
pub fn pinned(binary: &Path, core: &str) -> Result<Command, String> {
    if !binary.exists() {
        return Err(format!("{} not found", binary.display()));
    }
    let mut command = Command::new("taskset");
    command.args(["-c", core]).arg(binary);
    Ok(command)
}

/// A port free on 127.0.0.1 right now (bound with port 0, then released), for servers that
/// cannot pick their own.
pub fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("bind: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("local_addr: {e}"))
}

/// The last run of digits in `line` as a port ("... ws://127.0.0.1:PORT", "LISTENING PORT").
fn last_number(line: &str) -> Option<u16> {
    let end = line.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = line[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    line[start..end].parse().ok().filter(|port| *port != 0)
}

#[cfg(test)]
mod tests {
    use super::last_number;

    #[test]
    fn the_port_is_the_last_number_of_each_servers_first_line() {
        assert_eq!(
            last_number("tickwire: echo server listening on ws://127.0.0.1:40123\n"),
            Some(40123)
        );
        assert_eq!(last_number("LISTENING 9001\n"), Some(9001));
        assert_eq!(last_number("error: invalid value 'reactor'"), None);
    }
}
