//! The queued output of one connection, and the order it leaves in.
//!
//! Owns [`Output`]: the connection's own data frames (and its close) in a [`WriteBuf`],
//! pings and pongs in a second one, and [`SharedFrame`]s queued by reference between the data
//! frames. The order is RFC 6455's: a frame already partly written finishes first (frames are
//! never interleaved), then control frames, then data frames and shared frames in the order
//! they were queued. It does not encode (the [`FrameWriter`](super::FrameWriter) does) and
//! decides nothing about closing beyond "nothing after a written close".

use std::collections::VecDeque;
use std::io::IoSlice;

use super::{SharedFrame, SharedLabel};
use crate::buf::WriteBuf;

/// A shared frame waiting in the queue.
#[derive(Debug, Clone)]
struct Queued {
    /// Goes out once this many bytes of `data` (counted since the buffer was made) are
    /// written: the data frames queued before it.
    after: u64,
    frame: SharedFrame,
    /// Bytes of it already written.
    sent: usize,
    /// What the fan-out layer attached, for [`Output::drop_shared`]; `None`: never dropped.
    label: Option<SharedLabel>,
}

/// The size of one entry of the shared-frame queue.
pub(crate) const SHARED_ENTRY_BYTES: usize = std::mem::size_of::<Queued>();

/// What [`Buffers::drop_shared`](super::Buffers::drop_shared) removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DroppedShared {
    /// Frames removed.
    pub frames: usize,
    /// Their wire bytes.
    pub bytes: usize,
}

/// Everything a connection has queued for the socket.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    /// The connection's own data frames and close, encoded.
    pub(crate) data: WriteBuf,
    /// Pings and pongs.
    pub(crate) control: WriteBuf,
    shared: VecDeque<Queued>,
    /// Wire bytes of `shared` not yet written (kept so that [`len`](Self::len) is O(1)).
    shared_bytes: usize,
    /// Bytes of `data` written since the buffer was made (positions of shared frames).
    data_written: u64,
    /// Bytes of the frame at the front of `data` still to be written after a partial write
    /// stopped inside it; 0 at a frame boundary. Control frames wait only for these.
    data_frame_left: usize,
    /// Length of the pong at the end of `control` that answers the most recent ping seen
    /// while `control` was full, replaced by the next such pong (0: none).
    pub(crate) latest_pong: u8,
    /// Pings and pongs queued since the buffers were made (wrapping): a pong that replaces
    /// one not yet written is not counted again.
    pub(crate) control_frames: u32,
}

