//! One load-generator connection's state, kept small because there are 19,000 of them: the
//! socket, the send times of the frames in flight (FIFO), the bytes of frames handed out but
//! not yet written, and where the parser stands in the server's frame stream. Also the fixed
//! bytes every connection sends: the upgrade request and the masked client frame.
//!
//! Owns no event loop (that is `generator.rs`) and allocates nothing once a connection is open.

use std::io::{self, Write};

use mio::net::TcpStream;

/// Frames a connection may keep in flight (the suite measures 1 and 8).
pub const MAX_DEPTH: usize = 8;

/// The upgrade request's fixed key, RFC 6455 section 1.3's example, and the
/// Sec-WebSocket-Accept a server must answer it with.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &[u8] = b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// The client frame's fixed masking key (RFC 6455 section 5.3).
const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// FIN set, opcode 0x2 (binary), RFC 6455 section 5.2: the first byte of every frame sent and
/// of every echo expected.
const FIN_BINARY: u8 = 0x82;

/// The upgrade request every connection sends (RFC 6455 section 4.1), offering
/// `extensions` (a `Sec-WebSocket-Extensions` value) when given.
pub fn upgrade_request(host: std::net::SocketAddr, extensions: Option<&str>) -> Vec<u8> {
    let extensions = extensions.map_or(String::new(), |e| {
        format!("Sec-WebSocket-Extensions: {e}\r\n")
    });
    format!(
        "GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n{extensions}\r\n"
    )
    .into_bytes()
}

/// What a complete response head says: Ok(true) for a 101 with the right accept key,
/// Ok(false) when the head is not complete yet, Err (with the status line) for anything else.
pub fn upgrade_response(head: &[u8]) -> Result<bool, String> {
    let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(false);
    };
    let head = &head[..end];
    let status = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let switched = status.starts_with(b"HTTP/1.1 101");
    if switched && head.windows(ACCEPT.len()).any(|w| w == ACCEPT) {
        Ok(true)
    } else {
        Err(format!(
            "the server answered the upgrade with {:?}{}",
            String::from_utf8_lossy(status),
            if switched {
                " and a wrong Sec-WebSocket-Accept"
            } else {
                ""
            }
        ))
    }
}

/// One masked binary client frame of `len` payload bytes (a JSON-ish filler), encoded once.
pub fn client_frame(len: usize) -> Vec<u8> {
    let mut frame = vec![FIN_BINARY];
    // RFC 6455 section 5.2: 7-bit length, or 126 + 16-bit, or 127 + 64-bit; 0x80 is MASK.
    if len < 126 {
        frame.push(0x80 | len as u8);
    } else if len <= 0xffff {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        frame.push(0x80 | 127);
        frame.extend_from_slice(&(len as u64).to_be_bytes());
    }
    frame.extend_from_slice(&MASK);
    let payload = crate::payload::json_payload(len);
    frame.extend(
        payload
            .iter()
            .enumerate()
            .map(|(i, byte)| byte ^ MASK[i % 4]),
    );
    frame
}

/// An open connection under load.
pub struct Connection {
    /// The socket, registered with the generator's `Poll`.
    pub stream: TcpStream,
    in_flight: InFlight,
    /// Bytes of frames handed out (their send time recorded) and not yet written.
    unwritten: usize,
    reader: FrameReader,
    /// Registered for writable events too (only while bytes wait for room in the socket, so
    /// the ACKs of a quiet socket raise no events).
    pub watching_writes: bool,
}

