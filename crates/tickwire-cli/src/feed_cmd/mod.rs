//! `tickwire feed URL [URL...]`: a feed session (`tickwire::feed`) on the command line,
//! driven by the blocking `Feed` or, with `--runtime tokio`, by tickwire-tokio's, printing one
//! JSON line per message and event (`output`). Several URLs are redundant connections merged
//! by sequence. The flags map onto `FeedConfig` one to one; every decision is the session's.
//!
//! It ends with status 0 on SIGTERM or SIGINT, once the lines of the events already taken
//! are written, and with one line on stderr and a failure status when the session ends
//! (`--max-attempts` failed connects in a row) or a flag is wrong. docs/FEEDS.md
//! "tickwire feed" is the user's page.

mod output;
mod pointer;

use std::io::{self, Write};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use clap::{Args, ValueEnum};
use tickwire::codec::mux::Backoff;
use tickwire::feed::{
    ConnectBudget, Event, FeedConfig, FeedError, Heartbeat, ReconnectPolicy, SendQuota, Timestamps,
};

use crate::exsim::{parse_budget, parse_duration};
use crate::signals::Shutdown;
use crate::{ClientArgs, client_builder};
pub(crate) use output::Printer;
use output::SharedOut;
use pointer::SequencePointers;

#[derive(Args)]
pub(crate) struct FeedArgs {
    /// ws:// or wss:// URLs: one connection to each, merged by sequence (with --seq), at
    /// most 7.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
    /// A text sent after each connect (after --login), as it is (repeatable).
    #[arg(long = "subscribe", value_name = "TEXT")]
    subscriptions: Vec<String>,
    /// A text sent first after each connect.
    #[arg(long, value_name = "TEXT")]
    login: Option<String>,
    /// JSON pointer (RFC 6901) to each message's sequence number, such as /seq: numbers
    /// are delivered once and in order, holes reported as gap events.
    #[arg(long, value_name = "POINTER")]
    seq: Option<String>,
    /// JSON pointer to each message's sequence key (numbers are per key), such as /key.
    #[arg(long, value_name = "POINTER", requires = "seq")]
    seq_key: Option<String>,
    /// No data message on a connection for this long: it is replaced (whatever pings say).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    stale_after: Option<Duration>,
    /// An application ping text: sent after --app-ping-after of quiet, and, when the server
    /// sends it, answered with --app-pong.
    #[arg(long, value_name = "TEXT", requires = "app_pong")]
    app_ping: Option<String>,
    /// The application pong text: the reply expected to --app-ping (not printed).
    #[arg(long, value_name = "TEXT", requires = "app_ping")]
    app_pong: Option<String>,
    /// Send --app-ping after this long without a message received.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "app_ping")]
    app_ping_after: Option<Duration>,
    /// How long the --app-pong may take before the connection is replaced.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "5s")]
    app_pong_within: Duration,
    /// Reconnect waits: full jitter between MIN and a ceiling doubling up to MAX.
    #[arg(long, value_name = "MIN:MAX", value_parser = parse_backoff, default_value = "100ms:30s")]
    backoff: Backoff,
    /// End (status 1) after this many failed connects in a row on one connection.
    #[arg(long, value_name = "N")]
    max_attempts: Option<u32>,
    /// At most N connect attempts in any window of DUR, over all connections.
    #[arg(long, value_name = "N/DUR", value_parser = parse_budget)]
    max_connects: Option<(usize, Duration)>,
    /// At most N messages sent per connection in any window of DUR.
    #[arg(long, value_name = "N/DUR", value_parser = parse_budget)]
    max_sends: Option<(usize, Duration)>,
    /// Replace each connection make-before-break at this age (Binance: 24h, so 23h50m).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    rotate_after: Option<Duration>,
    /// From the connect to the handshake's answer, at most.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "10s")]
    connect_timeout: Duration,
    /// Receive timestamps: the clocks at the read (user), or also the kernel's (kernel:
    /// Linux, ws:// only; kernel_ns in the message lines).
    #[arg(long, value_enum, default_value_t = TimestampsArg::User)]
    timestamps: TimestampsArg,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum TimestampsArg {
    User,
    Kernel,
}

/// Runs the feed until a signal (`Ok`) or its end (`Err`, the stderr line).
pub(crate) fn run(args: &FeedArgs, tokio: bool) -> Result<(), String> {
    let pointers = match &args.seq {
        Some(seq) => Some(SequencePointers::parse(seq, args.seq_key.as_deref())?),
        None => None,
    };
    let timestamps = match args.timestamps {
        TimestampsArg::User => Timestamps::User,
        TimestampsArg::Kernel => Timestamps::Kernel,
    };
    let config = config(args, pointers.clone())?.with_timestamps(timestamps);
    let printer = Printer::new(args.urls.clone(), pointers);
    let out: SharedOut = Arc::new(Mutex::new(io::BufWriter::new(io::stdout())));
    if tokio {
        let client = client_builder(tickwire::tokio::ClientBuilder::new(), &args.client)?;
        let runtime = crate::tokio_ws::current_thread()?;
        // The feed is made inside the runtime (its timer needs one).
        runtime.block_on(async {
            let shutdown = Shutdown::install()?;
            let feed =
                tickwire::tokio::feed::Feed::new(config, client).map_err(|e| e.to_string())?;
            run_tokio(feed, printer, &out, shutdown).await
        })
    } else {
        let client = client_builder(tickwire::blocking::ClientBuilder::new(), &args.client)?;
        let feed =
            tickwire::blocking::feed::Feed::new(config, client).map_err(|e| e.to_string())?;
        exit_on_signal(Arc::clone(&out))?;
        run_blocking(feed, printer, &out)
    }
}

/// The session's configuration from the flags; `Err` names a bad URL or a bad value.
fn config(args: &FeedArgs, pointers: Option<SequencePointers>) -> Result<FeedConfig, String> {
    for url in &args.urls {
        let parsed = url::Url::parse(url).map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        if !matches!(parsed.scheme(), "ws" | "wss") {
            return Err(format!("{url:?}: a feed URL is ws:// or wss://"));
        }
    }
    let mut config = FeedConfig::new(args.urls[0].clone()).with_connections(args.urls.len());
    for url in &args.urls[1..] {
        config = config.with_endpoint(url.clone());
    }
    for text in &args.subscriptions {
        config = config.with_subscription(text.clone());
    }
    let reconnect = ReconnectPolicy::new()
        .with_backoff(args.backoff)
        .with_max_attempts(args.max_attempts);
    config = config
        .with_login(args.login.clone())
        .with_reconnect(reconnect)
        .with_connect_timeout(args.connect_timeout)
        .with_stale_after(args.stale_after)
        .with_rotate_after(args.rotate_after)
        .with_connect_budget(
            args.max_connects
                .map(|(attempts, window)| Arc::new(ConnectBudget::new(attempts, window))),
        );
    if let Some((units, window)) = args.max_sends {
        let units = u32::try_from(units).map_err(|_| "--max-sends: too many".to_owned())?;
        config = config.with_send_quota(Some(SendQuota::per_window(units, window)));
    }
    if let Some(pointers) = pointers {
        config = config.with_sequence(move |message| pointers.extract(message));
    }
    if let (Some(ping), Some(pong)) = (&args.app_ping, &args.app_pong) {
        if let Some(after_quiet) = args.app_ping_after {
            let expected = pong.clone();
            config = config.with_heartbeat(Some(Heartbeat {
                text: ping.clone(),
                after_quiet,
                reply: Arc::new(move |message| message == expected.as_bytes()),
                deadline: args.app_pong_within,
            }));
        }
        let (ping, pong) = (ping.clone(), pong.clone());
        config = config
            .with_answer_ping(move |message| (message == ping.as_bytes()).then(|| pong.clone()));
    }
    Ok(config)
}

/// `--backoff MIN:MAX`, two durations, MIN no more than MAX.
pub(crate) fn parse_backoff(text: &str) -> Result<Backoff, String> {
    let (min, max) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?} is not MIN:MAX (such as 100ms:30s)"))?;
    let (initial, max) = (parse_duration(min)?, parse_duration(max)?);
    if initial > max {
        return Err(format!("{text:?}: MIN is more than MAX"));
    }
    Ok(Backoff { initial, max })
}

