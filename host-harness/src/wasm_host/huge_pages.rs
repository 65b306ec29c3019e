//! Plugin linear memory that the kernel may back with 2 MiB pages (Linux).
//!
//! A plugin's first look at a large registry writes some 20 MB of fresh linear memory, one
//! page fault per 4 KiB page. Marked `MADV_HUGEPAGE`, the reservation is eligible for
//! transparent huge pages even where the system's default is `madvise` (the common one), so
//! the kernel faults 2 MiB at a time. Everything else is what wasmtime's own memories do: the
//! whole reservation and its guard are mapped inaccessible up front, the accessible part grows
//! in place and never moves, and unmapping happens on drop.

use std::ptr::NonNull;

use wasmtime::{LinearMemory, MemoryCreator, MemoryType, Result, bail, format_err};

/// Creates every linear memory of an engine configured with it.
pub struct HugePageMemories;

// SAFETY: each memory reserves `reserved + guard` bytes inaccessible before it is handed out,
// makes only `[0, byte_size)` (rounded up to a host page) accessible, never moves, and is
// zero-filled (fresh anonymous pages): what `MemoryCreator` requires for compiled code that
// elides bounds checks against the guard.
unsafe impl MemoryCreator for HugePageMemories {
    fn new_memory(
        &self,
        _ty: MemoryType,
        minimum: usize,
        maximum: Option<usize>,
        reserved_size_in_bytes: Option<usize>,
        guard_size_in_bytes: usize,
    ) -> std::result::Result<Box<dyn LinearMemory>, String> {
        // Wasmtime passes its reservation for memories it allocates on demand; without one, the
        // memory is sized to its maximum (or its minimum), and never grows past it.
        let reserved = reserved_size_in_bytes.unwrap_or(maximum.unwrap_or(minimum).max(minimum));
        HugePageMemory::new(minimum, reserved, guard_size_in_bytes)
            .map(|memory| Box::new(memory) as Box<dyn LinearMemory>)
            .map_err(|e| format!("reserving a plugin's linear memory: {e}"))
    }
}

struct HugePageMemory {
    base: NonNull<u8>,
    /// Bytes the plugin sees.
    size: usize,
    /// Bytes mapped readable and writable: `size` rounded up to a host page.
    accessible: usize,
    /// Bytes the memory may grow to in place.
    reserved: usize,
    /// Bytes mapped: `reserved` and the guard after it.
    mapped: usize,
}

// SAFETY: the mapping is owned by this value alone; wasmtime serialises access to a memory.
unsafe impl Send for HugePageMemory {}
// SAFETY: as for `Send`: `&self` methods only read the sizes and the base address.
unsafe impl Sync for HugePageMemory {}

impl HugePageMemory {
    fn new(minimum: usize, reserved: usize, guard: usize) -> Result<Self> {
        let page = page_size();
        let reserved = round_up(reserved, page)?;
        let mapped = reserved
            .checked_add(round_up(guard, page)?)
            .filter(|&mapped| mapped > 0)
            .ok_or_else(|| {
                format_err!(
                    "a reservation of {reserved} bytes and a guard of {guard} bytes cannot be mapped"
                )
            })?;
        if minimum > reserved {
            bail!("a minimum of {minimum} bytes is more than the reservation of {reserved} bytes");
        }
        // SAFETY: a fresh private anonymous mapping at an address the kernel chooses; nothing
        // else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format_err!("{}", std::io::Error::last_os_error()));
        }
        let mut memory = Self {
            base: NonNull::new(base.cast()).ok_or_else(|| format_err!("mmap returned null"))?,
            size: 0,
            accessible: 0,
            reserved,
            mapped,
        };
        // Advice only: a kernel without transparent huge pages keeps 4 KiB pages.
        // SAFETY: the range is this mapping's.
        unsafe {
            libc::madvise(base, reserved, libc::MADV_HUGEPAGE);
        }
        memory.grow_to(minimum)?;
        Ok(memory)
    }
}

impl Drop for HugePageMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.mapped);
        }
    }
}

// SAFETY: see `HugePageMemories`: the base never moves and only `[0, accessible)` is mapped
// readable and writable, `accessible` covering `byte_size`.
unsafe impl LinearMemory for HugePageMemory {
    fn byte_size(&self) -> usize {
        self.size
    }

