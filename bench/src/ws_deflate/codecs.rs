//! The four ways a message is compressed and inflated here: tickwire's frame writer and reader
//! with its permessage-deflate extension, and raw flate2 as the floor, each with context
//! takeover (the default) or without.
//!
//! Owns the setup of each side (built exactly alike for the timed run and for callgrind) and
//! one operation of each. It does not check results (the caller compares them with the
//! originals) and does not time anything.

use std::hint::black_box;

use flate2::{Compress, Decompress, FlushCompress, FlushDecompress};
use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::deflate::{DeflateConfig, DeflateParams, PerMessageDeflate};
use tickwire_codec::ws::{FrameReader, FrameWriter, Limits, MaskSource, Message, OpCode, Role};

/// The bytes a sync flush ends with, which permessage-deflate removes from the wire and the
/// receiver appends again (RFC 7692 §7.2.1).
pub const SYNC_TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// One compressor/decompressor under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// tickwire's writer and reader, context takeover (the default).
    Tickwire,
    /// flate2 alone, context takeover.
    Flate2,
    /// tickwire with `server_no_context_takeover` and `client_no_context_takeover`
    /// negotiated: the compressor and the inflater reset after every message.
    TickwireNoContext,
    /// flate2 alone, reset after every message.
    Flate2NoContext,
}

impl Variant {
    /// Table order: each tickwire row above its floor.
    pub const ALL: [Self; 4] = [
        Self::Tickwire,
        Self::Flate2,
        Self::TickwireNoContext,
        Self::Flate2NoContext,
    ];

    /// The row labels, in [`Variant::ALL`] order (also the callgrind library names).
    pub const NAMES: [&'static str; 4] = [
        "tickwire",
        "flate2 raw",
        "tickwire no_context_takeover",
        "flate2 raw no_context_takeover",
    ];

    /// The row label.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The variant labelled `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// True when the compression context carries over from one message to the next.
    pub fn takeover(self) -> bool {
        matches!(self, Self::Tickwire | Self::Flate2)
    }

    /// True for the rows that go through tickwire.
    pub fn is_tickwire(self) -> bool {
        matches!(self, Self::Tickwire | Self::TickwireNoContext)
    }

    /// tickwire's permessage-deflate for an endpoint in `role`, in this variant's context
    /// mode, 15-bit windows.
    fn extension(self, role: Role) -> PerMessageDeflate {
        let reset = !self.takeover();
        let params = DeflateParams {
            server_no_context_takeover: reset,
            client_no_context_takeover: reset,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
        };
        PerMessageDeflate::new(role, &params, &DeflateConfig::default())
    }
}

/// The compression level tickwire uses by default, which the floor uses too.
fn level() -> flate2::Compression {
    flate2::Compression::new(DeflateConfig::default().level.into())
}

/// Compresses `messages` in turn, cycling, as one stream.
pub struct Compressor<'a> {
    messages: &'a [Vec<u8>],
    next: usize,
    side: Deflater,
}

enum Deflater {
    /// The server's writer with the extension; the buffer is emptied after each message.
    Tickwire { writer: FrameWriter, out: WriteBuf },
    /// One `compress_vec` with a sync flush into a reused buffer, reset per message or not.
    Flate2 {
        deflate: Compress,
        out: Vec<u8>,
        reset: bool,
    },
}

impl<'a> Compressor<'a> {
    /// A compressor that has not compressed anything yet.
    pub fn fresh(variant: Variant, messages: &'a [Vec<u8>]) -> Self {
        let longest = messages.iter().map(Vec::len).max().unwrap_or(0);
        let side = if variant.is_tickwire() {
            let mut writer = FrameWriter::new(Role::Server, MaskSource::random());
            // Messages flow server to client, as market data does: the server compresses.
            let (_, encoder) = variant.extension(Role::Server).into_parts();
            writer.set_extension(Box::new(encoder));
            Deflater::Tickwire {
                writer,
                out: WriteBuf::new(64 << 10, 14),
            }
        } else {
            // 15-bit window, as tickwire negotiates by default.
            Deflater::Flate2 {
                deflate: Compress::new_with_window_bits(level(), false, 15),
                // Room for deflate's worst case, so one call always finishes the flush.
                out: Vec::with_capacity(2 * longest + 64),
                reset: !variant.takeover(),
            }
        };
        Self {
            messages,
            next: 0,
            side,
        }
    }

    /// A compressor that has compressed every message once: the steady state of a stream
    /// of similar messages, its state allocated and its window full.
    pub fn primed(variant: Variant, messages: &'a [Vec<u8>]) -> Self {
        let mut compressor = Self::fresh(variant, messages);
        for _ in messages {
            compressor.compress();
        }
        compressor
    }

    /// Compresses the next message, then empties the output as a transport would once it
    /// wrote it; returns the output's length.
    #[inline]
    pub fn compress(&mut self) -> usize {
        let len = black_box(self.compress_next()).len();
        self.clear_output();
        len
    }

