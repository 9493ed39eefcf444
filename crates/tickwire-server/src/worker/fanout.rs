//! A round's sends to many subscribers in one system call.
//!
//! When a topic's round is the same bytes for every subscriber that was idle (nothing owed
//! before it, no deflate), those bytes are laid out once and handed to the kernel as one
//! io_uring submission of a `send` per subscriber, instead of one `send(2)` each: the
//! system call's entry, exit and descriptor lookup are paid once per round rather than once
//! per subscriber. Measured on this project's VM (`docs/benchmarks/pubsub.md`): 100 loopback
//! sockets, 3.3 KB each, about 10% less CPU per send.
//!
//! Every send is `MSG_DONTWAIT`: a socket that would block completes at once with `EAGAIN`
//! or a short count, and the worker queues what was not taken exactly as a short `send(2)`
//! would have left it. Where io_uring is missing or refused (an old kernel, a seccomp
//! filter, another OS), the worker writes to each subscriber as before.

use std::io::IoSlice;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use tickwire_codec::ws::{Buffers, Connection, ConnectionState};

use super::conn::Reading;
use super::topics::{self, Counts, Round};
use super::{Phase, Worker};
use crate::handle::ConnId;
use crate::handler::Handler;
use crate::topic::{Gap, Publication, Topic};
use crate::transport::Transport;

/// The most frames a batched round may hold (the check that a subscriber's queue is exactly
/// the round reads this many slices).
pub(super) const MAX_FRAMES: usize = 256;

/// Sends per submission (the ring's size): a larger fan-out is submitted in several.
#[cfg(target_os = "linux")]
const ENTRIES: u32 = 256;

/// What one send did: all of it, part (`Short(n)`), or an error (`errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sent {
    All,
    Short(usize),
    Failed(i32),
}

impl Sent {
    /// The socket took nothing because it was full (`EAGAIN`).
    pub(super) fn would_block(self) -> bool {
        #[cfg(target_os = "linux")]
        return self == Sent::Failed(libc::EAGAIN);
        #[cfg(not(target_os = "linux"))]
        false
    }
}

/// The worker's ring and the round's bytes.
pub(super) struct Fanout {
    ring: Ring,
    /// The bytes every batched subscriber is sent (one round of one topic).
    pub(super) bytes: Vec<u8>,
    /// Reused: descriptors to send `bytes` to, in the order results are reported.
    fds: Vec<RawFd>,
}

/// The io_uring ring (none: batching is off) and the results of its last sends.
struct Ring {
    #[cfg(target_os = "linux")]
    ring: Option<io_uring::IoUring>,
    /// Reused: the result per send.
    results: Vec<Sent>,
}

