//! `--memory-limit`: the binary's global allocator ([`Counting`]), which counts the heap
//! bytes allocated since a command armed a limit ([`arm`]) and, when one more allocation
//! would exceed it, writes the command's message to standard error and ends the process
//! with exit status 1 — before the allocation is made; and the one size grammar of the
//! command line ([`parse_size`]: `512MiB`, `4G`, `1.5GiB`, `none`).
//!
//! Only `logscope sql` arms a limit (polars has none of its own: a cross join would take
//! whatever the machine has). Disarmed, the allocator is the system allocator plus one
//! relaxed load per call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// The global allocator of the `logscope` binary (`#[global_allocator]` in main.rs):
/// the system allocator, counting once a limit is armed.
pub struct Counting;

/// Whether a limit is armed.
static ARMED: AtomicBool = AtomicBool::new(false);
/// Bytes allocated minus bytes freed since the limit was armed (memory freed that was
/// allocated before counts too, so this may go below zero: the limit then bounds the
/// growth after arming, which is what it is for).
static LIVE: AtomicIsize = AtomicIsize::new(0);
/// The armed limit in bytes.
static LIMIT: AtomicIsize = AtomicIsize::new(isize::MAX);
/// Set by the first allocation over the limit: only that one reports.
static TRIPPED: AtomicBool = AtomicBool::new(false);
/// The message written when the limit is hit (a whole line), made when armed so that
/// nothing is allocated while reporting.
static MESSAGE: OnceLock<Box<[u8]>> = OnceLock::new();

/// The exit status when the limit is hit: an error, nothing written.
pub const EXIT: i32 = super::exit::ERROR;

/// Arms `limit` bytes for the rest of the process: from now on, an allocation that
/// would bring the bytes allocated since (minus those freed) above it writes `message`
/// (a line; a newline is added) to standard error and exits with [`EXIT`]. Returns false
/// (and arms nothing) when a limit was armed already.
pub fn arm(limit: u64, message: &str) -> bool {
    let mut m = message.as_bytes().to_vec();
    m.push(b'\n');
    if MESSAGE.set(m.into_boxed_slice()).is_err() {
        return false;
    }
    LIMIT.store(
        isize::try_from(limit).unwrap_or(isize::MAX),
        Ordering::Relaxed,
    );
    LIVE.store(0, Ordering::Relaxed);
    ARMED.store(true, Ordering::SeqCst);
    true
}

/// Counts `n` more bytes about to be allocated; ends the process when they exceed the
/// limit.
#[inline]
fn grow(n: usize) {
    if ARMED.load(Ordering::Relaxed) {
        let n = n as isize;
        let now = LIVE.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if now > LIMIT.load(Ordering::Relaxed) {
            over_limit();
        }
    }
}

/// Counts `n` bytes freed (or not allocated after all).
#[inline]
fn shrink(n: usize) {
    if ARMED.load(Ordering::Relaxed) {
        LIVE.fetch_sub(n as isize, Ordering::Relaxed);
    }
}

/// Writes the message and exits, allocating nothing (this runs inside the allocator,
/// possibly on any thread). A second thread over the limit meanwhile waits for the exit.
#[cold]
#[inline(never)]
fn over_limit() -> ! {
    if TRIPPED.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    let msg: &[u8] = MESSAGE
        .get()
        .map_or(b"logscope: error: out of memory (--memory-limit)\n", |m| m);
    report_and_exit(msg)
}

