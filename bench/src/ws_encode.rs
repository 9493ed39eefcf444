//! Encode and masking workloads: one 128 B text message framed into a reusable output buffer
//! (server: unmasked; client: masked with a fresh key), and `apply_mask` over 64 B to 4 KiB.
//!
//! Fairness: each library encodes into a buffer it reuses, as its own send path does, and the
//! buffer is emptied after each message (the transport would have written it). Peers that
//! need an owned payload get a zero-copy `Bytes::from_static` (tungstenite) or a borrowed
//! scratch copy (fastwebsockets masks in place, as its `write_frame` does).

use std::hint::black_box;

use crate::Ctx;
use crate::harness::{self, Plan};
use crate::report::{Row, Table};
use crate::wire;

/// Progress steps per round.
pub const STEPS: u64 = 5 * 2 + 3 * MASK_SIZES.len() as u64;

/// Buffer sizes for the masking workloads.
pub const MASK_SIZES: [usize; 5] = [64, 128, 512, 1024, 4096];

/// The libraries that encode, in table order.
/// "tickwire into slice" is the same writer through `FrameWriter::message_into`, encoding into a
/// caller's slice as nexus-web's `encode_text` does; "tickwire" appends to its `WriteBuf`.
pub const LIBRARIES: [&str; 5] = [
    "tickwire",
    "tickwire into slice",
    "nexus-web",
    "tungstenite",
    "fastwebsockets",
];

/// Libraries with a public masking function (tungstenite's is private).
pub const MASKERS: [&str; 3] = ["tickwire", "nexus-web", "fastwebsockets"];

/// Runs the encode and mask workloads selected in `ctx`.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    let mut tables = Vec::new();
    for (id, title, client) in [
        (
            "encode_text_128_server",
            "Encode: 128 B text, server role (unmasked)",
            false,
        ),
        (
            "encode_text_128_client",
            "Encode: 128 B text, client role (masked, fresh key)",
            true,
        ),
    ] {
        if !ctx.selected(id) {
            continue;
        }
        let mut rounds = vec![Vec::new(); LIBRARIES.len()];
        for _ in 0..ctx.rounds {
            for (i, library) in LIBRARIES.iter().enumerate() {
                ctx.step(&format!("{id} / {library}"));
                rounds[i].push(encode(library, client, ctx.plan));
            }
        }
        let mut table = Table::new(
            id,
            title,
            "tickwire",
            "Ticks per message: frame one 128 B text message into the library's reusable output \
             buffer, then empty it.",
        );
        for (library, hists) in LIBRARIES.iter().zip(rounds) {
            table.rows.push(Row::median_round(library, hists));
        }
        tables.push(table);
    }
    for size in MASK_SIZES {
        let id = format!("apply_mask_{size}");
        if !ctx.selected(&id) {
            continue;
        }
        let mut rounds = vec![Vec::new(); MASKERS.len()];
        for _ in 0..ctx.rounds {
            for (i, library) in MASKERS.iter().enumerate() {
                ctx.step(&format!("{id} / {library}"));
                rounds[i].push(mask(library, size, ctx.plan));
            }
        }
        let mut table = Table::new(
            &id,
            &format!("apply_mask: {size} B"),
            "tickwire",
            "Ticks per call: XOR a buffer with a 4-byte key in place (tungstenite's masking \
             function is private and is not listed).",
        );
        for (library, hists) in MASKERS.iter().zip(rounds) {
            table.rows.push(Row::median_round(library, hists));
        }
        tables.push(table);
    }
    tables
}

/// Ticks per encoded message for `library`.
pub fn encode(library: &str, client: bool, plan: Plan) -> hdrhistogram::Histogram<u64> {
    let mut encoder = Encoder::new(library, client);
    let expected = wire::frame(true, 0x1, encoder.payload, None);
    let first = encoder.encode_once();
    assert_eq!(
        first.len(),
        expected.len() + if client { 4 } else { 0 },
        "{library}"
    );
    if !client {
        assert_eq!(first, expected, "{library} encodes differently");
    }
    harness::sample(plan, |_| {
        black_box(encoder.encode());
    })
}

/// Ticks per `apply_mask` call over `size` bytes.
pub fn mask(library: &str, size: usize, plan: Plan) -> hdrhistogram::Histogram<u64> {
    let mut data = wire::json_payload(size);
    let key = wire::MASK_KEY;
    let apply: fn(&mut [u8], [u8; 4]) = match library {
        "tickwire" => |buf, key| tickwire_codec::ws::apply_mask(buf, key, 0),
        "nexus-web" => nexus_web::ws::apply_mask,
        "fastwebsockets" => fastwebsockets::unmask,
        other => panic!("unknown masker {other}"),
    };
    let original = data.clone();
    apply(&mut data, key);
    let reference: Vec<u8> = original
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ key[i % 4])
        .collect();
    assert_eq!(data, reference, "{library} masks wrongly at {size} B");
    harness::sample(plan, |_| {
        apply(black_box(&mut data), key);
    })
}