impl Connection {
    /// A connection with nothing in flight.
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            in_flight: InFlight::default(),
            unwritten: 0,
            reader: FrameReader::default(),
            // Connecting needs the writable event; `loadgen` drops it once open.
            watching_writes: true,
        }
    }

    /// Bytes handed out and not yet written.
    pub fn unwritten(&self) -> usize {
        self.unwritten
    }

    /// Frames sent and not yet echoed back.
    pub fn in_flight(&self) -> usize {
        usize::from(self.in_flight.len)
    }

    /// Hands out `count` more frames of `frame_len` bytes sent at `ticks` (written by the next
    /// [`Connection::flush`]).
    pub fn queue(&mut self, count: usize, frame_len: usize, ticks: u64) {
        for _ in 0..count {
            self.in_flight.push(ticks);
        }
        self.unwritten += count * frame_len;
    }

    /// The unwritten bytes, in `frames` (copies of one frame, at least as many as may be in
    /// flight).
    pub fn unwritten_bytes<'f>(&self, frames: &'f [u8], frame_len: usize) -> &'f [u8] {
        // The tail of some frame followed by whole frames: start at the matching offset in
        // the first copy.
        let offset = (frame_len - self.unwritten % frame_len) % frame_len;
        &frames[offset..offset + self.unwritten]
    }

    /// Records `n` of the unwritten bytes written.
    pub fn written(&mut self, n: usize) {
        self.unwritten -= n;
    }

    /// Writes what is unwritten from `frames` (copies of one frame, at least as many as may be
    /// in flight) until done or the socket would block.
    pub fn flush(&mut self, frames: &[u8], frame_len: usize) -> io::Result<()> {
        while self.unwritten > 0 {
            // The unwritten bytes are the tail of some frame followed by whole frames: start
            // at the matching offset in the first copy.
            let offset = (frame_len - self.unwritten % frame_len) % frame_len;
            match self.stream.write(&frames[offset..offset + self.unwritten]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.unwritten -= n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Parses `bytes` from the server; calls `echoed` with the send time of every frame
    /// completed. Err when a frame is not the binary echo of `payload_len` bytes expected.
    pub fn receive(
        &mut self,
        bytes: &[u8],
        payload_len: u64,
        mut echoed: impl FnMut(u64),
    ) -> Result<usize, String> {
        let frames = self.reader.consume(bytes, payload_len)?;
        for _ in 0..frames {
            let sent = self
                .in_flight
                .pop()
                .ok_or("the server sent a frame that was never sent to it")?;
            echoed(sent);
        }
        Ok(frames)
    }
}

/// Send times of the frames in flight, oldest first (echoes come back in order).
#[derive(Default)]
struct InFlight {
    ticks: [u64; MAX_DEPTH],
    head: u8,
    len: u8,
}

impl InFlight {
    fn push(&mut self, ticks: u64) {
        assert!(
            usize::from(self.len) < MAX_DEPTH,
            "more than MAX_DEPTH in flight"
        );
        self.ticks[(usize::from(self.head) + usize::from(self.len)) % MAX_DEPTH] = ticks;
        self.len += 1;
    }

    fn pop(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let ticks = self.ticks[usize::from(self.head)];
        self.head = ((usize::from(self.head) + 1) % MAX_DEPTH) as u8;
        self.len -= 1;
        Some(ticks)
    }
}

/// Where the parser stands in the server's (unmasked) frames: inside a header, or skipping
/// a payload.
#[derive(Default)]
struct FrameReader {
    header: [u8; 10],
    header_len: u8,
    /// Payload bytes still to skip of the frame being read (`in_payload`).
    payload_left: u64,
    in_payload: bool,
}

impl FrameReader {
    /// Consumes `bytes`, returning how many frames were completed. Err for a frame that is not
    /// FIN + binary with exactly `payload_len` bytes, unmasked.
    fn consume(&mut self, mut bytes: &[u8], payload_len: u64) -> Result<usize, String> {
        let mut frames = 0;
        loop {
            if self.in_payload {
                let take = self.payload_left.min(bytes.len() as u64);
                self.payload_left -= take;
                bytes = &bytes[take as usize..];
                if self.payload_left > 0 {
                    return Ok(frames);
                }
                self.in_payload = false;
                frames += 1;
            }
            if bytes.is_empty() {
                return Ok(frames);
            }
            // The header: 2 bytes, then 2 or 8 more for 16- and 64-bit lengths (section 5.2).
            let needed = |header: &[u8], have: usize| match (have, header[1] & 0x7f) {
                (0 | 1, _) => 2,
                (_, 126) => 4,
                (_, 127) => 10,
                _ => 2,
            };
            loop {
                let have = usize::from(self.header_len);
                let need = needed(&self.header, have);
                if have == need {
                    break;
                }
                let Some((&byte, rest)) = bytes.split_first() else {
                    return Ok(frames);
                };
                self.header[have] = byte;
                self.header_len += 1;
                bytes = rest;
            }
            let len = match usize::from(self.header_len) {
                2 => u64::from(self.header[1] & 0x7f),
                4 => u64::from(u16::from_be_bytes([self.header[2], self.header[3]])),
                _ => u64::from_be_bytes(self.header[2..10].try_into().expect("8 bytes")),
            };
            if self.header[0] != FIN_BINARY || self.header[1] & 0x80 != 0 || len != payload_len {
                return Err(format!(
                    "unexpected frame from the server: first bytes {:#04x} {:#04x}, payload {len} B \
                     (expected an unmasked FIN binary frame of {payload_len} B)",
                    self.header[0], self.header[1]
                ));
            }
            self.header_len = 0;
            self.in_payload = true;
            self.payload_left = len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FrameReader, upgrade_response};

    #[test]
    fn frames_split_anywhere_are_counted_once() {
        // Two echoes of 300 B (16-bit length) fed one byte, then 7 bytes, at a time.
        let mut stream = Vec::new();
        for _ in 0..2 {
            stream.extend_from_slice(&[0x82, 126, 0x01, 0x2c]);
            stream.extend_from_slice(&[b'x'; 300]);
        }
        for chunk in [1, 7, stream.len()] {
            let mut reader = FrameReader::default();
            let frames: usize = stream
                .chunks(chunk)
                .map(|c| reader.consume(c, 300).expect("valid echoes"))
                .sum();
            assert_eq!(frames, 2, "chunks of {chunk}");
        }
    }

    #[test]
    fn a_wrong_length_or_opcode_fails_the_point() {
        assert!(FrameReader::default().consume(&[0x82, 15], 16).is_err());
        assert!(FrameReader::default().consume(&[0x81, 16], 16).is_err());
    }

    #[test]
    fn only_a_101_with_the_rfc_accept_key_opens_the_connection() {
        let ok = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                   Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        assert_eq!(upgrade_response(ok), Ok(true));
        assert_eq!(upgrade_response(&ok[..20]), Ok(false));
        assert!(upgrade_response(b"HTTP/1.1 400 Bad Request\r\n\r\n").is_err());
    }
}
