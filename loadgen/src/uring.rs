//! The load generator's sends of one wake-up in one io_uring submission.
//!
//! The generator answers every echo with the next frame, one write per connection per
//! wake-up, and at 1,000 connections and more its core saturates before the server's: the
//! rates then measure the generator. A `send` per connection in one submission costs its
//! kernel side about 10% less than a `send(2)` each (the system call's entry, exit and
//! descriptor lookup paid once per wake-up), which leaves the servers the limit for longer.
//! `--generator-send-each` turns it off.

#![cfg(target_os = "linux")]

use std::os::fd::RawFd;

use io_uring::{IoUring, opcode, types};

/// Entries per submission.
const ENTRIES: usize = 256;

/// A ring for `MSG_DONTWAIT` sends.
pub(crate) struct Sends {
    ring: IoUring,
}

impl Sends {
    /// A ring, when the kernel gives one.
    pub(crate) fn new() -> Option<Self> {
        IoUring::new(ENTRIES as u32).ok().map(|ring| Self { ring })
    }

    /// Sends each entry's bytes to its descriptor (`MSG_DONTWAIT`: a full socket answers at
    /// once) and sets `results[i]` to the `i`th send's count or negated errno.
    pub(crate) fn send(
        &mut self,
        entries: &[(RawFd, &[u8])],
        results: &mut Vec<i32>,
    ) -> std::io::Result<()> {
        results.clear();
        results.resize(entries.len(), 0);
        for (entries, results) in entries.chunks(ENTRIES).zip(results.chunks_mut(ENTRIES)) {
            let mut waiting = 0;
            {
                let mut queue = self.ring.submission();
                for (index, (fd, bytes)) in entries.iter().enumerate() {
                    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
                    let entry = opcode::Send::new(types::Fd(*fd), bytes.as_ptr(), len)
                        .flags(libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
                        .build()
                        .user_data(index as u64);
                    // Why the push is sound: the bytes are borrowed for the whole call, which
                    // returns only once every pushed entry has completed (or with an error
                    // when the kernel took none, after which the ring is not used again: the
                    // caller fails the point); a chunk is at most the ring's size and the
                    // last call left the ring empty.
                    // SAFETY: so the bytes outlive the entry, and the queue has room for it.
                    if unsafe { queue.push(&entry) }.is_err() {
                        return Err(std::io::ErrorKind::OutOfMemory.into());
                    }
                    waiting += 1;
                }
            }
            while waiting > 0 {
                match self.ring.submit_and_wait(waiting) {
                    Ok(_) => {}
                    Err(error) if error.raw_os_error() == Some(libc::EINTR) => {}
                    Err(error) => return Err(error),
                }
                for completion in self.ring.completion() {
                    results[completion.user_data() as usize] = completion.result();
                    waiting -= 1;
                }
            }
        }
        Ok(())
    }
}
