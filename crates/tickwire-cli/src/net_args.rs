//! The connect-path flags curl users know (`--resolve`, `--interface`, `--connect-timeout`,
//! `-x/--proxy`, `--noproxy`, `-m/--max-time`), shared by `connect` on both runtimes and by
//! `http`, and what they set on a client builder.

use std::time::{Duration, Instant};

use clap::Args;
use tickwire::ws::ClientBuilder as ClientBuilderOf;

use crate::exsim;

/// `connect --max-time`: when the command must be over.
#[derive(Clone, Copy)]
pub(crate) struct MaxTime {
    max: Duration,
    deadline: Instant,
}

impl MaxTime {
    /// The deadline `max` after now, if one was asked for.
    pub(crate) fn start(max: Option<Duration>) -> Option<Self> {
        max.map(|max| Self {
            max,
            deadline: Instant::now() + max,
        })
    }

    /// The time left, `None` once it is over.
    pub(crate) fn left(&self) -> Option<Duration> {
        Some(self.deadline.saturating_duration_since(Instant::now())).filter(|d| !d.is_zero())
    }

    /// The command's error once the time is over.
    pub(crate) fn error(&self) -> String {
        format!(
            "operation timed out after {} ms (--max-time {:?})",
            self.max.as_millis(),
            self.max
        )
    }
}

/// `--max-time` in a session loop: once the time is over, the loop's end with the command's
/// error (the caller's `finish` then closes the connection).
pub(crate) fn over(max: Option<MaxTime>) -> Option<Result<(), String>> {
    let max = max?;
    max.left().is_none().then(|| Err(max.error()))
}

/// How a client reaches its server (`connect`, `http`), as curl names the options.
#[derive(Args)]
pub(crate) struct NetArgs {
    /// Use these addresses for HOST:PORT instead of resolving it, tried in the order given
    /// (repeatable).
    #[arg(long = "resolve", value_name = "HOST:PORT:ADDR[,ADDR...]", value_parser = parse_resolve)]
    resolve: Vec<tickwire::connect::ResolveEntry>,
    /// Connect from this local address, or through this network interface
    /// (SO_BINDTODEVICE).
    #[arg(long, value_name = "NAME|ADDRESS")]
    interface: Option<String>,
    /// The longest the TCP connect may take, every address tried included: seconds as
    /// curl takes them (2, 0.5) or a duration (500ms).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    connect_timeout: Option<Duration>,
    /// Tunnel through this proxy: http://[USER:PASS@]HOST[:PORT] (HTTP CONNECT),
    /// https:// (HTTP CONNECT over TLS to the proxy) or socks5://, socks5h:// (SOCKS5; h:
    /// the proxy resolves the name). Without it the
    /// environment's proxy is used (https_proxy, http_proxy, all_proxy, no_proxy, as curl
    /// reads them).
    #[arg(short = 'x', long, value_name = "URL", value_parser = parse_proxy)]
    proxy: Option<tickwire::connect::ProxyUrl>,
    /// Hosts --proxy does not apply to: a comma-separated list of names, domain suffixes,
    /// addresses and CIDR blocks, or `*`.
    #[arg(long, value_name = "LIST", requires = "proxy")]
    noproxy: Option<String>,
    /// Trust this CA certificate (PEM) for an https:// proxy, instead of the Mozilla roots.
    #[arg(long, value_name = "FILE")]
    proxy_cacert: Option<std::path::PathBuf>,
    /// Accept any certificate from an https:// proxy (testing only).
    #[arg(long)]
    proxy_insecure: bool,
}

impl NetArgs {
    /// The connect options these flags ask for, and the connect timeout that bounds every
    /// attempt (`None`: the client's default). An unreadable `--proxy-cacert` is an error.
    pub(crate) fn connect(
        &self,
    ) -> Result<(tickwire::connect::ConnectOptions, Option<Duration>), String> {
        let mut options = tickwire::connect::ConnectOptions::new();
        for entry in &self.resolve {
            options = options.with_resolve(entry.clone());
        }
        if let Some(interface) = &self.interface {
            options = match interface.parse::<std::net::IpAddr>() {
                Ok(address) => options.with_local_address(address),
                Err(_) => options.with_device(interface.clone()),
            };
        }
        if let Some(timeout) = self.connect_timeout {
            options = options.with_total_timeout(timeout);
        }
        if let Some(url) = &self.proxy {
            let except = tickwire::connect::NoProxy::parse(self.noproxy.as_deref().unwrap_or(""));
            options = options.with_proxy(tickwire::connect::Proxy::Fixed {
                url: url.clone(),
                except,
            });
        }
        if self.proxy_cacert.is_some() || self.proxy_insecure {
            let mut tls = tickwire::blocking::ClientTlsConfig::builder();
            if let Some(ca) = &self.proxy_cacert {
                tls = tls.add_root_pem_file(ca).map_err(|e| e.to_string())?;
            }
            if self.proxy_insecure {
                tls = tls.dangerous().disable_certificate_verification();
            }
            options = options.with_proxy_tls(tls.build().map_err(|e| e.to_string())?);
        }
        Ok((options, self.connect_timeout))
    }
}

/// `--proxy`: a proxy URL with a scheme this build has a tunnel for.
fn parse_proxy(text: &str) -> Result<tickwire::connect::ProxyUrl, String> {
    tickwire::connect::ProxyUrl::parse(text).map_err(|e| format!("{text:?}: {e}"))
}

/// `--resolve`: curl's `HOST:PORT:ADDR[,ADDR...]`.
fn parse_resolve(text: &str) -> Result<tickwire::connect::ResolveEntry, String> {
    tickwire::connect::ResolveEntry::parse(text).map_err(|e| format!("{text:?}: {e}"))
}

/// Seconds as curl writes them (`2`, `0.5`), or a duration with its unit (`500ms`, `2m`).
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(seconds) => Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("{text:?} is not a number of seconds above zero")),
        Err(_) => exsim::parse_duration(text).and_then(|d| {
            if d.is_zero() {
                Err(format!("{text:?} is not a duration above zero"))
            } else {
                Ok(d)
            }
        }),
    }
}

/// `connect`'s `--proxy`, `--resolve`, `--interface` and `--connect-timeout` on a WebSocket
/// client builder of either runtime, and `--max-time` as the bound of the TCP connect (every
/// attempt) and of the opening handshake (`feed` has its own connect timeout and takes none
/// of these).
pub(crate) fn with_net<T>(
    builder: ClientBuilderOf<T>,
    args: &NetArgs,
    max_time: Option<Duration>,
) -> Result<ClientBuilderOf<T>, String> {
    let (mut connect, timeout) = args.connect()?;
    let mut builder = match timeout {
        Some(timeout) => builder.connect_timeout(Some(timeout)),
        None => builder,
    };
    if let Some(max) = max_time {
        connect.total_timeout = connect.total_timeout.min(max);
        builder = builder.handshake_timeout(max);
    }
    Ok(builder.connect_options(connect))
}
