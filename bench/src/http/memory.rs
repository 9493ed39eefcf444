//! The in-memory workload: per operation, build and write the order POST (four per-request
//! headers, the 106 B JSON body) into the library's write buffer, then take the canned 228 B
//! Content-Length response into its read buffer (one copy, as a socket read would) and parse
//! it down to the checked body. No socket: the client-side cost of one REST request.
//!
//! Owns each library's in-memory adapter ([`codec`]) and the table. Every adapter is used
//! through the same `dyn InMemory` call, so each row pays the same indirect call.

use std::hint::black_box;

use super::fixtures::{self, HEADERS, MEMORY_HOST, ORDER, ORDER_JSON, PATH};
use super::raw;
use crate::Ctx;
use crate::harness::{self, Plan};
use crate::report::{Row, Table};

/// The table's id (also the callgrind workload id).
pub(super) const ID: &str = "http_memory";

/// The rows, in table order: tickwire (if its REST codec is built), then its peer, then the
/// floor.
pub(super) const LIBRARIES: [&str; 5] = [
    super::tickwire::MEMORY,
    super::tickwire::MEMORY_SERDE,
    NEXUS,
    NEXUS_SERDE,
    RAW,
];

const NEXUS: &str = "nexus-web";
const NEXUS_SERDE: &str = "nexus-web body_writer(serde_json)";
const RAW: &str = "raw floor (write! + httparse)";

/// One library's request writer and response reader, driven one request at a time.
pub(super) trait InMemory {
    /// Builds and writes one request, then copies in and parses the canned response,
    /// checking its status and body. Returns the request's length (black-boxed by callers).
    fn round(&mut self) -> usize;

    /// The bytes of the last request written (checked once before timing).
    fn request_bytes(&self) -> &[u8];
}

/// The adapter for `library`, verified: one round is run and the request it wrote is parsed
/// and compared (method, target, the four headers, Content-Length, body).
pub(super) fn codec(library: &str) -> Result<Box<dyn InMemory>, String> {
    let mut codec: Box<dyn InMemory> = match library {
        NEXUS => Box::new(NexusWeb::new(false)),
        NEXUS_SERDE => Box::new(NexusWeb::new(true)),
        RAW => Box::new(RawFloor::new()),
        other => super::tickwire::memory_codec(other)?,
    };
    codec.round();
    verify_request(library, codec.request_bytes());
    Ok(codec)
}

/// Panics unless `bytes` is the order POST, whole.
fn verify_request(library: &str, bytes: &[u8]) {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    let head = match request.parse(bytes) {
        Ok(httparse::Status::Complete(head)) => head,
        other => panic!("{library}: the request does not parse: {other:?}"),
    };
    assert_eq!(request.method, Some("POST"), "{library}: method");
    assert_eq!(request.path, Some(PATH), "{library}: target");
    let value = |name: &str| {
        request
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    for (name, expected) in HEADERS {
        assert_eq!(
            value(name),
            Some(expected.as_bytes()),
            "{library}: header {name}"
        );
    }
    assert_eq!(
        value("content-length"),
        Some(ORDER_JSON.len().to_string().as_bytes()),
        "{library}: Content-Length"
    );
    assert_eq!(&bytes[head..], ORDER_JSON, "{library}: body");
}

/// nexus-web 0.8's sans-IO REST codec: `RequestWriter::post(..).header(..)×4` then `.body(..)`
/// (or `.body_writer(serde_json::to_writer)`) and `.finish()` into its own write buffer; the
/// response through `http::ResponseReader::read` (the copy into its buffer), `next()`, and
/// the Content-Length steps its own `rest::Client` takes (`consume_response`,
/// `content_length`, `body_remaining`, `set_body_consumed`, `RestResponse::body`).
struct NexusWeb {
    writer: nexus_web::rest::RequestWriter,
    reader: nexus_web::http::ResponseReader,
    response: Vec<u8>,
    serde: bool,
    last: Vec<u8>,
}

impl NexusWeb {
    fn new(serde: bool) -> Self {
        Self {
            writer: nexus_web::rest::RequestWriter::new(MEMORY_HOST).expect("nexus-web: writer"),
            reader: nexus_web::http::ResponseReader::new(32 << 10),
            response: fixtures::response(),
            serde,
            last: Vec::new(),
        }
    }
}

impl InMemory for NexusWeb {
    fn round(&mut self) -> usize {
        let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
        let builder = self
            .writer
            .post(PATH)
            .header(n0, v0)
            .header(n1, v1)
            .header(n2, v2)
            .header(n3, v3);
        let builder = if self.serde {
            builder.body_writer(|w| serde_json::to_writer(w, &ORDER))
        } else {
            builder.body(ORDER_JSON)
        };
        let request = builder.finish().expect("nexus-web: build the request");
        let written = black_box(request.as_bytes()).len();
        if self.last.is_empty() {
            self.last = request.as_bytes().to_vec();
        }

        let reader = &mut self.reader;
        reader.consume_response();
        reader
            .read(&self.response)
            .expect("nexus-web: buffer the response");
        let status = match reader.next() {
            Ok(Some(response)) => response.status,
            other => panic!("nexus-web: no response parsed: {other:?}"),
        };
        let length = match reader.content_length() {
            Some(Ok(length)) if reader.body_remaining() >= length => length,
            other => panic!("nexus-web: bad Content-Length {other:?}"),
        };
        reader.set_body_consumed(length);
        let response = nexus_web::rest::RestResponse::new(status, length, reader);
        fixtures::check(NEXUS, response.status(), response.body());
        written
    }

    fn request_bytes(&self) -> &[u8] {
        &self.last
    }
}

/// The floor: [`raw::write_request`] into a reused `Vec`, the response copied into a reused
/// buffer and parsed by [`raw::parse_response`].
struct RawFloor {
    request: Vec<u8>,
    buf: Box<[u8]>,
    response: Vec<u8>,
}

impl RawFloor {
    fn new() -> Self {
        Self {
            request: Vec::with_capacity(1024),
            buf: vec![0u8; 16 << 10].into_boxed_slice(),
            response: fixtures::response(),
        }
    }
}

impl InMemory for RawFloor {
    fn round(&mut self) -> usize {
        self.request.clear();
        raw::write_request(&mut self.request, MEMORY_HOST);
        let written = black_box(&self.request).len();
        let len = self.response.len();
        self.buf[..len].copy_from_slice(&self.response);
        let (status, body) =
            raw::parse_response(&self.buf[..len]).expect("raw: the canned response is whole");
        fixtures::check(RAW, status, &self.buf[body]);
        written
    }

    fn request_bytes(&self) -> &[u8] {
        &self.request
    }
}

/// The rows that can run: every library whose adapter builds (tickwire's rows are skipped,
/// with the reason printed, until its REST codec exists).
pub(super) fn available() -> Vec<&'static str> {
    LIBRARIES
        .into_iter()
        .filter(|library| match codec(library) {
            Ok(_) => true,
            Err(why) => {
                eprintln!("http in-memory: {library} skipped: {why}");
                false
            }
        })
        .collect()
}