/// On the blocking runtime, a thread waits for SIGTERM or SIGINT (the handlers installed
/// before this returns, so before any line is printed), then flushes the lines written
/// (never half a batch: it takes the lock the loop holds while writing one) and exits 0.
/// The feed's `poll(2)` cannot be woken from another thread, so the connections are not
/// closed with a close frame: the kernel closes the sockets.
fn exit_on_signal(out: SharedOut) -> Result<(), String> {
    let runtime = crate::tokio_ws::current_thread()?;
    let shutdown = {
        let _context = runtime.enter();
        Shutdown::install()?
    };
    std::thread::spawn(move || {
        runtime.block_on(shutdown.wait());
        let _ = output::lock(&out).flush();
        std::process::exit(0);
    });
    Ok(())
}

fn run_blocking(
    mut feed: tickwire::blocking::feed::Feed,
    mut printer: Printer,
    out: &SharedOut,
) -> Result<(), String> {
    loop {
        let event = feed.next_event().map_err(|e| format!("feed: {e}"))?;
        let mut out = output::lock(out);
        let mut next = event;
        // The events ready now are one batch: written, then flushed once.
        while let Some(event) = next {
            if let Some(end) = print(&mut printer, &mut *out, &event) {
                return end;
            }
            next = feed.try_next_event().map_err(|e| format!("feed: {e}"))?;
        }
        if let Some(end) = flushed(&mut *out) {
            return end;
        }
        if feed.ended().is_some() {
            return Ok(());
        }
    }
}

