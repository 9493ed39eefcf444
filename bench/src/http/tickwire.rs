//! tickwire's rows: the REST codec in memory (`RequestWriter` + `ResponseReader`) and the
//! blocking `HttpClient` on loopback.
//!
//! The in-memory adapter does per request what the client does around its socket: release
//! the previous response (`ResponseReader::release`), write the request into the reused
//! `WriteBuf` (cleared after each send), set `expect(Method::Post)`, copy the response into
//! the `ReadBuf` as a read would, and parse it with `ResponseReader::read`.

use std::hint::black_box;
use std::net::SocketAddr;

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::http::{Limits, Method, Parsed, ResponseReader};
use tickwire_codec::rest::RequestWriter;

use super::clients::Blocking;
use super::fixtures::{self, HEADERS, MEMORY_HOST, ORDER, ORDER_JSON, PATH};
use super::memory::InMemory;

/// Row name of the in-memory `.body(..)` adapter.
pub(super) const MEMORY: &str = "tickwire";
/// Row name of the in-memory `.body_with(serde_json::to_writer)` adapter.
pub(super) const MEMORY_SERDE: &str = "tickwire body_with(serde_json)";

/// The in-memory adapter for `library` ([`MEMORY`] or [`MEMORY_SERDE`]).
pub(super) fn memory_codec(library: &str) -> Result<Box<dyn InMemory>, String> {
    let serde = match library {
        MEMORY => false,
        MEMORY_SERDE => true,
        other => return Err(format!("unknown in-memory library {other}")),
    };
    Ok(Box::new(Codec {
        writer: RequestWriter::new(MEMORY_HOST, "").map_err(|e| e.to_string())?,
        wbuf: WriteBuf::new(4 << 10, 0),
        reader: ResponseReader::new(Limits::client()),
        rbuf: ReadBuf::with_capacity(16 << 10),
        response: fixtures::response(),
        serde,
        last: Vec::new(),
    }))
}

struct Codec {
    writer: RequestWriter,
    wbuf: WriteBuf,
    reader: ResponseReader,
    rbuf: ReadBuf,
    response: Vec<u8>,
    serde: bool,
    last: Vec<u8>,
}

impl InMemory for Codec {
    fn round(&mut self) -> usize {
        let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
        self.reader.release(&mut self.rbuf);
        self.wbuf.clear();
        let builder = self
            .writer
            .post(&mut self.wbuf, PATH)
            .and_then(|b| b.header(n0, v0.as_bytes()))
            .and_then(|b| b.header(n1, v1.as_bytes()))
            .and_then(|b| b.header(n2, v2.as_bytes()))
            .and_then(|b| b.header(n3, v3.as_bytes()))
            .expect("tickwire: build the request");
        let written = if self.serde {
            builder
                .body_with(|w| serde_json::to_writer(w, &ORDER))
                .expect("tickwire: serialise the body")
        } else {
            builder.body(ORDER_JSON)
        };
        black_box(self.wbuf.as_slice());
        if self.last.is_empty() {
            self.last = self.wbuf.as_slice().to_vec();
        }

        self.reader.expect(Method::Post);
        self.rbuf.extend_from_slice(&self.response);
        match self.reader.read(&mut self.rbuf) {
            Ok(Parsed::Complete(response)) => {
                fixtures::check(MEMORY, response.status().0, response.body());
            }
            other => panic!("tickwire: no response parsed: {other:?}"),
        }
        written
    }

    fn request_bytes(&self) -> &[u8] {
        &self.last
    }
}

/// Whether tickwire's loopback client can run (always: it is built with the bench).
pub(super) fn available() -> Result<(), String> {
    Ok(())
}

/// tickwire's blocking `HttpClient` over `http://addr`, connected: per request
/// `post(..).header(..)×4.send_body(..)` and the borrowed response's `status()` and `body()`.
/// Default options (TCP_NODELAY on, its default `User-Agent`).
pub(super) struct Client {
    client: tickwire_blocking::HttpClient,
}

/// tickwire's loopback client, connected to `addr`.
pub(super) fn client(addr: SocketAddr) -> Result<Client, String> {
    let mut client = tickwire_blocking::HttpClient::new(&format!("http://{addr}"))
        .map_err(|e| format!("tickwire: client: {e}"))?;
    client
        .connect()
        .map_err(|e| format!("tickwire: connect: {e}"))?;
    Ok(Client { client })
}

impl Blocking for Client {
    fn request(&mut self) {
        let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
        let response = self
            .client
            .post(PATH)
            .header(n0, v0)
            .header(n1, v1)
            .header(n2, v2)
            .header(n3, v3)
            .send_body(ORDER_JSON)
            .expect("tickwire: send");
        fixtures::check(MEMORY, response.status().0, response.body());
    }
}
