//! [`ServerBuilder`] and the [`ServerOptions`] it holds.

use std::marker::PhantomData;
use std::time::Duration;

use tickwire_codec::handshake::{self, Request, Response, ServerLimits};
use tickwire_codec::ws::{Config, Limits};
#[cfg(feature = "tls")]
use tickwire_tls::ServerTlsConfig;

/// Everything the server side of a WebSocket connection is opened with, whatever the
/// transport.
///
/// Defaults: [`Config::server`] (1 MiB frames and messages), an 8 KiB request head and 32
/// headers at most, TCP_NODELAY on, a 10 s handshake timeout, no read or write timeout.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// What the opening handshake accepts and the connection's configuration.
    pub handshake: handshake::ServerOptions,
    /// TCP_NODELAY on the accepted socket.
    pub nodelay: bool,
    /// Of reading the upgrade request and writing the response (and the TLS handshake).
    pub handshake_timeout: Duration,
    /// Of one receive; a receive that waits longer returns `Recv::Timeout`.
    pub read_timeout: Option<Duration>,
    /// Of one write to the socket.
    pub write_timeout: Option<Duration>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            handshake: handshake::ServerOptions::default(),
            nodelay: true,
            handshake_timeout: Duration::from_secs(10),
            read_timeout: None,
            write_timeout: None,
        }
    }
}

/// Options for the server side of WebSocket connections, then `accept` for each accepted
/// stream (the builder is not consumed). `T` is the transport's marker; use the transport's
/// alias (`tickwire_blocking::ServerBuilder`, `tickwire_tokio::ServerBuilder`). Defaults:
/// those of [`ServerOptions`].
pub struct ServerBuilder<T> {
    options: ServerOptions,
    transport: PhantomData<fn() -> T>,
}

/// One accepted stream to upgrade: what a transport's [`Accept`] and [`AcceptOver`] are
/// given. The builder fills it; the transport bounds the handshake with
/// `options.handshake_timeout` on its own clock.
#[derive(Debug)]
#[non_exhaustive]
pub struct Upgrade<'a, S, F> {
    /// The builder's options.
    pub options: &'a ServerOptions,
    /// The accepted stream.
    pub stream: S,
    /// The hook that answers the valid upgrade request.
    pub decide: F,
}

impl<'a, S, F> Upgrade<'a, S, F> {
    /// `stream` to upgrade with `options`, `decide` answering.
    pub fn new(options: &'a ServerOptions, stream: S, decide: F) -> Self {
        Self {
            options,
            stream,
            decide,
        }
    }

    /// The stream, and the rest to go [`over`](Upgrade::over) the stream a transport
    /// handshake makes of it.
    pub fn take_stream(self) -> (S, Upgrade<'a, (), F>) {
        (self.stream, Upgrade::new(self.options, (), self.decide))
    }
}

impl<'a, F> Upgrade<'a, (), F> {
    /// The upgrade over `stream`, with the options and the hook of the upgrade the stream
    /// was taken from.
    pub fn over<T>(self, stream: T) -> Upgrade<'a, T, F> {
        Upgrade::new(self.options, stream, self.decide)
    }
}

/// An accepted stream to upgrade after a TLS handshake: what [`AcceptTls`] is given.
#[cfg(feature = "tls")]
#[derive(Debug)]
#[non_exhaustive]
pub struct TlsUpgrade<'a, S, F> {
    /// The stream, the options and the hook, as for a plaintext upgrade.
    pub upgrade: Upgrade<'a, S, F>,
    /// The server's TLS configuration.
    pub tls: &'a ServerTlsConfig,
}

/// A transport that accepts a WebSocket on an accepted stream: it sets the socket options,
/// then reads and validates the upgrade request within the handshake timeout, asks the hook
/// for the response and writes it.
pub trait Accept<'a, S, F> {
    /// The open connection or the error, or a future of them.
    type Output;

    /// The whole server handshake of `upgrade`.
    fn accept(upgrade: Upgrade<'a, S, F>) -> Self::Output;
}

/// A transport that performs the server's opening handshake over a stream whose transport
/// handshake (if any) is done; socket options are the caller's.
pub trait AcceptOver<'a, S, F> {
    /// The open connection or the error, or a future of them.
    type Output;

    /// The upgrade over `upgrade.stream`, within the handshake timeout.
    fn handshake(upgrade: Upgrade<'a, S, F>) -> Self::Output;
}

/// A transport that runs the TLS handshake on an accepted stream, then accepts a WebSocket
/// over it. The handshake timeout bounds both handshakes; a client that fails the TLS
/// handshake gets what `tickwire-tls` owes it (an alert, or an HTTP 400 to a plaintext
/// client).
#[cfg(feature = "tls")]
pub trait AcceptTls<'a, S, F> {
    /// The open connection or the error, or a future of them.
    type Output;

    /// The TLS handshake with `upgrade.tls`, then as [`Accept::accept`].
    fn accept_tls(upgrade: TlsUpgrade<'a, S, F>) -> Self::Output;
}

/// The hook of [`ServerBuilder::accept`]: every valid upgrade request is accepted.
pub type AcceptAll = fn(&Request) -> Response;

impl<T> std::fmt::Debug for ServerBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("options", &self.options)
            .finish()
    }
}

impl<T> Clone for ServerBuilder<T> {
    fn clone(&self) -> Self {
        Self::from_options(self.options.clone())
    }
}

impl<T> Default for ServerBuilder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ServerBuilder<T> {
    /// The defaults of [`ServerOptions`].
    pub fn new() -> Self {
        Self::from_options(ServerOptions::default())
    }

    /// A builder holding `options`.
    pub fn from_options(options: ServerOptions) -> Self {
        Self {
            options,
            transport: PhantomData,
        }
    }

