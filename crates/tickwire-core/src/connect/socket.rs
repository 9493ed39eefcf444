//! [`SocketOptions`]: what is set on each attempt's socket before it connects, and the one
//! place both transports prepare that socket ([`ConnectOptions::prepare`]).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use socket2::{SockRef, TcpKeepalive};

use super::ConnectOptions;

/// The socket options trading hosts set, applied to every attempt's socket before its
/// connect (so a receive buffer is known when the window scale is offered). Each `None`
/// leaves the system's default. The default sets nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SocketOptions {
    /// `SO_RCVBUF`, in bytes. Linux doubles the value for its bookkeeping, caps it at
    /// `net.core.rmem_max`, and stops autotuning the buffer once it is set.
    pub recv_buffer: Option<usize>,
    /// `SO_SNDBUF`, in bytes (doubled and capped at `net.core.wmem_max` the same way).
    pub send_buffer: Option<usize>,
    /// TCP keepalive probes; `None`: off (the client's own pings keep the connection).
    pub keepalive: Option<Keepalive>,
    /// `SO_BUSY_POLL`, in microseconds: how long a receive on an empty queue spins on the
    /// device's queue before it sleeps (Linux; raising it needs `CAP_NET_ADMIN`, else the
    /// attempt fails as `PermissionDenied`; elsewhere it fails as `Unsupported`).
    pub busy_poll: Option<u32>,
    /// `IP_TOS` (IPv4) or `IPV6_TCLASS` (IPv6): the DSCP in the upper six bits (for
    /// example `0xb8`, Expedited Forwarding). On TCP the kernel keeps the two ECN bits its
    /// own.
    pub tos: Option<u8>,
}

/// TCP keepalive: the first probe after `idle` without traffic, then one every `interval`,
/// the connection dropped after `retries` unanswered probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// `TCP_KEEPIDLE`.
    pub idle: Duration,
    /// `TCP_KEEPINTVL`.
    pub interval: Duration,
    /// `TCP_KEEPCNT`.
    pub retries: u32,
}

impl SocketOptions {
    /// Nothing set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`recv_buffer`](Self::recv_buffer).
    pub fn with_recv_buffer(mut self, bytes: usize) -> Self {
        self.recv_buffer = Some(bytes);
        self
    }

    /// Sets [`send_buffer`](Self::send_buffer).
    pub fn with_send_buffer(mut self, bytes: usize) -> Self {
        self.send_buffer = Some(bytes);
        self
    }

    /// Sets [`keepalive`](Self::keepalive).
    pub fn with_keepalive(mut self, keepalive: Keepalive) -> Self {
        self.keepalive = Some(keepalive);
        self
    }

    /// Sets [`busy_poll`](Self::busy_poll).
    pub fn with_busy_poll(mut self, micros: u32) -> Self {
        self.busy_poll = Some(micros);
        self
    }

    /// Sets [`tos`](Self::tos).
    pub fn with_tos(mut self, tos: u8) -> Self {
        self.tos = Some(tos);
        self
    }

    /// The options above on `socket`, an attempt's socket to `addr`.
    pub fn apply(&self, socket: SockRef<'_>, addr: SocketAddr) -> io::Result<()> {
        if let Some(bytes) = self.recv_buffer {
            socket.set_recv_buffer_size(bytes)?;
        }
        if let Some(bytes) = self.send_buffer {
            socket.set_send_buffer_size(bytes)?;
        }
        if let Some(keepalive) = self.keepalive {
            let params = TcpKeepalive::new()
                .with_time(keepalive.idle)
                .with_interval(keepalive.interval);
            #[cfg(not(any(target_os = "windows", target_os = "openbsd")))]
            let params = params.with_retries(keepalive.retries);
            socket.set_tcp_keepalive(&params)?;
        }
        if let Some(micros) = self.busy_poll {
            busy_poll(&socket, micros)?;
        }
        if let Some(tos) = self.tos {
            if addr.is_ipv6() {
                socket.set_tclass_v6(u32::from(tos))?;
            } else {
                socket.set_tos_v4(u32::from(tos))?;
            }
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn busy_poll(socket: &SockRef<'_>, micros: u32) -> io::Result<()> {
    socket.set_busy_poll(micros)
}

#[cfg(not(target_os = "linux"))]
fn busy_poll(_: &SockRef<'_>, _: u32) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

impl ConnectOptions {
    /// Prepares an attempt's unconnected `socket` to `addr`: bound to the local address (one
    /// of the other family fails the attempt as `AddrNotAvailable`) and to the interface when
    /// set, then the [socket options](Self::socket). Each transport calls this once per
    /// attempt, then connects.
    pub fn prepare(&self, socket: SockRef<'_>, addr: SocketAddr) -> io::Result<()> {
        if let Some(local) = self.local_address {
            if local.is_ipv6() != addr.is_ipv6() {
                return Err(io::ErrorKind::AddrNotAvailable.into());
            }
            socket.bind(&SocketAddr::new(local, 0).into())?;
        }
        if let Some(device) = &self.device {
            bind_device(&socket, device)?;
        }
        self.socket.apply(socket, addr)
    }
}

/// `SO_BINDTODEVICE`: the attempt goes out through `device` only.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn bind_device(socket: &SockRef<'_>, device: &str) -> io::Result<()> {
    socket.bind_device(Some(device.as_bytes()))
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn bind_device(_: &SockRef<'_>, _: &str) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}