    /// Compresses the next message and returns a copy of the output: a whole frame for
    /// tickwire, the deflate data with its sync-flush tail for flate2.
    pub fn compress_to_vec(&mut self) -> Vec<u8> {
        let bytes = self.compress_next().to_vec();
        self.clear_output();
        bytes
    }

    #[inline]
    fn clear_output(&mut self) {
        match &mut self.side {
            Deflater::Tickwire { out, .. } => out.clear(),
            Deflater::Flate2 { out, .. } => out.clear(),
        }
    }

    #[inline]
    fn compress_next(&mut self) -> &[u8] {
        let payload = &self.messages[self.next];
        self.next = (self.next + 1) % self.messages.len();
        match &mut self.side {
            Deflater::Tickwire { writer, out } => {
                // The Auto policy every send uses (the caller checks each frame came out
                // compressed); text, as market data is.
                writer.message(out, OpCode::Text, payload);
                out.as_slice()
            }
            Deflater::Flate2 {
                deflate,
                out,
                reset,
            } => {
                let before = deflate.total_in();
                let status = deflate.compress_vec(payload, out, FlushCompress::Sync);
                // All input taken and room left over: the flush is complete.
                assert!(
                    status.is_ok()
                        && deflate.total_in() - before == payload.len() as u64
                        && out.len() < out.capacity(),
                    "flate2: compress_vec did not finish the message"
                );
                if *reset {
                    deflate.reset();
                }
                out.as_slice()
            }
        }
    }
}

/// Inflates a recorded stream in turn, cycling.
pub struct Decompressor {
    inputs: Vec<Vec<u8>>,
    next: usize,
    side: Inflater,
}

enum Inflater {
    /// The client's reader with the extension: each message's frame arrives in one read.
    Tickwire(FrameReader, ReadBuf),
    /// One `decompress_vec` of the deflate data, tail included, into a reused buffer.
    Flate2 {
        inflate: Decompress,
        out: Vec<u8>,
        reset: bool,
    },
}

impl Decompressor {
    /// A decompressor of `variant` that has inflated `prime` (the first pass of the
    /// stream, returned so the caller can check it) and will then cycle over `steady`
    /// (the second pass). Cycling is valid: a message of the second pass refers back at
    /// most one window, which the cycle refills with the same messages.
    pub fn new(variant: Variant, prime: &[Vec<u8>], steady: Vec<Vec<u8>>) -> (Self, Vec<Vec<u8>>) {
        let side = if variant.is_tickwire() {
            let mut reader = FrameReader::new(Role::Client, Limits::client());
            let (decoder, _) = variant.extension(Role::Client).into_parts();
            reader.set_extension(Box::new(decoder));
            Inflater::Tickwire(reader, ReadBuf::with_capacity(64 << 10))
        } else {
            Inflater::Flate2 {
                inflate: Decompress::new(false),
                // Inflated messages are never over 64 KiB here, so one call always finishes.
                // The room matters beyond that: zlib-rs runs its fast loop only while 260 B
                // of output room are left, so a buffer sized to the message would slow the
                // floor down on its last bytes.
                out: Vec::with_capacity(64 << 10),
                reset: !variant.takeover(),
            }
        };
        let mut decompressor = Self {
            inputs: prime.to_vec(),
            next: 0,
            side,
        };
        let primed = prime
            .iter()
            .map(|_| decompressor.next_message().to_vec())
            .collect();
        decompressor.inputs = steady;
        decompressor.next = 0;
        (decompressor, primed)
    }

    /// Inflates the next message; returns its length.
    #[inline]
    pub fn decompress(&mut self) -> usize {
        black_box(self.next_message()).len()
    }

    /// Inflates the next message and returns it.
    pub fn next_message(&mut self) -> &[u8] {
        let input = &self.inputs[self.next];
        self.next = (self.next + 1) % self.inputs.len();
        match &mut self.side {
            Inflater::Tickwire(reader, buf) => {
                // The transport's path: read into spare(), then advance and take the message,
                // as `Connection` does. Not `poll`: a second caller of it in this binary makes
                // the compiler stop inlining it into `ws_parse`, which would move the parse
                // tables (~27 instructions per message).
                reader.spare(buf)[..input.len()].copy_from_slice(input);
                buf.filled(input.len());
                match reader
                    .advance(buf)
                    .map(|ready| ready.then(|| reader.message(buf)))
                {
                    Ok(Some(Ok(Message::Text(text)))) => text.as_bytes(),
                    other => panic!("tickwire: expected an inflated text message, got {other:?}"),
                }
            }
            Inflater::Flate2 {
                inflate,
                out,
                reset,
            } => {
                out.clear();
                let before = inflate.total_in();
                let status = inflate.decompress_vec(input, out, FlushDecompress::Sync);
                assert!(
                    status.is_ok() && inflate.total_in() - before == input.len() as u64,
                    "flate2: decompress_vec did not take the whole message"
                );
                if *reset {
                    inflate.reset(false);
                }
                out.as_slice()
            }
        }
    }
}