/// One library's encoder with its reusable output buffer.
pub struct Encoder {
    library: Library,
    client: bool,
    payload: &'static [u8],
    text: &'static str,
    tickwire: tickwire_codec::ws::FrameWriter,
    tickwire_out: tickwire_codec::buf::WriteBuf,
    nexus: nexus_web::ws::FrameWriter,
    bytes: Vec<u8>,
    scratch: Vec<u8>,
    key_counter: u32,
}

impl Encoder {
    /// An encoder of `library` for the client (masked) or server role.
    pub fn new(library: &str, client: bool) -> Self {
        use tickwire_codec::ws::{MaskSource, Role};
        let payload: &'static [u8] = Box::leak(wire::json_payload(128).into_boxed_slice());
        let text = std::str::from_utf8(payload).expect("ASCII payload");
        let (tw_role, nx_role) = if client {
            (Role::Client, nexus_web::ws::Role::Client)
        } else {
            (Role::Server, nexus_web::ws::Role::Server)
        };
        let library = match library {
            "tickwire" => Library::Tickwire,
            "tickwire into slice" => Library::TickwireSlice,
            "nexus-web" => Library::Nexus,
            "tungstenite" => Library::Tungstenite,
            "fastwebsockets" => Library::FastWebSockets,
            other => panic!("unknown library {other}"),
        };
        Self {
            library,
            client,
            payload,
            text,
            tickwire: tickwire_codec::ws::FrameWriter::new(tw_role, MaskSource::random()),
            tickwire_out: tickwire_codec::buf::WriteBuf::new(64 << 10, 14),
            nexus: nexus_web::ws::FrameWriter::new(nx_role),
            bytes: Vec::with_capacity(64 << 10),
            scratch: Vec::with_capacity(256),
            key_counter: 0x9e37_79b9,
        }
    }

    /// Encodes one message and returns its bytes (for checking).
    fn encode_once(&mut self) -> Vec<u8> {
        let n = self.encode_inner();
        match self.library {
            Library::Tickwire => {
                let out = self.tickwire_out.as_slice().to_vec();
                self.tickwire_out.clear();
                out
            }
            _ => self.bytes[..n].to_vec(),
        }
    }

    /// Encodes one message and empties the buffer, as a transport would after writing it.
    #[inline]
    pub fn encode(&mut self) -> usize {
        let n = self.encode_inner();
        if self.library == Library::Tickwire {
            self.tickwire_out.clear();
        }
        n
    }

    #[inline]
    fn encode_inner(&mut self) -> usize {
        match self.library {
            Library::Tickwire => {
                self.tickwire.text(&mut self.tickwire_out, self.text);
                black_box(self.tickwire_out.as_slice()).len()
            }
            Library::TickwireSlice => {
                self.bytes.resize(256, 0);
                let n = self
                    .tickwire
                    .message_into(
                        &mut self.bytes,
                        tickwire_codec::ws::OpCode::Text,
                        self.payload,
                    )
                    .expect("256 bytes hold a 128 B message");
                black_box(&self.bytes[..n]).len()
            }
            Library::Nexus => {
                // Its fastest API: encode into a caller-provided slice.
                self.bytes.resize(256, 0);
                let n = self.nexus.encode_text(self.payload, &mut self.bytes);
                black_box(&self.bytes[..n]).len()
            }
            Library::Tungstenite => {
                use tungstenite::protocol::frame::Frame;
                use tungstenite::protocol::frame::coding::{Data, OpCode};
                self.bytes.clear();
                let mut frame =
                    Frame::message(bytes_static(self.payload), OpCode::Data(Data::Text), true);
                if self.client {
                    // Its key generator is private: a counter stands in, which only makes
                    // tungstenite look faster than it is.
                    self.key_counter = self.key_counter.wrapping_mul(0x2545_f491);
                    frame.header_mut().mask = Some(self.key_counter.to_ne_bytes());
                }
                frame.format(&mut self.bytes).expect("tungstenite format");
                black_box(&self.bytes).len()
            }
            Library::FastWebSockets => {
                use fastwebsockets::{Frame, OpCode, Payload};
                if self.client {
                    // As its write_frame does: mask the payload in place with a random key.
                    self.scratch.clear();
                    self.scratch.extend_from_slice(self.payload);
                    let mut frame = Frame::new(
                        true,
                        OpCode::Text,
                        None,
                        Payload::BorrowedMut(&mut self.scratch),
                    );
                    frame.mask();
                    black_box(frame.write(&mut self.bytes)).len()
                } else {
                    let mut frame = Frame::text(Payload::Borrowed(self.payload));
                    black_box(frame.write(&mut self.bytes)).len()
                }
            }
        }
    }
}

/// The library an [`Encoder`] drives (matched per call, so an enum, not a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Library {
    Tickwire,
    TickwireSlice,
    Nexus,
    Tungstenite,
    FastWebSockets,
}

/// tungstenite takes `Into<Bytes>`; a static slice converts without copying.
fn bytes_static(payload: &'static [u8]) -> tungstenite::Bytes {
    tungstenite::Bytes::from_static(payload)
}
