//! The batched sender: many `(bytes, descriptor)` pairs sent in one system call, and the
//! crate's only `unsafe` code (docs/UNSAFE.md, "tickwire-server: batched sends").
//!
//! It owns the worker's io_uring ring and the results of its last sends. It does not know
//! what the bytes are (a topic round, a wake-up's replies) nor whose the descriptors are:
//! the caller lays the bytes out, picks the sockets, and settles each connection from the
//! result of its send.
//!
//! Each pair becomes an `IORING_OP_SEND` in one submission instead of one `send(2)` each:
//! the system call's entry, exit and descriptor lookup are paid once per batch rather than
//! once per socket. Measured on this project's VM (`docs/benchmarks/pubsub.md`): 100
//! loopback sockets, 3.3 KB each, about 10% less CPU per send. A batch of one goes with
//! `send(2)` itself, which costs less than a submission and its completion.
//!
//! Every send is `MSG_DONTWAIT`: a socket that would block completes at once with `EAGAIN`
//! or a short count, exactly as a short `send(2)` would have left it. Where io_uring is
//! missing or refused (an old kernel, a seccomp filter, another OS), [`BatchSender::enabled`]
//! is false and the caller writes to each socket itself.

use std::os::fd::RawFd;

/// Sends per submission (the ring's size): a larger batch is submitted in several.
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

/// The io_uring ring (none: batching is off) and the results of its last sends.
pub(super) struct BatchSender {
    #[cfg(target_os = "linux")]
    ring: Option<io_uring::IoUring>,
    /// Reused: the result per send.
    results: Vec<Sent>,
}

impl std::fmt::Debug for BatchSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchSender")
            .field("enabled", &self.enabled())
            .finish_non_exhaustive()
    }
}

impl BatchSender {
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
            #[cfg(target_os = "linux")]
            ring,
            results: Vec::new(),
        }
    }

    /// Sends are batched (a ring was made and has not failed).
    pub(super) fn enabled(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.ring.is_some();
        #[cfg(not(target_os = "linux"))]
        false
    }

    /// What the last [`send`](Self::send) did for its `index`th pair.
    pub(super) fn result(&self, index: usize) -> Sent {
        self.results[index]
    }

    /// Sends each pair's bytes to its descriptor, in submissions of at most the ring's size,
    /// each waited for to its last completion; the results, in the pairs' order. The borrows
    /// of the bytes last the call, and the call returns only when the kernel is done with
    /// them. The descriptors must be open sockets that nothing closes during the call.
    pub(super) fn send<'b>(
        &mut self,
        pairs: impl ExactSizeIterator<Item = (&'b [u8], RawFd)>,
    ) -> &[Sent] {
        let count = pairs.len();
        self.results.clear();
        self.results.resize(count, Sent::Failed(0));
        #[cfg(target_os = "linux")]
        {
            let mut pairs = pairs;
            if count == 1 && self.ring.is_some() {
                // One send: send(2) itself costs less than a submission and its completion
                // (a wake-up with one reply, the common case at low load).
                if let Some((bytes, fd)) = pairs.next() {
                    self.results[0] = send_one(fd, bytes);
                }
                return &self.results;
            }
            for results in self.results.chunks_mut(ENTRIES as usize) {
                let Some(ring) = self.ring.as_mut() else {
                    break;
                };
                if let Err(error) = submit(ring, pairs.by_ref().take(results.len()), results) {
                    // Nothing of this submission reached the kernel (io_uring_enter reports
                    // an error only when it took no entry): every send left is reported
                    // failed, the caller writes the sockets one by one, and so is everything
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
        drop(pairs);
        &self.results
    }
}

/// One `MSG_DONTWAIT` send(2), reported as the ring would report it.
#[cfg(target_os = "linux")]
fn send_one(fd: RawFd, bytes: &[u8]) -> Sent {
    loop {
        // SAFETY: `bytes` is a live slice for the whole call and the kernel only reads
        // `bytes.len()` bytes from its start; `fd` is an open socket (the caller's contract).
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

/// One submission of a send per pair (at most the ring's size: `results.len()` of them),
/// waited for to the last completion; `results[i]` is set for the completion of the `i`th.
#[cfg(target_os = "linux")]
fn submit<'b>(
    ring: &mut io_uring::IoUring,
    pairs: impl Iterator<Item = (&'b [u8], RawFd)>,
    results: &mut [Sent],
) -> std::io::Result<()> {
    use io_uring::{opcode, types};

    // The length asked of each send, to tell a whole send from a short one.
    let mut asked = [0u32; ENTRIES as usize];
    let mut waiting = 0;
    {
        let mut queue = ring.submission();
        for (index, (bytes, fd)) in pairs.enumerate().take(results.len()) {
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::{ErrorKind, Read};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    use super::{BatchSender, Sent};

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
        let mut batch = BatchSender::new(true);
        assert!(
            batch.enabled(),
            "io_uring is available on Linux CI machines"
        );
        let bytes: Vec<u8> = (0..3_000u32).map(|i| (i % 251) as u8).collect();
        let results = batch
            .send(
                pairs
                    .iter()
                    .map(|(sender, _)| (&bytes[..], sender.as_raw_fd())),
            )
            .to_vec();
        assert_eq!(results, vec![Sent::All; 300]);
        for (_, receiver) in &pairs {
            let mut got = vec![0; 3_000];
            (&*receiver).read_exact(&mut got).unwrap();
            assert_eq!(got, bytes);
        }
        // No pairs: nothing to do.
        assert!(batch.send(std::iter::empty()).is_empty());
    }

    #[test]
    fn a_full_socket_answers_at_once_with_what_it_took() {
        let pairs = pairs(1);
        let (sender, receiver) = &pairs[0];
        let mut batch = BatchSender::new(true);
        assert!(batch.enabled());
        let bytes = vec![7; 64 << 10];
        let mut taken = 0;
        let mut full = false;
        // Bounded: the kernel's buffers hold a few MB at most.
        for _ in 0..10_000 {
            match batch.send(std::iter::once((&bytes[..], sender.as_raw_fd())))[0] {
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
        let mut batch = BatchSender::new(true);
        assert!(batch.enabled());
        let fds = [
            pairs[0].0.as_raw_fd(),
            reset_sender.as_raw_fd(),
            pairs[1].0.as_raw_fd(),
        ];
        let results = batch
            .send(fds.iter().map(|&fd| (&b"tick"[..], fd)))
            .to_vec();
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