/// The in-memory table: `ctx.rounds` rounds, libraries interleaved, median round by p50.
pub(super) fn table(ctx: &Ctx, libraries: &[&'static str]) -> Table {
    let mut rounds: Vec<Vec<_>> = vec![Vec::new(); libraries.len()];
    for round in 1..=ctx.rounds {
        for (library, histograms) in libraries.iter().zip(&mut rounds) {
            ctx.step(&format!("{ID} / {library} (round {round}/{})", ctx.rounds));
            histograms.push(measure(library, ctx.plan));
        }
    }
    let note = format!(
        "Per operation: build and write POST {PATH} (Host, the same four headers through each \
         library's per-request header API, Content-Length, the {} B JSON body) into the \
         library's reused write buffer, then copy the canned {} B response (six headers, \
         Content-Length, a {} B JSON body) into its read buffer and parse it to the body, \
         which is compared whole with the expected bytes. body_with / body_writer rows \
         serialise the order with serde_json::to_writer straight into the wire buffer. Each \
         sample is the mean of a batch of {} operations ({} warm-up + {} recorded samples); \
         libraries interleaved in each round; median round by p50. nexus-web's writer adds \
         Connection: keep-alive on its own.",
        ORDER_JSON.len(),
        fixtures::response().len(),
        fixtures::RESPONSE_BODY.len(),
        harness::BATCH,
        ctx.plan.warmup,
        ctx.plan.samples,
    );
    let mut table = Table::new(
        ID,
        "HTTP in memory: build + write a POST with a 106 B JSON body, parse a 228 B JSON response",
        baseline(libraries),
        &note,
    );
    for (library, histograms) in libraries.iter().zip(rounds) {
        table.rows.push(Row::median_round(library, histograms));
    }
    table
}

/// The row ratios divide: tickwire's `.body(..)` row when present, else the floor's.
pub(super) fn baseline(libraries: &[&str]) -> &'static str {
    if libraries.contains(&super::tickwire::MEMORY) {
        super::tickwire::MEMORY
    } else {
        RAW
    }
}

fn measure(library: &str, plan: Plan) -> hdrhistogram::Histogram<u64> {
    let mut codec = codec(library).unwrap_or_else(|e| panic!("{library}: {e}"));
    harness::sample(plan, |_| {
        black_box(codec.round());
    })
}

/// The callgrind target of this workload: the verified adapter, then `iterations` rounds.
pub(super) fn count(library: &str, iterations: u64) -> Result<(), String> {
    let mut codec = codec(library)?;
    for _ in 0..iterations {
        black_box(codec.round());
    }
    Ok(())
}