impl std::fmt::Debug for Fanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fanout")
            .field("enabled", &self.enabled())
            .field("bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

impl Fanout {
    /// A ring when `wanted` and the kernel gives one; otherwise batching is off.
    pub(super) fn new(wanted: bool) -> Self {
        #[cfg(target_os = "linux")]
        let ring = if wanted {
            io_uring::IoUring::new(ENTRIES).ok()
        } else {
            None
        };
        #[cfg(not(target_os = "linux"))]
        let _ = wanted;
        Self {
            ring: Ring {
                #[cfg(target_os = "linux")]
                ring,
                results: Vec::new(),
            },
            bytes: Vec::new(),
            fds: Vec::new(),
        }
    }

    /// Sends are batched.
    pub(super) fn enabled(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.ring.ring.is_some();
        #[cfg(not(target_os = "linux"))]
        false
    }

    /// What the last [`send`](Self::send) did for the `index`th descriptor.
    pub(super) fn result(&self, index: usize) -> Sent {
        self.ring.results[index]
    }

    /// Adds a descriptor to the batch.
    pub(super) fn push(&mut self, fd: RawFd) {
        self.fds.push(fd);
    }

    /// Sends `bytes` to every descriptor pushed since the last call; the results, in push
    /// order. Empties the batch.
    pub(super) fn send(&mut self) -> &[Sent] {
        let bytes = &self.bytes[..];
        self.ring
            .submit_all(self.fds.iter().map(|&fd| (fd, bytes)), self.fds.len());
        self.fds.clear();
        &self.ring.results
    }

    /// Sends each entry's bytes to its descriptor (the connections' own replies); the
    /// results, in order.
    pub(super) fn send_each(&mut self, entries: &[(RawFd, IoSlice<'_>)]) -> &[Sent] {
        self.ring.submit_all(
            entries.iter().map(|(fd, bytes)| (*fd, &bytes[..])),
            entries.len(),
        );
        &self.ring.results
    }
}

impl Ring {
    /// Sends `count` entries in submissions of at most the ring's size, each waited for to
    /// its last completion, and sets `results`. The borrows of the bytes last the call, and
    /// the call returns only when the kernel is done with them.
    fn submit_all<'b>(&mut self, entries: impl Iterator<Item = (RawFd, &'b [u8])>, count: usize) {
        self.results.clear();
        self.results.resize(count, Sent::Failed(0));
        #[cfg(target_os = "linux")]
        {
            let mut entries = entries;
            if count == 1 && self.ring.is_some() {
                // One send: send(2) itself costs less than a submission and its completion
                // (a wake-up with one reply, the common case at low load).
                if let Some((fd, bytes)) = entries.next() {
                    self.results[0] = send_one(fd, bytes);
                }
                return;
            }
            for results in self.results.chunks_mut(ENTRIES as usize) {
                let Some(ring) = self.ring.as_mut() else {
                    break;
                };
                if let Err(error) = submit(ring, entries.by_ref().take(results.len()), results) {
                    // Nothing of this submission reached the kernel (io_uring_enter reports
                    // an error only when it took no entry): every send left is reported
                    // failed, the connections are written one by one, and so is everything
                    // after (the ring, with the entries it did not take, goes).
                    let errno = error.raw_os_error().unwrap_or(libc::EIO);
                    for result in results.iter_mut().filter(|r| **r == Sent::Failed(0)) {
                        *result = Sent::Failed(errno);
                    }
                    self.ring = None;
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        drop(entries);
    }
}

/// One `MSG_DONTWAIT` send(2), reported as the ring would report it.
#[cfg(target_os = "linux")]
fn send_one(fd: RawFd, bytes: &[u8]) -> Sent {
    loop {
        // SAFETY: `bytes` is a live slice for the whole call and the kernel only reads
        // `bytes.len()` bytes from its start; `fd` is a descriptor the worker owns.
        let n = unsafe {
            libc::send(
                fd,
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n >= 0 {
            let n = n as usize;
            return if n >= bytes.len() {
                Sent::All
            } else {
                Sent::Short(n)
            };
        }
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if errno != libc::EINTR {
            return Sent::Failed(errno);
        }
    }
}

/// One submission of a send per entry (at most the ring's size: `results.len()` of them),
/// waited for to the last completion; `results[i]` is set for the completion of the `i`th.
#[cfg(target_os = "linux")]
fn submit<'b>(
    ring: &mut io_uring::IoUring,
    entries: impl Iterator<Item = (RawFd, &'b [u8])>,
    results: &mut [Sent],
) -> std::io::Result<()> {
    use io_uring::{opcode, types};

    // The length asked of each send, to tell a whole send from a short one.
    let mut asked = [0u32; ENTRIES as usize];
    let mut waiting = 0;
    {
        let mut queue = ring.submission();
        for (index, (fd, bytes)) in entries.enumerate().take(results.len()) {
            let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
            asked[index] = len;
            let entry = opcode::Send::new(types::Fd(fd), bytes.as_ptr(), len)
                // A full socket completes at once with EAGAIN (io_uring marks a
                // MSG_DONTWAIT send no-wait, so it never parks it); a reset one raises no
                // SIGPIPE.
                .flags(libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
                .build()
                .user_data(index as u64);
            // Why the push is sound: this function returns only once each pushed entry has
            // completed (or, on an error, when the kernel took none of them, and the caller
            // then drops the ring with them); each entry's bytes are borrowed for the whole
            // call, so nothing moves or changes them meanwhile; at most the ring's size is
            // pushed and the last call left the ring empty.
            // SAFETY: so the bytes outlive every entry, and the queue has room for this one.
            if unsafe { queue.push(&entry) }.is_err() {
                results[index] = Sent::Failed(libc::EAGAIN);
                continue;
            }
            waiting += 1;
        }
    }
    while waiting > 0 {
        match ring.submit_and_wait(waiting) {
            Ok(_) => {}
            Err(error) if error.raw_os_error() == Some(libc::EINTR) => {}
            Err(error) => return Err(error),
        }
        for completion in ring.completion() {
            let index = completion.user_data() as usize;
            results[index] = match completion.result() {
                n if n >= 0 && n as u32 >= asked[index] => Sent::All,
                n if n >= 0 => Sent::Short(n as usize),
                errno => Sent::Failed(-errno),
            };
            waiting -= 1;
        }
    }
    Ok(())
}

impl<H: Handler, T: Transport> Worker<H, T> {
    /// Delivers one topic's round, a single piece, to `walk`. A subscriber that owed nothing
    /// (no buffer set, no flag) gets the round queued through the codec as any other, and
    /// when its queue is then exactly the round's frames it is marked written and its socket
    /// joins one batched send of the round's bytes; what a socket did not take is queued
    /// again and written as a short write's rest is. Every other subscriber is served as in
    /// the unbatched path.
    pub(super) fn fanout_round(
        &mut self,
        topic: &Topic,
        batch: &[Arc<Publication>],
        walk: &[ConnId],
        round: &Round<'_>,
        counts: &mut Counts,
        gaps: &mut Vec<(ConnId, Topic, Gap)>,
    ) {
        let mut batched = std::mem::take(&mut self.batched);
        batched.clear();
        for &id in walk {
            let mut gap = None;
            let closed_before = counts.closed;
            let quiet = self.quiet_socket(id, round);
            let mut queued = false;
            let mut written = false;
            self.with_lent(id, |conn, bufs| {
                queued = true;
                for publication in batch {
                    if conn.state() != ConnectionState::Open {
                        return;
                    }
                    if publication.except == Some(id) {
                        continue;
                    }
                    topics::queue_on(conn, bufs, round, publication, counts, &mut gap);
                }
                if quiet.is_some() && holds_exactly(conn, bufs, batch) {
                    let all = bufs.queued();
                    conn.advance_output(bufs, all);
                    written = true;
                }
            });
            match quiet {
                Some(fd) if written => {
                    self.fanout.push(fd);
                    batched.push(id);
                }
                _ if queued => self.serve(id.slot(), Reading::No),
                _ => {}
            }
            if counts.closed > closed_before {
                self.record_slow_close(id, topic);
            }
            if let Some(gap) = gap {
                gaps.push((id, topic.clone(), gap));
            }
        }
        if !batched.is_empty() {
            self.fanout.bytes.clear();
            for publication in batch {
                self.fanout
                    .bytes
                    .extend_from_slice(publication.frame.wire());
            }
            self.fanout.send();
            for (index, &id) in batched.iter().enumerate() {
                let taken = match self.fanout.result(index) {
                    Sent::All => continue,
                    Sent::Short(n) => n,
                    Sent::Failed(_) => 0,
                };
                // Queued again, less what the socket took: the write that follows goes on
                // where the kernel stopped (or meets the socket's error and fails the
                // connection as an unbatched write would).
                self.with_lent(id, |conn, bufs| {
                    for publication in batch {
                        let _ = conn
                            .sender(bufs)
                            .shared_labeled(&publication.frame, topics::label(publication));
                    }
                    conn.advance_output(bufs, taken);
                });
                self.serve(id.slot(), Reading::No);
            }
        }
        self.batched = batched;
    }

    /// The socket of `id` when it can join a batch: open, plain, owing nothing, no flag set
    /// and (on a deflate server) without the extension.
    fn quiet_socket(&mut self, id: ConnId, round: &Round<'_>) -> Option<RawFd> {
        let slot = self.slots.get_mut(id.slot() as usize)?;
        if slot.generation != id.generation() || slot.bufs.is_some() || slot.marks.flags != 0 {
            return None;
        }
        let Phase::Open(open) = &slot.phase else {
            return None;
        };
        #[cfg(feature = "deflate")]
        if round.deflate.is_some() && open.conn.has_extension() {
            return None;
        }
        #[cfg(not(feature = "deflate"))]
        let _ = round;
        if open.conn.state() != ConnectionState::Open {
            return None;
        }
        Some(slot.stream.as_mut()?.socket().as_raw_fd())
    }

    /// Runs `f` on the open connection `id` (if it is still there) with its buffers; writes
    /// nothing.
    fn with_lent(&mut self, id: ConnId, f: impl FnOnce(&mut Connection, &mut Buffers)) {
        if let Some(lent) = self.lend(id) {
            f(&mut lent.open.conn, lent.bufs);
        }
    }
}

/// The connection's queue is the frames of `batch`, each whole and in order, and nothing
/// else (no frame of its own before or after, none left out).
fn holds_exactly(conn: &Connection, bufs: &Buffers, batch: &[Arc<Publication>]) -> bool {
    // The slices are read into an array on the stack for every subscriber: a small one for
    // the usual round (1 KiB to clear, not 4).
    if batch.len() < SMALL_ROUND {
        holds_exactly_in::<SMALL_ROUND>(conn, bufs, batch)
    } else {
        holds_exactly_in::<{ MAX_FRAMES + 1 }>(conn, bufs, batch)
    }
}

/// Rounds of fewer frames than this are checked with a 64-slice array.
const SMALL_ROUND: usize = 64;

/// [`holds_exactly`] with room for `N` slices (`N` > `batch.len()`, so that a queue holding
/// more than the round shows as longer).
fn holds_exactly_in<const N: usize>(
    conn: &Connection,
    bufs: &Buffers,
    batch: &[Arc<Publication>],
) -> bool {
    let mut slices = [IoSlice::new(&[]); N];
    let count = conn.output_vectored(bufs, &mut slices);
    count == batch.len()
        && slices[..count]
            .iter()
            .zip(batch)
            .all(|(slice, publication)| {
                let wire = publication.frame.wire();
                slice.as_ptr() == wire.as_ptr() && slice.len() == wire.len()
            })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::{ErrorKind, Read};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    use super::{Fanout, Sent};

    /// `n` connected pairs: (the sending end, non-blocking, the receiving end).
    fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        (0..n)
            .map(|_| {
                let receiver = TcpStream::connect(addr).unwrap();
                let (sender, _) = listener.accept().unwrap();
                sender.set_nonblocking(true).unwrap();
                (sender, receiver)
            })
            .collect()
    }

    #[test]
    fn one_submission_delivers_the_bytes_whole_to_every_socket() {
        // More sockets than the ring holds: the batch goes in several submissions.
        let pairs = pairs(300);
        let mut fanout = Fanout::new(true);
        assert!(
            fanout.enabled(),
            "io_uring is available on Linux CI machines"
        );
        fanout.bytes = (0..3_000u32).map(|i| (i % 251) as u8).collect();
        for (sender, _) in &pairs {
            fanout.push(sender.as_raw_fd());
        }
        let results = fanout.send().to_vec();
        assert_eq!(results, vec![Sent::All; 300]);
        for (_, receiver) in &pairs {
            let mut got = vec![0; 3_000];
            (&*receiver).read_exact(&mut got).unwrap();
            assert_eq!(got, fanout.bytes);
        }
        // The batch is emptied: the next send has nothing to do.
        assert!(fanout.send().is_empty());
    }

    #[test]
    fn a_full_socket_answers_at_once_with_what_it_took() {
        let pairs = pairs(1);
        let (sender, receiver) = &pairs[0];
        let mut fanout = Fanout::new(true);
        assert!(fanout.enabled());
        fanout.bytes = vec![7; 64 << 10];
        let mut taken = 0;
        let mut full = false;
        // Bounded: the kernel's buffers hold a few MB at most.
        for _ in 0..10_000 {
            fanout.push(sender.as_raw_fd());
            match fanout.send()[0] {
                Sent::All => taken += 64 << 10,
                Sent::Short(n) => taken += n,
                Sent::Failed(errno) => {
                    assert_eq!(errno, libc::EAGAIN, "a full socket says EAGAIN");
                    full = true;
                    break;
                }
            }
        }
        assert!(full, "the receiver never read, so the socket filled");
        // Every byte reported taken arrives, and nothing more.
        receiver.set_nonblocking(true).unwrap();
        let mut got = 0;
        let mut buf = vec![0; 1 << 16];
        let mut idle = 0;
        while idle < 50 {
            match (&*receiver).read(&mut buf) {
                Ok(n) => {
                    assert!(buf[..n].iter().all(|&b| b == 7));
                    got += n;
                    idle = 0;
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => {
                    idle += 1;
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Err(error) => panic!("{error}"),
            }
        }
        assert_eq!(got, taken);
    }

    #[test]
    fn a_reset_peer_fails_its_send_and_not_the_others() {
        let mut pairs = pairs(3);
        // The middle receiver goes with a reset (SO_LINGER 0).
        let (reset_sender, reset_receiver) = pairs.remove(1);
        socket2::SockRef::from(&reset_receiver)
            .set_linger(Some(std::time::Duration::ZERO))
            .unwrap();
        drop(reset_receiver);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut fanout = Fanout::new(true);
        assert!(fanout.enabled());
        fanout.bytes = b"tick".to_vec();
        fanout.push(pairs[0].0.as_raw_fd());
        fanout.push(reset_sender.as_raw_fd());
        fanout.push(pairs[1].0.as_raw_fd());
        let results = fanout.send().to_vec();
        assert_eq!(results[0], Sent::All);
        assert!(
            matches!(results[1], Sent::Failed(errno) if errno == libc::ECONNRESET || errno == libc::EPIPE),
            "{:?}",
            results[1]
        );
        assert_eq!(results[2], Sent::All);
        for (_, receiver) in &pairs {
            let mut got = [0; 4];
            (&*receiver).read_exact(&mut got).unwrap();
            assert_eq!(&got, b"tick");
        }
    }
}
