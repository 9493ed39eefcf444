//! Kernel receive timestamps on a TCP socket (Linux): `SO_TIMESTAMPING` on (software receive
//! times, and the NIC's raw hardware times where its driver has hardware stamping on), then
//! one `recvmsg(2)` in place of each `read(2)`, its `SCM_TIMESTAMPING` control message holding
//! the times of the segment that completed the read.
//!
//! The only `unsafe` of tickwire-core (docs/UNSAFE.md): the `setsockopt` and `recvmsg`
//! calls and the walk over the control messages `recvmsg` wrote.
#![expect(
    unsafe_code,
    reason = "setsockopt, recvmsg and control-message parsing have no safe API in the tree (rustix, socket2)"
)]

use std::io::{self, Write};
use std::mem::{MaybeUninit, size_of};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

/// What `SO_TIMESTAMPING` is asked for: the kernel's software receive time (the system's
/// wall clock), and the NIC's raw hardware receive time where the NIC stamps (it does once
/// hardware stamping is turned on for it, `SIOCSHWTSTAMP`, which needs privileges and is left
/// to the machine's setup; loopback never does).
const TIMESTAMPING: libc::c_uint = libc::SOF_TIMESTAMPING_RX_SOFTWARE
    | libc::SOF_TIMESTAMPING_SOFTWARE
    | libc::SOF_TIMESTAMPING_RX_HARDWARE
    | libc::SOF_TIMESTAMPING_RAW_HARDWARE;

/// Turns on receive timestamps (`SO_TIMESTAMPING`, software and hardware, ns) on `socket`.
pub fn enable(socket: &impl AsFd) -> io::Result<()> {
    let on = TIMESTAMPING;
    // SAFETY: the descriptor is borrowed (open for the call); the option value is a live
    // `c_uint` whose size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&raw const on).cast(),
            size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Keeps the kernel's receive timestamping on while it lives. Linux turns timestamping on
/// for the whole stack the first time a socket asks, but only later (from a work queue):
/// TCP segments received before then carry no time. A feed with kernel timestamps makes one
/// of these when it is built, before its first connect; it waits (a few milliseconds at
/// most, once) until a byte it sends itself over the loopback comes back stamped, so the
/// feed's first messages are stamped too. (A loopback TCP socket with `SO_TIMESTAMPING`.)
#[derive(Debug)]
pub struct Keeper(#[expect(dead_code, reason = "held for its option, never read")] TcpStream);

impl Keeper {
    /// Asks the kernel to timestamp received segments from now on, and waits until it does
    /// (about 100 ms at most; past that the keeper is returned all the same).
    pub fn new() -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let mut sender = TcpStream::connect(listener.local_addr()?)?;
        let (receiver, _) = listener.accept()?;
        enable(&receiver)?;
        receiver.set_read_timeout(Some(Duration::from_millis(10)))?;
        let mut buf = [0u8; 16];
        for _ in 0..100 {
            sender.write_all(b"t")?;
            if let Ok((_, Some(_))) = recv(&receiver, &mut buf) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(Self(receiver))
    }
}

/// Room for the control messages: one `SCM_TIMESTAMPING` (three `timespec`s) with its header,
/// and headroom; `u64`s for the alignment `cmsghdr` needs.
const CONTROL_WORDS: usize = 12;

/// Reads into `buf` like `read(2)`, and returns the receive time (ns) of the data read, when
/// the kernel attached one: the NIC's hardware time where it stamped, else the kernel's
/// software time (ns since the Unix epoch).
pub fn recv(socket: &impl AsFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    let mut control = [0u64; CONTROL_WORDS];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: `msghdr` is plain data, all-zero is a valid value (no name, no iovec yet).
    let mut msg: libc::msghdr = unsafe { MaybeUninit::zeroed().assume_init() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of::<[u64; CONTROL_WORDS]>() as _;
    // SAFETY: the descriptor is borrowed; `iov` points into `buf`, writable for its length;
    // `msg_control` points at `control`, writable for `msg_controllen` bytes; all outlive the
    // call.
    let n = unsafe { libc::recvmsg(socket.as_fd().as_raw_fd(), &raw mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut kernel = None;
    // SAFETY: `msg` is the header `recvmsg` filled: its `msg_controllen` is the length of the
    // control messages it wrote into `control`, which the CMSG_* macros stay within.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&raw const msg) };
    while !cmsg.is_null() {
        // SAFETY: CMSG_FIRSTHDR / CMSG_NXTHDR return null or a header inside `control`,
        // aligned for `cmsghdr`.
        let header = unsafe { &*cmsg };
        // SAFETY: computes a length only.
        let wanted = unsafe { libc::CMSG_LEN(size_of::<[libc::timespec; 3]>() as u32) } as usize;
        if header.cmsg_level == libc::SOL_SOCKET
            && header.cmsg_type == libc::SCM_TIMESTAMPING
            && header.cmsg_len as usize >= wanted
        {
            // SAFETY: the message's length covers three `timespec`s after its header (checked
            // above); `read_unaligned` needs no alignment of the data.
            let times: [libc::timespec; 3] =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            // [0]: software; [2]: raw hardware, zero when the NIC did not stamp.
            kernel = [times[2], times[0]]
                .into_iter()
                .find(|time| time.tv_sec != 0 || time.tv_nsec != 0)
                .map(|time| time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64);
        }
        // SAFETY: `cmsg` is a header of `msg`'s control buffer (see above).
        cmsg = unsafe { libc::CMSG_NXTHDR(&raw const msg, cmsg) };
    }
    Ok((n as usize, kernel))
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn a_read_with_timestamps_on_gives_the_bytes_and_a_kernel_time_after_the_send() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let _keeper = super::Keeper::new().unwrap();
        super::enable(&server).unwrap();
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        client.write_all(b"hello").unwrap();
        let mut buf = [0u8; 16];
        let (n, kernel) = super::recv(&server, &mut buf).unwrap();
        let after = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        assert_eq!(&buf[..n], b"hello");
        let kernel = kernel.expect("a kernel timestamp");
        assert!(
            kernel >= before && kernel <= after,
            "{before} <= {kernel} <= {after}"
        );
        // Without the option: the bytes, no time.
        let mut other = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        other.write_all(b"x").unwrap();
        let (n, kernel) = super::recv(&server, &mut buf).unwrap();
        assert_eq!((&buf[..n], kernel), (&b"x"[..], None));
    }

    #[test]
    fn a_keeper_returns_once_the_kernel_stamps_packets() {
        let _keeper = super::Keeper::new().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        super::enable(&server).unwrap();
        client.write_all(b"t").unwrap();
        let mut buf = [0u8; 1];
        let (_, kernel) = super::recv(&server, &mut buf).unwrap();
        assert!(kernel.is_some());
    }
}