    fn byte_capacity(&self) -> usize {
        self.reserved
    }

    fn grow_to(&mut self, new_size: usize) -> Result<()> {
        if new_size > self.reserved {
            bail!(
                "a linear memory of {new_size} bytes is more than its reservation of {} bytes",
                self.reserved
            );
        }
        let accessible = round_up(new_size, page_size())?;
        if accessible > self.accessible {
            // SAFETY: `[self.accessible, accessible)` lies inside the reservation (`accessible`
            // is at most `reserved`, itself page-aligned).
            let made = unsafe {
                libc::mprotect(
                    self.base.as_ptr().add(self.accessible).cast(),
                    accessible - self.accessible,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            if made != 0 {
                return Err(format_err!("{}", std::io::Error::last_os_error()));
            }
            self.accessible = accessible;
        }
        self.size = self.size.max(new_size);
        Ok(())
    }

    fn as_ptr(&self) -> *mut u8 {
        self.base.as_ptr()
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(1)
}

fn round_up(bytes: usize, page: usize) -> Result<usize> {
    bytes
        .checked_next_multiple_of(page)
        .ok_or_else(|| format_err!("{bytes} bytes rounded up to a page overflows"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: usize = 1 << 10;

    fn memory(minimum: usize, reserved: usize, guard: usize) -> Box<dyn LinearMemory> {
        HugePageMemories
            .new_memory(
                MemoryType::new(0, None),
                minimum,
                None,
                Some(reserved),
                guard,
            )
            .expect("a memory is reserved")
    }

    /// The permissions `/proc/self/maps` gives the mapping that holds `address`.
    fn permissions_at(address: usize) -> String {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps is read");
        maps.lines()
            .find_map(|line| {
                let (range, rest) = line.split_once(' ')?;
                let (start, end) = range.split_once('-')?;
                let start = usize::from_str_radix(start, 16).ok()?;
                let end = usize::from_str_radix(end, 16).ok()?;
                (start..end)
                    .contains(&address)
                    .then(|| rest.split(' ').next().unwrap_or_default().to_string())
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_memory_grows_in_place_up_to_its_reservation_and_is_zeroed() {
        let mut memory = memory(64 * KIB, 1024 * KIB, 64 * KIB);
        let base = memory.as_ptr();
        assert_eq!(memory.byte_size(), 64 * KIB);
        assert_eq!(memory.byte_capacity(), 1024 * KIB);
        memory
            .grow_to(256 * KIB)
            .expect("growth within the reservation");
        assert_eq!(memory.as_ptr(), base, "the base never moves");
        assert_eq!(memory.byte_size(), 256 * KIB);
        // SAFETY: `[0, byte_size)` is mapped readable and writable.
        let bytes = unsafe { std::slice::from_raw_parts_mut(base, memory.byte_size()) };
        assert!(bytes.iter().all(|&b| b == 0), "fresh memory reads as zeros");
        bytes[256 * KIB - 1] = 7;
        assert!(
            memory.grow_to(1025 * KIB).is_err(),
            "no growth past the reservation"
        );
        assert_eq!(memory.byte_size(), 256 * KIB);
    }

    #[test]
    fn only_the_bytes_the_plugin_sees_are_accessible() {
        let (reserved, guard) = (1024 * KIB, 256 * KIB);
        let mut memory = memory(64 * KIB, reserved, guard);
        memory
            .grow_to(100 * KIB)
            .expect("growth within the reservation");
        let base = memory.as_ptr() as usize;
        assert!(
            permissions_at(base).starts_with("rw"),
            "{}",
            permissions_at(base)
        );
        // Rounded up to a page, not past it; the rest of the reservation and the guard are
        // mapped inaccessible, which compiled code relies on in place of bounds checks.
        let accessible = (100 * KIB).next_multiple_of(page_size());
        assert!(permissions_at(base + accessible - 1).starts_with("rw"));
        for inaccessible in [accessible, reserved - 1, reserved, reserved + guard - 1] {
            assert_eq!(
                permissions_at(base + inaccessible),
                "---p",
                "at {inaccessible}"
            );
        }
    }
}