async fn run_tokio(
    mut feed: tickwire::tokio::feed::Feed,
    mut printer: Printer,
    out: &SharedOut,
    shutdown: Shutdown,
) -> Result<(), String> {
    let mut shutdown = pin!(shutdown.wait());
    loop {
        // `next_event` is cancel safe: a signal loses no event already taken.
        let end = tokio::select! {
            biased;
            () = &mut shutdown => Some(Ok(())),
            event = feed.next_event() => {
                let mut out = output::lock(out);
                let mut next = event;
                let mut end = None;
                while let Some(event) = next.take() {
                    end = print(&mut printer, &mut *out, &event);
                    if end.is_some() {
                        break;
                    }
                    next = ready_event(&mut feed);
                }
                end.or_else(|| flushed(&mut *out))
            }
        };
        if let Some(end) = end {
            let _ = output::lock(out).flush();
            return end;
        }
        if feed.ended().is_some() {
            return Ok(());
        }
    }
}

/// The tokio feed's next event if it is ready now (its future polled once, then dropped:
/// `next_event` is cancel safe).
fn ready_event(feed: &mut tickwire::tokio::feed::Feed) -> Option<Event<'_>> {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(feed.next_event()).poll(&mut cx) {
        Poll::Ready(event) => event,
        Poll::Pending => None,
    }
}

/// Prints `event`; `Some` ends the command: the session ended (with the stderr line when
/// it failed), or stdout did.
fn print(
    printer: &mut Printer,
    out: &mut impl Write,
    event: &Event<'_>,
) -> Option<Result<(), String>> {
    if let Event::Ended(why) = event {
        let _ = out.flush();
        return Some(match why {
            FeedError::Closed => Ok(()),
            error => Err(format!("feed ended: {error}")),
        });
    }
    printer.event(out, event).err().map(stdout_failed)
}

/// Flushes a batch; `Some` when stdout is gone.
fn flushed(out: &mut impl Write) -> Option<Result<(), String>> {
    out.flush().err().map(stdout_failed)
}

/// A reader that went away (`| head`) ends the command quietly; another failure is named.
fn stdout_failed(error: io::Error) -> Result<(), String> {
    match error.kind() {
        io::ErrorKind::BrokenPipe => Ok(()),
        _ => Err(format!("stdout: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_bounds_parse_in_order() {
        let backoff = parse_backoff("50ms:2s").unwrap();
        assert_eq!(backoff.initial, Duration::from_millis(50));
        assert_eq!(backoff.max, Duration::from_secs(2));
        assert!(
            parse_backoff("2s:50ms")
                .unwrap_err()
                .contains("MIN is more")
        );
        assert!(parse_backoff("2s").is_err());
    }
}