    /// The options set so far.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// Accepts any valid upgrade request on `stream`.
    pub fn accept<'a, S>(&'a self, stream: S) -> <T as Accept<'a, S, AcceptAll>>::Output
    where
        T: Accept<'a, S, AcceptAll>,
    {
        T::accept(self.upgrade(stream, Response::accept))
    }

    /// Reads and validates the upgrade request, then asks `decide` for the response: return
    /// `Response::accept(request)` (optionally with `.subprotocol(..)` and headers) to
    /// upgrade, or `Response::reject(status)` to refuse with that status. A malformed request
    /// is answered with its 4xx status without calling `decide`.
    ///
    /// Bytes the client sent after the request head are kept and parsed as frames only after
    /// the 101 has been written.
    pub fn accept_with<'a, S, F>(&'a self, stream: S, decide: F) -> <T as Accept<'a, S, F>>::Output
    where
        T: Accept<'a, S, F>,
        F: FnOnce(&Request) -> Response + 'a,
    {
        T::accept(self.upgrade(stream, decide))
    }

    /// The upgrade over any stream whose transport handshake (if any) is done, within the
    /// handshake timeout, asking `decide` as [`accept_with`](Self::accept_with) does. Socket
    /// options are the caller's.
    pub fn handshake<'a, S, F>(
        &'a self,
        stream: S,
        decide: F,
    ) -> <T as AcceptOver<'a, S, F>>::Output
    where
        T: AcceptOver<'a, S, F>,
        F: FnOnce(&Request) -> Response + 'a,
    {
        T::handshake(self.upgrade(stream, decide))
    }

    /// Performs the TLS handshake with `tls`, then accepts any valid upgrade request. The
    /// handshake timeout bounds both handshakes. A client that fails the TLS handshake gets
    /// the alert rustls chose; a client that sent plaintext gets an HTTP 400.
    #[cfg(feature = "tls")]
    pub fn accept_tls<'a, S>(
        &'a self,
        stream: S,
        tls: &'a ServerTlsConfig,
    ) -> <T as AcceptTls<'a, S, AcceptAll>>::Output
    where
        T: AcceptTls<'a, S, AcceptAll>,
    {
        self.accept_tls_with(stream, tls, Response::accept)
    }

    /// [`accept_tls`](Self::accept_tls) with an accept hook, as in
    /// [`accept_with`](Self::accept_with).
    #[cfg(feature = "tls")]
    pub fn accept_tls_with<'a, S, F>(
        &'a self,
        stream: S,
        tls: &'a ServerTlsConfig,
        decide: F,
    ) -> <T as AcceptTls<'a, S, F>>::Output
    where
        T: AcceptTls<'a, S, F>,
        F: FnOnce(&Request) -> Response + 'a,
    {
        T::accept_tls(TlsUpgrade {
            upgrade: self.upgrade(stream, decide),
            tls,
        })
    }

    fn upgrade<S, F>(&self, stream: S, decide: F) -> Upgrade<'_, S, F> {
        Upgrade::new(&self.options, stream, decide)
    }

    /// Replaces the whole connection configuration.
    pub fn config(mut self, config: Config) -> Self {
        self.options.handshake.config = config;
        self
    }

    /// Sets the receive limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.options.handshake.config.limits = limits;
        self
    }

    /// Sets the initial read and write buffer sizes.
    pub fn buffer_sizes(mut self, read: usize, write: usize) -> Self {
        self.options.handshake.config.read_buffer_size = read;
        self.options.handshake.config.write_buffer_size = write;
        self
    }

    /// Sets the size up to which the read buffer doubles when a read fills it (a peer sending
    /// faster than it is read): fewer, larger reads. Default 16 KiB (no growth).
    pub fn max_read_buffer(mut self, size: usize) -> Self {
        self.options.handshake.config.max_read_buffer_size = size;
        self
    }

    /// TCP_NODELAY (default on: each frame goes on the wire at once).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.options.nodelay = nodelay;
        self
    }

    /// Read timeout: a receive that waits longer returns `Recv::Timeout`, and the connection
    /// stays usable.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.read_timeout = timeout;
        self
    }

    /// Write timeout for the socket.
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.write_timeout = timeout;
        self
    }

    /// Limits on the upgrade request head.
    pub fn head_limits(mut self, limits: ServerLimits) -> Self {
        self.options.handshake.limits = limits;
        self
    }

    /// Fails connections that send nothing for `timeout`.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.handshake.config.idle_timeout = timeout;
        self
    }

    /// Timeout for reading the upgrade request and writing the response.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.options.handshake_timeout = timeout;
        self
    }

    /// Accepts permessage-deflate (RFC 7692) with `config`: the first valid offer is
    /// answered; invalid offers (duplicate, unknown or out-of-range parameters) are declined,
    /// and a request whose every permessage-deflate offer is invalid gets 400. The message
    /// size limit applies to inflated bytes.
    #[cfg(feature = "deflate")]
    pub fn deflate(mut self, config: tickwire_codec::deflate::DeflateConfig) -> Self {
        self.options.handshake.deflate = Some(config);
        self
    }

    /// Speaks `protocol`: when the accept hook selects no subprotocol, the first one the
    /// client offered (in its order of preference) among those given here is selected.
    pub fn subprotocol(mut self, protocol: impl Into<String>) -> Self {
        self.options.handshake.subprotocols.push(protocol.into());
        self
    }

    /// Adds a header to every 101 (before the hook's own). A name that is not an HTTP token,
    /// or a value with a control byte, fails the handshake with a 500.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.options
            .handshake
            .headers
            .push((name.into(), value.into()));
        self
    }
}
