//! Receive limits (rule 4 of docs/ARCHITECTURE.md): every one configurable, every one checked on partial data.

/// Limits the [`FrameReader`](super::FrameReader) enforces on received data. Exceeding any of
/// them is an error carrying close code 1009 (§7.4.1), raised as soon as a frame header shows
/// the excess, before the payload is buffered.
///
/// `#[non_exhaustive]` so that a limit can be added without breaking callers: start from
/// [`Limits::client`] or [`Limits::server`] and change fields with the `with_*` methods
/// (`const`, so a `const` of limits can be built too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest payload of one frame. The read buffer grows to at most this plus 14 bytes.
    pub max_frame_size: usize,
    /// Largest message, all fragments together, measured after any extension transform
    /// (inflated size for permessage-deflate).
    pub max_message_size: usize,
    /// Most frames one fragmented message may have.
    pub max_fragments: usize,
}

impl Limits {
    /// Client defaults: exchange snapshots of several MiB fit with room to spare.
    /// 16 MiB frames, 64 MiB messages, 65 536 fragments.
    pub const fn client() -> Self {
        Self {
            max_frame_size: 16 << 20,
            max_message_size: 64 << 20,
            max_fragments: 1 << 16,
        }
    }

    /// Server defaults, tighter because clients are untrusted: 1 MiB frames and messages,
    /// 1 024 fragments.
    pub const fn server() -> Self {
        Self {
            max_frame_size: 1 << 20,
            max_message_size: 1 << 20,
            max_fragments: 1 << 10,
        }
    }

    with_methods! {
        const_set with_max_frame_size => max_frame_size: usize,
        const_set with_max_message_size => max_message_size: usize,
        const_set with_max_fragments => max_fragments: usize,
    }
}

impl Default for Limits {
    /// The client defaults.
    fn default() -> Self {
        Self::client()
    }
}

/// Where a [`FrameReader`](super::FrameReader) finds its limits: its own [`Limits`], or a
/// configuration shared by many connections (a [`Connection`](super::Connection) reads them
/// from its `Arc<Config>`, so they are not copied per connection).
pub trait LimitsSource {
    /// The limits in force.
    fn limits(&self) -> &Limits;
}

impl LimitsSource for Limits {
    #[inline(always)]
    fn limits(&self) -> &Limits {
        self
    }
}
