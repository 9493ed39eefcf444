//! The client side of every loopback workload: one request (the order POST of
//! [`fixtures`]) and its response per call, over one keep-alive connection, for each library.
//!
//! Each client uses the API its documentation shows for a connection kept across requests
//! (an agent, client or sender made once), sets the four headers through its per-request
//! header API with the same strings, sends the same pre-serialised body without copying it
//! where the API allows (`&'static [u8]`, `Bytes::from_static`), and checks every response
//! with [`fixtures::check`] (status 200, the whole body compared). Async clients run on a
//! tokio current-thread runtime on the calling thread. Owns the clients; the timing is in
//! `loopback.rs`, the server in `server.rs`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

use super::fixtures::{self, HEADERS, ORDER_JSON, PATH};
use super::{Client, raw};

/// What a blocking client does per call: one request, its response read whole and checked.
pub(super) trait Blocking {
    /// One request and its checked response.
    fn request(&mut self);
}

/// The raw floor: the request written with `write!` into a reused `Vec`, one `write_all` on
/// a plain `TcpStream`, then reads into a fixed buffer until `httparse` finds the head and the
/// Content-Length body is complete. No library, no validation beyond the check.
pub(super) struct Raw {
    stream: TcpStream,
    host: String,
    request: Vec<u8>,
    buf: Box<[u8]>,
}

impl Raw {
    pub(super) fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("raw: connect");
        stream.set_nodelay(true).expect("raw: TCP_NODELAY");
        Self {
            stream,
            host: addr.to_string(),
            request: Vec::with_capacity(1024),
            buf: vec![0u8; 16 << 10].into_boxed_slice(),
        }
    }
}

impl Blocking for Raw {
    fn request(&mut self) {
        self.request.clear();
        raw::write_request(&mut self.request, &self.host);
        self.stream.write_all(&self.request).expect("raw: write");
        let mut filled = 0;
        loop {
            let n = self
                .stream
                .read(&mut self.buf[filled..])
                .expect("raw: read");
            assert!(n > 0, "raw: the server closed the connection");
            filled += n;
            if let Some((status, body)) = raw::parse_response(&self.buf[..filled]) {
                fixtures::check("raw", status, &self.buf[body]);
                return;
            }
        }
    }
}

/// nexus-web: `RequestWriter::post(..).header(..)×4.body(..).finish()`, then
/// `rest::Client::send` with a `ResponseReader` (its REST API, over a plain `TcpStream` as in
/// its own loopback benchmark).
pub(super) struct NexusWeb {
    conn: nexus_web::rest::Client<TcpStream>,
    writer: nexus_web::rest::RequestWriter,
    reader: nexus_web::http::ResponseReader,
}

impl NexusWeb {
    pub(super) fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("nexus-web: connect");
        stream.set_nodelay(true).expect("nexus-web: TCP_NODELAY");
        Self {
            conn: nexus_web::rest::Client::new(stream),
            writer: nexus_web::rest::RequestWriter::new(&addr.to_string())
                .expect("nexus-web: request writer"),
            reader: nexus_web::http::ResponseReader::new(32 << 10),
        }
    }
}

impl Blocking for NexusWeb {
    fn request(&mut self) {
        let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
        let request = self
            .writer
            .post(PATH)
            .header(n0, v0)
            .header(n1, v1)
            .header(n2, v2)
            .header(n3, v3)
            .body(ORDER_JSON)
            .finish()
            .expect("nexus-web: build the request");
        let response = self
            .conn
            .send(request, &mut self.reader)
            .expect("nexus-web: send");
        fixtures::check("nexus-web", response.status(), response.body());
    }
}

/// ureq 3: an `Agent` (its connection pool), `post(uri).header(..)×4.send(&[u8])`, the body
/// read with `read_to_end` into a reused `Vec`. The URI is parsed once and cloned per
/// request; HTTP status errors off so the check sees the status.
pub(super) struct Ureq {
    agent: ureq::Agent,
    uri: ureq::http::Uri,
    body: Vec<u8>,
}

impl Ureq {
    pub(super) fn connect(addr: SocketAddr) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .proxy(None)
            .no_delay(true)
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            agent,
            uri: format!("http://{addr}{PATH}").parse().expect("ureq: URI"),
            body: Vec::with_capacity(1024),
        }
    }
}

