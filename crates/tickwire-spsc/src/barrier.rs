//! The two fences of the wake-up handshake: a cheap one for the end that runs on every send and
//! receive, and an expensive one for the end that is about to park.
//!
//! This module owns the choice of those fences and the one system call behind it. It does not
//! own the handshake itself (the `parked` flags and what is loaded after each fence): that is
//! [`crate::wait`]'s, and its module docs argue why the handshake needs a full barrier on both
//! sides.
//!
//! # Why two different fences
//!
//! The handshake is a Dekker pattern: each side stores its own state, then loads the other's,
//! and a store must not be ordered after the later load. The portable answer is a `SeqCst` fence
//! on both sides ([`Fences::Symmetric`]). On x86 that is a locked instruction that waits for the
//! store buffer to drain, and the store just made is to the queue position the other core is
//! reading: measured here, that fence made the channel's one-way throughput several times lower
//! than the bare queue's.
//!
//! The two sides are not equally frequent: the fence after a push or pop runs on every message,
//! the one before a park only after the waiter has spun and yielded and is about to sleep in the
//! kernel anyway. Linux's `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` moves the whole cost to
//! the rare side ([`Fences::Asymmetric`]): it returns only after every other running thread of
//! the process has executed a full memory barrier (an interrupt to each CPU running one; a
//! thread not running passes through the scheduler's barrier when it is switched back in). For
//! the frequent side it is then enough that the compiler keeps its store before its load in
//! program order, which a `compiler_fence(SeqCst)` does and which costs no instruction.
//!
//! Why that is as good as two fences. Let the waiter do: store `parked`; `membarrier`; load the
//! queue. Let the other end do: store the queue; compiler fence; load `parked`. The kernel puts
//! a full barrier `B` into the other end's instruction stream at some point while the waiter is
//! inside `membarrier`, after the waiter's store of `parked` is visible (the system call starts
//! with a full barrier) and before the waiter's load (it waits for `B` and ends with one).
//! - If `B` falls after the other end's store of the queue (before or after its load of
//!   `parked`), that store is visible once `B` has run, so the waiter's load sees it and the
//!   waiter does not park.
//! - If `B` falls before that store, the load of `parked` comes after `B` too, and `B` comes
//!   after `parked = true` became visible: the other end sees the flag and unparks the waiter.
//!
//! This is the "asymmetric fence" the `membarrier(2)` man page was written for (userspace RCU,
//! folly's `asymmetricHeavyBarrier`). In the terms of the Rust memory model the light side is a
//! `compiler_fence`, which orders against a fence in a signal handler on its own thread; the
//! kernel's interrupt plays that handler.
//!
//! # Where the asymmetric pair is used
//!
//! Only where the kernel offers it, decided once per process by [`fences`]:
//! - Linux with `MEMBARRIER_CMD_PRIVATE_EXPEDITED` (4.14 and later), which the process registers
//!   for once, the first time a parking channel is made. Anything else (an older kernel, a
//!   seccomp filter that refuses the call, another OS) gets the symmetric fences.
//! - Never under loom or Miri: neither can model an interrupt that runs a fence on another
//!   thread. The loom models therefore check the handshake with [`Fences::Symmetric`]; the
//!   substitution above is the kernel's contract. The stress tests run the asymmetric pair on
//!   real cores, but they cannot prove it: with the `membarrier` call removed, the test that
//!   parks on every wait still passed 300 000 round trips (the race window is nanoseconds).
//!
//! The price of the heavy side: each park (and each pending async receive) interrupts, for about
//! a microsecond, every CPU that is running another thread of the process at that moment.

use crate::sync::{Ordering, seq_cst_fence};

/// Which pair of fences the wake-up handshake uses. Both ends of a channel hold the same value,
/// chosen when the channel is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fences {
    /// `fence(SeqCst)` on both sides.
    Symmetric,
    /// A compiler fence on the frequent side, `membarrier` on the parking side. Never made
    /// where [`fences`] cannot register (loom, Miri, other OSes).
    #[cfg_attr(not(all(target_os = "linux", not(loom), not(miri))), allow(dead_code))]
    Asymmetric,
}

impl Fences {
    /// The fence after a push, pop or drop, before loading the other end's `parked` flag.
    #[inline(always)]
    pub(crate) fn light(self) {
        match self {
            Self::Symmetric => seq_cst_fence(),
            // Keeps the store before the load in program order; the heavy side supplies the
            // barrier at run time (module docs).
            Self::Asymmetric => core::sync::atomic::compiler_fence(Ordering::SeqCst),
        }
    }

