//! What a worker remembers of one connection between wake-ups besides its codec state: a few
//! named flags and how the connection is ending.
//!
//! It owns the meaning of each flag and the rule that the first recorded end wins. It does
//! not decide when a flag is set or cleared: the connection's phases (`peer`, `serving`) and
//! the worker do.

use tickwire_codec::ws::CloseCode;

use crate::handler::DisconnectKind;

/// A connection's flags, in one byte (the slot stays at the codec state + 24 bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Flags(u8);

impl Flags {
    /// Reads pause: more than the backpressure limit is queued.
    const READ_PAUSED: u8 = 1;
    /// Output waited for the socket: `on_writable` is owed once it drains.
    const WRITE_WAITING: u8 = 2;
    /// A callback panicked: no more callbacks but `on_close`.
    const PANICKED: u8 = 4;
    /// See [`Flags::lingering`].
    const LINGERING: u8 = 8;
    /// See [`Flags::batched`].
    const BATCHED: u8 = 16;

    /// No flag is set.
    pub(super) fn is_clear(self) -> bool {
        self.0 == 0
    }

    /// Reads pause: more than the backpressure limit is queued.
    pub(super) fn read_paused(self) -> bool {
        self.has(Self::READ_PAUSED)
    }

    pub(super) fn set_read_paused(&mut self, on: bool) {
        self.set(Self::READ_PAUSED, on);
    }

    /// Output waited for the socket: `on_writable` is owed once it drains.
    pub(super) fn write_waiting(self) -> bool {
        self.has(Self::WRITE_WAITING)
    }

    pub(super) fn set_write_waiting(&mut self, on: bool) {
        self.set(Self::WRITE_WAITING, on);
    }

    /// A callback panicked: no more callbacks but `on_close`.
    pub(super) fn panicked(self) -> bool {
        self.has(Self::PANICKED)
    }

    pub(super) fn set_panicked(&mut self) {
        self.set(Self::PANICKED, true);
    }

    /// The connection failed and its close frame (or the refusal of its upgrade request) is
    /// written: the write side is shut and what the peer still sends is read and dropped
    /// until it closes or the close timeout passes, so that closing the socket with unread
    /// bytes (which sends a reset, and can destroy that last answer in the peer's receive
    /// queue) does not happen.
    pub(super) fn lingering(self) -> bool {
        self.has(Self::LINGERING)
    }

    pub(super) fn set_lingering(&mut self) {
        self.set(Self::LINGERING, true);
    }

    /// The connection's last output was copied into the worker's batch of replies
    /// (`replies`) and recorded written; the batch goes before anything else is queued on
    /// the connection or written to it.
    pub(super) fn batched(self) -> bool {
        self.has(Self::BATCHED)
    }

    pub(super) fn set_batched(&mut self, on: bool) {
        self.set(Self::BATCHED, on);
    }

    fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    fn set(&mut self, flag: u8, on: bool) {
        if on {
            self.0 |= flag;
        } else {
            self.0 &= !flag;
        }
    }
}

/// How a connection is ending, recorded when it is known (the socket may close later, once
/// what is owed is written).
#[derive(Debug, Clone, Copy)]
pub(super) struct End {
    pub(super) kind: DisconnectKind,
    pub(super) code: Option<CloseCode>,
}

impl End {
    /// A failed connection, no close code to report.
    pub(super) const FAILED: End = End {
        kind: DisconnectKind::Failed,
        code: None,
    };

    /// A connection whose socket went (a reset, an I/O error), no close code to report.
    pub(super) const RESET: End = End {
        kind: DisconnectKind::Reset,
        code: None,
    };

    /// A connection whose write or read failed, or whose peer ended the stream before the
    /// close handshake finished.
    pub(super) const ABNORMAL: End = End {
        kind: DisconnectKind::Reset,
        code: Some(CloseCode::ABNORMAL),
    };
}

/// A slot's flags and how the connection is ending, in 4 bytes (`Option<End>` and the flags
/// apart take 8 with alignment, and push the slot 8 bytes past the codec state + 24): close
/// code 0 is never sent, so it stands for none.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Marks {
    pub(super) flags: Flags,
    end_kind: Option<DisconnectKind>,
    end_code: u16,
}

impl Marks {
    /// Records how the connection ends unless something was recorded first (the first cause
    /// wins).
    pub(super) fn record(&mut self, end: End) {
        if self.end_kind.is_none() {
            self.end_kind = Some(end.kind);
            self.end_code = end.code.map_or(0, u16::from);
        }
    }

    /// What was recorded, if anything.
    pub(super) fn end(&self) -> Option<End> {
        self.end_kind.map(|kind| End {
            kind,
            code: (self.end_code != 0).then(|| CloseCode::from(self.end_code)),
        })
    }
}