#[cfg(unix)]
fn report_and_exit(mut msg: &[u8]) -> ! {
    while !msg.is_empty() {
        // SAFETY: writes bytes of a live slice to standard error; no allocation.
        let n = unsafe { libc::write(libc::STDERR_FILENO, msg.as_ptr().cast(), msg.len()) };
        if n > 0 {
            msg = &msg[(n as usize).min(msg.len())..];
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {
            continue;
        } else {
            break;
        }
    }
    // SAFETY: _exit ends the process at once (no atexit handlers, no unwinding, no
    // buffered standard output half-flushed by another thread's destructor).
    unsafe { libc::_exit(EXIT) }
}

#[cfg(not(unix))]
fn report_and_exit(msg: &[u8]) -> ! {
    use std::io::Write;
    let _ = std::io::stderr().write_all(msg);
    std::process::exit(EXIT)
}

// SAFETY: every call is forwarded to the system allocator with the same arguments; the
// counting around it only reads and writes atomics (and, over the limit, exits).
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grow(layout.size());
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            shrink(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grow(layout.size());
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            shrink(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) };
        shrink(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old {
            grow(new_size - old);
        }
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            if new_size > old {
                shrink(new_size - old);
            }
        } else if new_size < old {
            shrink(old - new_size);
        }
        p
    }
}

/// A size on the command line: a number (decimals allowed) and a unit — none or `B`
/// for bytes; `K`, `KiB`, `M`, `MiB`, `G`, `GiB`, `T`, `TiB` for powers of 1024; `KB`,
/// `MB`, `GB`, `TB` for powers of 1000 (case-insensitive, a space allowed before the
/// unit). Rounded down to whole bytes; zero is refused.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim_start();
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(size_error(s)),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(size_error(s));
    }
    let int: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| size_error(s))?
    };
    let mut bytes = int.checked_mul(mult).ok_or_else(|| size_error(s))?;
    // The fraction, exactly (rounded down): digits × mult / 10^digits.
    let frac = frac.trim_end_matches('0');
    if !frac.is_empty() {
        if frac.len() > 18 {
            return Err(size_error(s));
        }
        let num: u128 = frac.parse().map_err(|_| size_error(s))?;
        let part = num * u128::from(mult) / 10u128.pow(frac.len() as u32);
        bytes = u64::try_from(part)
            .ok()
            .and_then(|p| bytes.checked_add(p))
            .ok_or_else(|| size_error(s))?;
    }
    if bytes == 0 {
        return Err(format!(
            "invalid size {s:?}: it must be more than 0 bytes (e.g. 512MiB, 4GiB; `none` for no limit)"
        ));
    }
    Ok(bytes)
}

fn size_error(s: &str) -> String {
    format!(
        "invalid size {s:?}: expected a number and a unit, e.g. 512MiB, 4GiB, 1.5G (K/KiB, M/MiB, G/GiB, T/TiB are powers of 1024; KB, MB, GB, TB of 1000)"
    )
}

/// `bytes` for a message: `64 MiB`, `4 GiB`, `1.5 GiB`, `1000000 B`.
pub fn size_label(bytes: u64) -> String {
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        let u = 1u64 << shift;
        if bytes >= u {
            return if bytes.is_multiple_of(u) {
                format!("{} {unit}", bytes / u)
            } else {
                format!("{:.1} {unit}", bytes as f64 / u as f64)
            };
        }
    }
    format!("{bytes} B")
}

/// The machine's physical memory in bytes, if known.
pub fn physical_memory() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads system configuration.
        let (pages, size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && size > 0 {
            return (pages as u64).checked_mul(size as u64);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("512 mib"), Ok(512 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("4GB"), Ok(4_000_000_000));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size(".5K"), Ok(512));
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("100B"), Ok(100));
        assert_eq!(parse_size("16TiB"), Ok(16 << 40));
        assert_eq!(parse_size("0.1K"), Ok(102));
        assert_eq!(parse_size("2.50MB"), Ok(2_500_000));
        for bad in [
            "",
            "G",
            "0",
            "0.0001B",
            "-1G",
            "1..5G",
            "1.2.3G",
            "4 GiBs",
            "NaN",
            "1e9",
            "99999999999999999999",
            "20000000T",
            "é",
            "1 G B",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn labels() {
        assert_eq!(size_label(64 << 20), "64 MiB");
        assert_eq!(size_label(4 << 30), "4 GiB");
        assert_eq!(size_label(3 << 29), "1.5 GiB");
        assert_eq!(size_label(1000), "1000 B");
    }
}
