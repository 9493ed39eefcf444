//! The connect path, sans-IO: which address to try next and when ([`ConnectPlan`], Happy
//! Eyeballs v2, RFC 8305), fixed addresses for a host ([`ResolveEntry`], curl's
//! `--resolve`), the proxy handshakes as byte state machines ([`HttpConnect`], [`Socks5`])
//! and the proxy a URL takes from the environment the way curl reads it ([`proxy_from_env`]).
//!
//! This module owns those decisions and nothing else: it opens no socket, resolves no name,
//! reads no clock and no environment variable (the variables come in through a lookup
//! closure). A driver (the blocking or the tokio transport) resolves the host, hands the
//! addresses to a [`ConnectPlan`], starts and closes the sockets the plan's [`Action`]s name,
//! reports each outcome back with the time, and then, through a proxy, shuttles the
//! handshake's bytes until it says the tunnel is up.
//!
//! A driver's loop, here with the sockets' outcomes made up and time passed in:
//!
//! ```
//! use std::time::Instant;
//! use tickwire_codec::connect::{Action, ConnectConfig, ConnectPlan, Reason};
//!
//! let addrs = ["[2001:db8::1]:443".parse()?, "192.0.2.1:443".parse()?];
//! let mut now = Instant::now();
//! let mut plan = ConnectPlan::new(&addrs, ConnectConfig::new(), now);
//! let mut connected = None;
//! while connected.is_none() {
//!     while let Some(action) = plan.poll_action(now) {
//!         match action {
//!             // A real driver starts a non-blocking connect here, and closes the socket
//!             // on `Abandon`.
//!             Action::Attempt { id, addr } if addr.is_ipv6() => {
//!                 plan.on_failed(id, Reason::Unreachable, now)
//!             }
//!             Action::Attempt { id, .. } => plan.on_connected(id, now),
//!             Action::Abandon { .. } => {}
//!             Action::Connected { addr, .. } => connected = Some(addr),
//!             Action::Failed(error) => return Err(error.into()),
//!             _ => {}
//!         }
//!     }
//!     // A real driver waits for a socket outcome or until this deadline.
//!     if let Some(deadline) = plan.poll_timeout() {
//!         now = deadline;
//!         plan.handle_timeout(now);
//!     }
//! }
//! assert_eq!(connected, Some(addrs[1]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod env;
mod http_connect;
mod plan;
mod proxy;
mod resolve;
mod socks5;

pub use env::{NoProxy, ProxyKind, ProxyUrl, ProxyUrlError, proxy_from_env};
pub use http_connect::{DEFAULT_MAX_HEAD_BYTES, HttpConnect, HttpProxyError};
pub use plan::{Action, AttemptId, ConnectConfig, ConnectError, ConnectPlan, Reason};
pub use proxy::{Credentials, Progress, Target};
pub use resolve::{ResolveEntry, ResolveError, interleave};
pub use socks5::{BoundAddr, ReplyCode, Socks5, Socks5Error};

#[cfg(test)]
mod env_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod proxy_tests;
