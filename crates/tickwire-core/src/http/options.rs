//! The socket and TLS options both HTTP clients apply to each connection
//! ([`HttpSocketOptions`]): one struct, defaulted in one place. Hidden: not API, and only for
//! the two clients. The builder that fills it is in `builder`.

use std::time::Duration;

use tickwire_codec::http::ClientSession;
use tickwire_codec::rest::Origin;

/// The socket and TLS options of an HTTP client, fixed at build time. The defaults are the
/// builders' documented ones: a 10 s connect timeout, 30 s read and write timeouts, a 60 s
/// total deadline per request, TCP_NODELAY on, Mozilla's roots for TLS.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct HttpSocketOptions {
    /// Of the TCP connect per address attempted, and of the TLS handshake.
    pub connect_timeout: Option<Duration>,
    /// How the TCP connection is opened.
    pub connect: crate::connect::ConnectOptions,
    /// Of one wait for response bytes.
    pub read_timeout: Option<Duration>,
    /// Of one wait for the socket to accept request bytes.
    pub write_timeout: Option<Duration>,
    /// The total time of one request (connect, write, whole response); `None`: unbounded.
    pub request_deadline: Option<Duration>,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// The resends the client may make; `None`: every resend the rules allow.
    pub retry_budget: Option<std::sync::Arc<tickwire_codec::http::RetryBudget>>,
    /// For `https://`; `None`: the default configuration.
    #[cfg(feature = "tls")]
    pub tls: Option<crate::ClientTlsConfig>,
}

impl Default for HttpSocketOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Some(Duration::from_secs(10)),
            connect: crate::connect::ConnectOptions::default(),
            read_timeout: Some(Duration::from_secs(30)),
            write_timeout: Some(Duration::from_secs(30)),
            request_deadline: Some(ClientSession::DEFAULT_REQUEST_DEADLINE),
            nodelay: true,
            retry_budget: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl HttpSocketOptions {
    /// A request starts at `now`: it deposits in the retry budget.
    pub fn request_made(&self, now: std::time::Instant) {
        if let Some(budget) = &self.retry_budget {
            budget.deposit(now);
        }
    }

    /// Whether the retry budget allows a resend at `now` (taking it); `true` without one.
    pub fn resend_allowed(&self, now: std::time::Instant) -> bool {
        self.retry_budget
            .as_ref()
            .is_none_or(|budget| budget.try_withdraw(now))
    }

    /// The TCP connection to `origin` under these options, each attempt bounded by
    /// `attempt_timeout` (the connect timeout, or what the request's deadline leaves of it).
    pub fn route<'a>(
        &'a self,
        origin: &'a Origin,
        attempt_timeout: Option<Duration>,
    ) -> crate::connect::Route<'a> {
        crate::connect::Route {
            scheme: if origin.secure { "https" } else { "http" },
            host: &origin.host,
            port: origin.port,
            attempt_timeout,
            nodelay: self.nodelay,
            secure: origin.secure,
            options: &self.connect,
        }
    }

    /// The bound on a TLS handshake: the connect timeout, or the read timeout when there is
    /// none, or 10 s (the request's deadline may shorten it further).
    pub fn tls_handshake_timeout(&self) -> Duration {
        self.connect_timeout
            .or(self.read_timeout)
            .unwrap_or(Duration::from_secs(10))
    }
}