/// One run of bytes to write, in order.
enum Next<'a> {
    /// The rest of a frame partly written: nothing may come before it.
    InProgress(&'a [u8]),
    Control(&'a [u8]),
    Data(&'a [u8]),
    Nothing,
}

impl Output {
    pub(crate) fn new(data: WriteBuf, control: WriteBuf) -> Self {
        Self {
            data,
            control,
            shared: VecDeque::new(),
            shared_bytes: 0,
            data_written: 0,
            data_frame_left: 0,
            latest_pong: 0,
            control_frames: 0,
        }
    }

    /// Counts one more ping or pong queued.
    #[inline]
    pub(crate) fn counted_control(
        &mut self,
        queued: Result<(), crate::ws::Error>,
    ) -> Result<(), crate::ws::Error> {
        if queued.is_ok() {
            self.control_frames = self.control_frames.wrapping_add(1);
        }
        queued
    }

    /// Drops everything queued.
    pub(crate) fn clear(&mut self) {
        self.data.clear();
        self.control.clear();
        self.shared.clear();
        self.shared_bytes = 0;
        self.data_written = 0;
        self.data_frame_left = 0;
        self.latest_pong = 0;
    }

    /// True when nothing at all is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty() && self.control.is_empty() && self.shared.is_empty()
    }

    /// Bytes queued, shared frames included.
    pub(crate) fn len(&self) -> usize {
        self.data.len() + self.control.len() + self.shared_bytes
    }

    /// Shared frames queued (the one being written included).
    pub(crate) fn shared_frames(&self) -> usize {
        self.shared.len()
    }

    /// True when data frames or shared frames are queued (the close would go after them).
    pub(crate) fn has_data(&self) -> bool {
        !self.data.is_empty() || !self.shared.is_empty()
    }

    /// Queues `frame` after the data frames queued so far.
    pub(crate) fn push_shared(&mut self, frame: &SharedFrame, label: Option<SharedLabel>) {
        self.shared_bytes += frame.wire().len();
        self.shared.push_back(Queued {
            after: self.data_written + self.data.len() as u64,
            frame: frame.clone(),
            sent: 0,
            label,
        });
    }

    /// Removes the labelled shared frames not yet started for which `drop` says true, oldest
    /// first; a frame partly written always finishes, and unlabelled frames stay. `drop` is
    /// called in queue order and may stop the scan by returning `None`.
    pub(crate) fn drop_shared(
        &mut self,
        mut drop: impl FnMut(&SharedLabel, usize) -> Option<bool>,
    ) -> DroppedShared {
        let mut dropped = DroppedShared::default();
        // Not `retain`: a scan that stops early (dropping the oldest, the common case) must
        // not visit the rest of a long queue.
        let mut i = 0;
        while let Some(q) = self.shared.get(i) {
            let label = match &q.label {
                Some(label) if q.sent == 0 => label,
                _ => {
                    i += 1;
                    continue;
                }
            };
            match drop(label, q.frame.wire().len()) {
                Some(true) => {
                    dropped.frames += 1;
                    dropped.bytes += q.frame.wire().len();
                    self.shared.remove(i);
                }
                Some(false) => i += 1,
                None => break,
            }
        }
        self.shared_bytes -= dropped.bytes;
        dropped
    }

    /// The shared frame due now (every data byte queued before it is written).
    #[inline]
    fn due(&self) -> Option<&Queued> {
        self.shared.front().filter(|q| q.after == self.data_written)
    }

    /// Bytes of `data` before the next shared frame (all of it when none is queued).
    #[inline]
    fn data_run(&self) -> &[u8] {
        let data = self.data.as_slice();
        match self.shared.front() {
            Some(q) => &data[..(q.after - self.data_written) as usize],
            None => data,
        }
    }

    /// What goes out next. `control_allowed` is false once the close is written.
    #[inline]
    fn next(&self, control_allowed: bool) -> Next<'_> {
        if let Some(q) = self.due()
            && q.sent > 0
        {
            return Next::InProgress(&q.frame.wire()[q.sent..]);
        }
        if self.data_frame_left > 0 {
            return Next::InProgress(&self.data.as_slice()[..self.data_frame_left]);
        }
        if control_allowed && !self.control.is_empty() {
            return Next::Control(self.control.as_slice());
        }
        if let Some(q) = self.due() {
            return Next::Data(q.frame.wire());
        }
        match self.data_run() {
            [] => Next::Nothing,
            run => Next::Data(run),
        }
    }

    /// True when [`first`](Self::first) would give bytes: without working out which.
    #[inline]
    pub(crate) fn has_output(&self, control_allowed: bool) -> bool {
        !(self.data.is_empty() && self.only_data(control_allowed))
    }

    /// True when everything to write is `data`, in order: no shared frame is queued and no
    /// control frame may come between (a frame partly written continues `data` where it is).
    /// The common case, a connection sending its own messages, takes the short paths of
    /// [`vectored`](Self::vectored) and [`advance`](Self::advance) on it.
    #[inline]
    fn only_data(&self, control_allowed: bool) -> bool {
        self.shared.is_empty() && (!control_allowed || self.control.is_empty())
    }

    /// The next contiguous bytes to write (empty when nothing is queued).
    #[inline]
    pub(crate) fn first(&self, control_allowed: bool) -> &[u8] {
        match self.next(control_allowed) {
            Next::InProgress(bytes) | Next::Control(bytes) | Next::Data(bytes) => bytes,
            Next::Nothing => &[],
        }
    }

    /// Fills `slices` with what goes out next, in order, and returns how many it filled: the
    /// same bytes as repeated [`first`](Self::first) / [`advance`](Self::advance) calls.
    #[inline]
    pub(crate) fn vectored<'b>(
        &'b self,
        control_allowed: bool,
        slices: &mut [IoSlice<'b>],
    ) -> usize {
        if self.only_data(control_allowed) {
            // A partly written frame's rest and the frames after it are one run.
            return match slices.first_mut() {
                Some(slot) if !self.data.is_empty() => {
                    *slot = IoSlice::new(self.data.as_slice());
                    1
                }
                _ => 0,
            };
        }
        self.vectored_mixed(control_allowed, slices)
    }

    /// [`vectored`](Self::vectored) with shared or control frames among the data.
    #[inline(never)]
    fn vectored_mixed<'b>(&'b self, control_allowed: bool, slices: &mut [IoSlice<'b>]) -> usize {
        let mut filled = 0;
        let mut push = |bytes: &'b [u8]| {
            if !bytes.is_empty() && filled < slices.len() {
                slices[filled] = IoSlice::new(bytes);
                filled += 1;
            }
        };
        let data = self.data.as_slice();
        // Offset into `data` where the runs below start, and the shared frames still to place.
        let mut at = 0;
        let mut shared = self.shared.iter().peekable();
        match self.next(control_allowed) {
            Next::InProgress(bytes) => {
                push(bytes);
                if self.data_frame_left > 0 {
                    at = self.data_frame_left;
                } else {
                    shared.next();
                }
                if control_allowed {
                    push(self.control.as_slice());
                }
            }
            Next::Control(bytes) => push(bytes),
            Next::Data(_) | Next::Nothing => {}
        }
        for q in shared {
            let upto = (q.after - self.data_written) as usize;
            push(&data[at..upto]);
            push(&q.frame.wire()[q.sent..]);
            at = upto;
        }
        push(&data[at..]);
        filled
    }

    /// Records that `n` bytes, in the order [`vectored`](Self::vectored) gives them, were
    /// written.
    #[inline]
    pub(crate) fn advance(&mut self, n: usize, control_allowed: bool) {
        if n == self.data.len() && self.data_frame_left == 0 && self.only_data(control_allowed) {
            // Everything queued went out, and it was whole frames of our own.
            self.consume_data(n);
            return;
        }
        self.advance_mixed(n, control_allowed);
    }

    /// [`advance`](Self::advance) past part of the queue, or past control or shared frames.
    #[inline(never)]
    fn advance_mixed(&mut self, mut n: usize, control_allowed: bool) {
        while n > 0 {
            let taken = match self.next(control_allowed) {
                Next::Nothing => {
                    debug_assert!(false, "advanced past the queued output");
                    break;
                }
                Next::InProgress(bytes) if self.data_frame_left == 0 => {
                    let taken = n.min(bytes.len());
                    self.advance_shared(taken);
                    taken
                }
                Next::InProgress(bytes) => {
                    let taken = n.min(bytes.len());
                    self.data_frame_left -= taken;
                    self.consume_data(taken);
                    taken
                }
                Next::Control(bytes) => {
                    let taken = n.min(bytes.len());
                    self.control.consume(taken);
                    if self.control.len() < usize::from(self.latest_pong) {
                        // The replaceable pong started going out: it stays as it is.
                        self.latest_pong = 0;
                    }
                    taken
                }
                Next::Data(_) if self.due().is_some() => {
                    let rest = self.due().map_or(0, |q| q.frame.wire().len());
                    let taken = n.min(rest);
                    self.advance_shared(taken);
                    taken
                }
                Next::Data(run) => {
                    let taken = n.min(run.len());
                    self.data_frame_left = remainder_of_frame_at(run, taken);
                    self.consume_data(taken);
                    taken
                }
            };
            n -= taken;
        }
    }

    fn advance_shared(&mut self, n: usize) {
        if let Some(q) = self.shared.front_mut() {
            q.sent += n;
            self.shared_bytes -= n;
            if q.sent == q.frame.wire().len() {
                self.shared.pop_front();
            }
        }
    }

    fn consume_data(&mut self, n: usize) {
        self.data.consume(n);
        self.data_written += n as u64;
    }

    /// Everything queued when it is only the connection's own data frames, starting on a
    /// frame boundary: nothing partly written, no control frame, no shared frame.
    #[inline]
    pub(crate) fn own_run(&self) -> Option<&[u8]> {
        (self.data_frame_left == 0 && self.only_data(true) && !self.data.is_empty())
            .then(|| self.data.as_slice())
    }

    /// Queues, on an empty queue, the end of `run` (whole frames of this connection, as
    /// [`own_run`](Self::own_run) gave them) after its first `written` bytes: the frame the
    /// write stopped in finishes before anything else goes.
    pub(crate) fn put_back(&mut self, run: &[u8], written: usize) {
        debug_assert!(self.is_empty() && written < run.len());
        self.data.extend_from_slice(&run[written..]);
        self.data_frame_left = remainder_of_frame_at(run, written);
    }

    /// Drops queued control frames (nothing may follow a written close).
    pub(crate) fn clear_control(&mut self) {
        self.control.clear();
        self.latest_pong = 0;
    }
}

/// How many bytes of the frame in which a write of `written` bytes stopped are still unwritten
/// (0 when it stopped on a frame boundary). `queued` starts on a frame boundary and holds whole
/// frames encoded by our own writer, so every header is complete and well formed.
fn remainder_of_frame_at(queued: &[u8], written: usize) -> usize {
    if written == queued.len() {
        return 0;
    }
    let mut at = 0;
    while at < written {
        at += encoded_frame_len(&queued[at..]);
    }
    at - written
}

/// Total length (header, mask key and payload) of the frame our writer encoded at `frame[0]`.
fn encoded_frame_len(frame: &[u8]) -> usize {
    let masked = frame[1] & 0x80 != 0;
    let (header, payload) = match frame[1] & 0x7f {
        0x7e => (4, usize::from(u16::from_be_bytes([frame[2], frame[3]]))),
        0x7f => {
            let mut len = [0u8; 8];
            len.copy_from_slice(&frame[2..10]);
            (10, u64::from_be_bytes(len) as usize)
        }
        short => (2, usize::from(short)),
    };
    header + if masked { 4 } else { 0 } + payload
}