impl Blocking for Ureq {
    fn request(&mut self) {
        let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
        let mut response = self
            .agent
            .post(self.uri.clone())
            .header(n0, v0)
            .header(n1, v1)
            .header(n2, v2)
            .header(n3, v3)
            .send(ORDER_JSON)
            .expect("ureq: send");
        self.body.clear();
        response
            .body_mut()
            .as_reader()
            .read_to_end(&mut self.body)
            .expect("ureq: read the body");
        fixtures::check("ureq", response.status().as_u16(), &self.body);
    }
}

/// reqwest's blocking client: `post(url).header(..)×4.body(&'static [u8]).send()` then
/// `bytes()`. It drives an async client on a runtime thread of its own (spawned here, so it
/// inherits the calling thread's core).
pub(super) struct ReqwestBlocking {
    client: reqwest::blocking::Client,
    url: reqwest::Url,
}

impl ReqwestBlocking {
    pub(super) fn connect(addr: SocketAddr) -> Self {
        let client = reqwest::blocking::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .build()
            .expect("reqwest blocking: client");
        Self {
            client,
            url: reqwest::Url::parse(&format!("http://{addr}{PATH}")).expect("reqwest: URL"),
        }
    }
}

impl Blocking for ReqwestBlocking {
    fn request(&mut self) {
        let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
        let response = self
            .client
            .post(self.url.clone())
            .header(n0, v0)
            .header(n1, v1)
            .header(n2, v2)
            .header(n3, v3)
            .body(ORDER_JSON)
            .send()
            .expect("reqwest blocking: send");
        let status = response.status().as_u16();
        let body = response.bytes().expect("reqwest blocking: body");
        fixtures::check(Client::ReqwestBlocking.name(), status, &body);
    }
}

/// reqwest (async): `post(url).header(..)×4.body(&'static [u8]).send().await` then
/// `bytes().await`, inside the caller's `block_on` on a current-thread runtime. Clones share
/// the client's connection pool (the tokio suite's concurrent requests: one clone per task).
#[derive(Clone)]
pub(crate) struct Reqwest {
    client: reqwest::Client,
    url: reqwest::Url,
}

impl Reqwest {
    pub(crate) fn connect(addr: SocketAddr) -> Self {
        let client = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .build()
            .expect("reqwest: client");
        Self {
            client,
            url: reqwest::Url::parse(&format!("http://{addr}{PATH}")).expect("reqwest: URL"),
        }
    }

    pub(crate) async fn request(&mut self) {
        let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
        let response = self
            .client
            .post(self.url.clone())
            .header(n0, v0)
            .header(n1, v1)
            .header(n2, v2)
            .header(n3, v3)
            .body(ORDER_JSON)
            .send()
            .await
            .expect("reqwest: send");
        let status = response.status().as_u16();
        let body = response.bytes().await.expect("reqwest: body");
        fixtures::check("reqwest", status, &body);
    }
}

/// hyper 1.x's low-level client, `client::conn::http1`: one handshake, its connection task
/// spawned on the runtime, then per request `ready().await`, an `http::Request` built with
/// `header(..)` (Host and the four) and a `Full<Bytes>` body over the static bytes,
/// `send_request(..).await` and the body collected with http-body-util.
pub(super) struct Hyper {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: ::http::HeaderValue,
}

impl Hyper {
    pub(super) async fn connect(addr: SocketAddr) -> Self {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("hyper: connect");
        stream.set_nodelay(true).expect("hyper: TCP_NODELAY");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("hyper: handshake");
        tokio::spawn(connection);
        Self {
            sender,
            host: ::http::HeaderValue::from_str(&addr.to_string()).expect("hyper: Host value"),
        }
    }

    pub(super) async fn request(&mut self) {
        let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
        self.sender.ready().await.expect("hyper: connection ready");
        let request = ::http::Request::post(PATH)
            .header(::http::header::HOST, self.host.clone())
            .header(n0, v0)
            .header(n1, v1)
            .header(n2, v2)
            .header(n3, v3)
            .body(Full::new(Bytes::from_static(ORDER_JSON)))
            .expect("hyper: build the request");
        let response = self
            .sender
            .send_request(request)
            .await
            .expect("hyper: send");
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("hyper: body")
            .to_bytes();
        fixtures::check("hyper", status, &body);
    }
}

/// A tokio runtime on the calling thread (the async clients' runtime): IO and timers on, no
/// worker threads.
pub(super) fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio current-thread runtime")
}
