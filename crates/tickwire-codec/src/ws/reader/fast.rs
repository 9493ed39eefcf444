//! The reader's fast paths: a whole plain frame at the front of the buffer, and a plain frame
//! that arrives over several reads. Both only shorten the way to the verdict the general path
//! (`step` in the parent module) would reach from the same bytes and state.

use super::{FrameReader, Partial, Step};
use crate::buf::ReadBuf;
use crate::ws::limits::LimitsSource;
use crate::ws::{OpCode, Role, mask};

/// What [`FrameReader::partial_rest`] did.
pub(super) enum Quick {
    /// A message is ready (in `ready`).
    Ready,
    /// The frame is still arriving; its state is saved.
    NeedMore,
    /// Not its case: the general path decides.
    General,
}

impl<L: LimitsSource> FrameReader<L> {
    /// The hot path: a final data frame with RSV clear, no fragmented message in progress, a
    /// short or 16-bit length (minimal), masked as the role requires and within the limits:
    /// whole, or (unmasked) still arriving, which [`partial_rest`](Self::partial_rest) takes
    /// and may answer [`Step::NeedMore`]. Anything else (including every error) returns
    /// `None` and takes the general path, which parses from the same bytes and state, so the
    /// two paths cannot disagree on a verdict, only on speed. Measured with
    /// `tickwire-bench ws --callgrind` (docs/BENCHMARKS.md).
    #[inline(always)]
    pub(super) fn complete_single_frame(&mut self, buf: &mut ReadBuf) -> Option<Step> {
        if self.partial.is_some() || self.message.is_some() {
            return None;
        }
        let data = buf.data();
        let [b0, b1, ..] = *data else { return None };
        // 0x81 / 0x82: FIN, RSV 000, Text or Binary (§5.2).
        let opcode = match b0 {
            0x81 => OpCode::Text,
            0x82 => OpCode::Binary,
            _ => return None,
        };
        let masked = b1 & 0x80 != 0;
        if masked != (self.role == Role::Server) {
            return None;
        }
        let (len, mut start) = match b1 & 0x7f {
            0x7f => return None,
            0x7e => {
                let [_, _, hi, lo, ..] = *data else {
                    return None;
                };
                let len = usize::from(u16::from_be_bytes([hi, lo]));
                if len < 0x7e {
                    return None;
                }
                (len, 4)
            }
            short => (usize::from(short), 2),
        };
        if len > self.config.limits().max_frame_size || len > self.config.limits().max_message_size
        {
            return None;
        }
        let key_at = start;
        if masked {
            start += 4;
        }
        let total = start + len;
        if data.len() < total {
            return None;
        }
        if masked {
            let data = buf.data_mut();
            let key = [
                data[key_at],
                data[key_at + 1],
                data[key_at + 2],
                data[key_at + 3],
            ];
            mask::apply_mask(&mut data[start..total], key, 0);
        }
        self.pending_consume = total;
        Some(Step::Frame {
            opcode,
            start: start as u8,
            len,
        })
    }

    /// The general path's shortcut for a frame that arrives over several reads, outside a
    /// fragmented message: a plain unmasked final Text or Binary frame (the saved partial
    /// frame, or the one starting the buffer). The text that has arrived is validated now, so
    /// invalid UTF-8 fails before the frame completes (as `process_partial` does), and room
    /// is reserved for the rest; once whole, it is returned as `step_frame` would. A stream
    /// read in pieces pays this once per read, so it skips `step`'s loop and state. On
    /// anything else, and on invalid text, it returns `None` with the state untouched and
    /// `step` decides, so the two cannot disagree on a verdict.
    #[inline(never)]
    pub(super) fn partial_rest(&mut self, buf: &mut ReadBuf) -> Quick {
        if self.message.is_some() {
            return Quick::General;
        }
        let Partial { header, processed } = match self.partial {
            Some(partial) => partial,
            None => match self.parse_header(buf.data()) {
                Ok(Some(header)) => Partial {
                    header,
                    processed: 0,
                },
                _ => return Quick::General,
            },
        };
        if !(header.fin
            && header.rsv == 0
            && header.mask.is_none()
            && matches!(header.opcode, OpCode::Text | OpCode::Binary))
        {
            return Quick::General;
        }
        let start = usize::from(header.header_len);
        let total = start + header.payload_len;
        let data = buf.data();
        if data.len() >= total {
            self.partial = None;
            if processed > 0 {
                // The prefix was checked incrementally; the whole payload is validated again
                // when the &str is made, so the stream state is no longer needed.
                self.utf8.reset();
            }
            self.pending_consume = total;
            self.ready = Some(Step::Frame {
                opcode: header.opcode,
                start: header.header_len,
                len: header.payload_len,
            });
            return Quick::Ready;
        }
        let arrived = data.len().saturating_sub(start);
        let mut done = processed;
        if header.opcode == OpCode::Text && arrived > processed {
            let before = self.utf8.clone();
            if self
                .utf8
                .feed(&data[start + processed..start + arrived])
                .is_err()
            {
                self.utf8 = before;
                return Quick::General;
            }
            done = arrived;
        }
        self.partial = Some(Partial {
            header,
            processed: done,
        });
        buf.reserve(total - data.len());
        Quick::NeedMore
    }
}
