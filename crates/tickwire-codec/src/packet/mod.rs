//! The binary packet codec: length-prefixed packets for service-to-service links, each with a
//! request id and, chosen per packet, LZ4 or Zstd compression.
//!
//! This module owns the wire format (below, and byte by byte in docs/PACKET.md), the
//! [`PacketReader`] that parses it from a [`ReadBuf`](crate::buf::ReadBuf) with every limit
//! checked as soon as the header shows it, the [`PacketWriter`] that encodes straight into a
//! [`WriteBuf`](crate::buf::WriteBuf), and the [`CompressionPolicy`] that decides per packet
//! whether to compress; [`Session`], one connection's rules above the framing for both
//! roles (its buffers, the [`Control`] packets on request id 0, keepalive timers), which
//! every packet transport drives, with the [`LinkTimers`] (read and write timeouts, and
//! which timer counts first) it waits on; and the [`ClientCore`] and [`ServerCore`] that
//! decide, for every transport, what arrives for which request (gluing a session to
//! [`mux`](crate::mux)), and the [`Reply`] rules of answering one. It does not own the
//! request bookkeeping itself (matching responses to request ids, in-flight caps, timeouts:
//! `mux`), any I/O, or the decompressors themselves (the
//! [`compress`](crate::compress) module, shared with deflate).
//!
//! # Wire format, version 1
//!
//! Every integer is little-endian: both ends are x86-64 or AArch64 in practice, where a
//! little-endian load is a plain `mov`/`ldr`. A packet is a header of 16 to 28 bytes, whose
//! length is known from its fourth byte, then the wire payload:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | magic `0x54 0x57` (`"TW"`) |
//! | 2 | 1 | version, `0x01` |
//! | 3 | 1 | flags: bits 0-1 codec (`00` none, `01` LZ4 block, `10` Zstd frame, `11` Zstd frame with a shared dictionary); bit 2 a checksum follows; bits 3-7 reserved, zero |
//! | 4 | 4 | wire length: payload bytes after the header |
//! | 8 | 8 | request id (0 where the link does not multiplex) |
//! | 16 | 4 | uncompressed length (compressed packets only) |
//! | +0 | 4 | dictionary id (codec `11` only) |
//! | +0 | 4 | CRC-32C of every header byte before it and of the wire payload (checksum flag only) |
//!
//! The request id is always present: one fixed 16-byte prefix keeps every field at a fixed
//! offset (no branch before the length is known), needs no negotiation of "multiplexed or
//! not", and costs 8 bytes, which the smallest useful packet (a 64-byte order) can afford.
//!
//! # Errors
//!
//! Every malformed header has its own [`PacketError`] variant, raised as soon as the bytes
//! that show it arrive; a transport closes the connection on any of them (see [`error`]'s
//! docs). Decoding the same bytes gives the same packets and the same error however they
//! were split across reads.

mod client_core;
mod config;
mod control;
pub mod error;
mod header;
mod reader;
mod server_core;
pub mod session;
mod timers;
mod writer;

#[cfg(test)]
mod core_tests;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod tests;

pub use client_core::{ClientCore, ClientFailure, InFlight, Incoming};
pub use config::{Compression, CompressionPolicy, PROBE_FROM, PROBE_LEN, PacketConfig};
pub use control::{CONTROL_LEN, Control};
pub use error::{EncodeError, Fault, PacketError};
pub use header::{BASE_HEADER_LEN, Codec, Header, MAGIC, MAX_HEADER_LEN, VERSION};
pub use reader::{Packet, PacketReader, ReadEvent};
pub use server_core::{Reply, ReplyError, ServerCore, ServerFailure, ServerStep};
pub use session::{Keepalive, Session, SessionBuffers, SessionError, SessionEvent};
pub use timers::{Expiry, LinkTimers};
pub use writer::PacketWriter;