    /// The fence after storing `parked = true`, before re-checking the queue. Returns `false`
    /// if it could not be issued, in which case the caller must not park (it yields instead and
    /// checks again; see [`heavy_barrier`]).
    #[must_use]
    pub(crate) fn heavy(self) -> bool {
        match self {
            Self::Symmetric => {
                seq_cst_fence();
                true
            }
            Self::Asymmetric => {
                let issued = heavy_barrier();
                // Also order this thread's own accesses, whatever the system call does.
                seq_cst_fence();
                issued
            }
        }
    }
}

/// The fences for a channel made now: [`Fences::Asymmetric`] if this process is (or could now
/// be) registered for private expedited `membarrier`, else [`Fences::Symmetric`]. The first call
/// in a process that gets `Asymmetric` pays for the registration, later ones a relaxed load.
pub(crate) fn fences() -> Fences {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    {
        if membarrier::registered() {
            return Fences::Asymmetric;
        }
    }
    Fences::Symmetric
}

/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`. `false` if the kernel refused it, which
/// cannot happen once the registration in [`fences`] succeeded (its only errors are an unknown
/// command and a missing registration). The caller then treats the handshake as undecided and
/// does not park, so a refusal costs CPU time, never a lost wake-up.
fn heavy_barrier() -> bool {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    {
        membarrier::private_expedited()
    }
    #[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
    {
        false
    }
}

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod membarrier {
    use std::sync::atomic::{AtomicU8, Ordering};

    // From the kernel's `include/uapi/linux/membarrier.h`; the libc crate has the system call
    // number but not these.
    const CMD_QUERY: libc::c_long = 0;
    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    const UNKNOWN: u8 = 0;
    const YES: u8 = 1;
    const NO: u8 = 2;

    /// Whether this process is registered, once [`registered`] has asked.
    static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

    fn call(command: libc::c_long) -> libc::c_long {
        // SAFETY: `membarrier(cmd, flags, cpu_id)` takes three integers and touches no memory
        // of ours; an unknown command or a refusal is an error return (-1 and errno), never
        // undefined behaviour.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                command,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    /// Registers the process for private expedited barriers the first time it is asked, and
    /// says whether it is registered. Two threads asking at once may both register: the
    /// registration is idempotent.
    pub(super) fn registered() -> bool {
        // Relaxed: the value is only a cache of what the kernel says; a thread that sees
        // UNKNOWN asks the kernel itself.
        match STATE.load(Ordering::Relaxed) {
            YES => return true,
            NO => return false,
            _ => {}
        }
        let supported = call(CMD_QUERY);
        let yes = supported >= 0
            && supported & CMD_PRIVATE_EXPEDITED != 0
            && supported & CMD_REGISTER_PRIVATE_EXPEDITED != 0
            && call(CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
        STATE.store(if yes { YES } else { NO }, Ordering::Relaxed);
        yes
    }

    pub(super) fn private_expedited() -> bool {
        call(CMD_PRIVATE_EXPEDITED) == 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// On a Linux kernel that offers private expedited barriers (4.14 and later, which is what
    /// CI runs on), channels get the cheap fence on their hot path; anywhere else, or under
    /// Miri, the symmetric pair. Either way the heavy fence can be issued.
    #[test]
    fn channels_get_the_asymmetric_fences_where_the_kernel_offers_them() {
        let fences = fences();
        #[cfg(all(target_os = "linux", not(miri)))]
        {
            const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
            // SAFETY: MEMBARRIER_CMD_QUERY takes no pointer; it returns a bit mask or -1.
            let offered = unsafe { libc::syscall(libc::SYS_membarrier, 0, 0, 0) };
            let expected = if offered >= 0 && offered & CMD_PRIVATE_EXPEDITED != 0 {
                Fences::Asymmetric
            } else {
                Fences::Symmetric
            };
            assert_eq!(fences, expected, "membarrier query answered {offered:#x}");
        }
        #[cfg(not(all(target_os = "linux", not(miri))))]
        assert_eq!(fences, Fences::Symmetric);
        assert!(fences.heavy(), "{fences:?}: the heavy fence was refused");
        assert_eq!(super::fences(), fences, "the choice does not change");
    }
}
