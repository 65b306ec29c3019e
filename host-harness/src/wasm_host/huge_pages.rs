//! Plugin linear memory that the kernel may back with 2 MiB pages (Linux).
//!
//! A plugin's first look at a large registry writes some 20 MB of fresh linear memory, one
//! page fault per 4 KiB page. Marked `MADV_HUGEPAGE`, the reservation is eligible for
//! transparent huge pages even where the system's default is `madvise` (the common one), so
//! the kernel faults 2 MiB at a time. The layout is wasmtime's own: a guard, the reservation
//! and a guard after it, all mapped inaccessible up front; the accessible part grows in place
//! and never moves; everything is unmapped on drop.

use std::ptr::NonNull;

use wasmtime::{LinearMemory, MemoryCreator, MemoryType, Result, bail, format_err};

/// Creates the linear memory of each instance an engine configured with it makes (not a
/// host's `wasmtime::Memory`, which the harness never makes).
pub struct HugePageMemories;

// SAFETY: each memory maps `guard + reserved + guard` bytes inaccessible before it is handed
// out, makes only `[0, byte_size)` (rounded up to a host page) of the reservation accessible,
// never moves, and is zero-filled (fresh anonymous pages): what `MemoryCreator` requires for
// compiled code that elides bounds checks against the reservation and its guards.
unsafe impl MemoryCreator for HugePageMemories {
    fn new_memory(
        &self,
        _ty: MemoryType,
        minimum: usize,
        _maximum: Option<usize>,
        reserved_size_in_bytes: Option<usize>,
        guard_size_in_bytes: usize,
    ) -> std::result::Result<Box<dyn LinearMemory>, String> {
        // Compiled code leaves out bounds checks by the engine's reservation, not by what a
        // creator maps: a memory must reserve exactly that. Wasmtime 48 always passes it for
        // an instance's memory (re-check on an upgrade).
        let Some(reserved) = reserved_size_in_bytes else {
            return Err("a plugin's linear memory needs the engine's reservation".into());
        };
        HugePageMemory::new(minimum, reserved, guard_size_in_bytes)
            .map(|memory| Box::new(memory) as Box<dyn LinearMemory>)
            .map_err(|e| format!("reserving a plugin's linear memory: {e}"))
    }
}

struct HugePageMemory {
    /// Where the mapping starts: the guard before the memory.
    start: NonNull<u8>,
    /// The memory's first byte, a guard after `start`.
    base: NonNull<u8>,
    /// Bytes the plugin sees.
    size: usize,
    /// Bytes mapped readable and writable from `base`: `size` rounded up to a host page.
    accessible: usize,
    /// Bytes the memory may grow to in place.
    reserved: usize,
    /// Bytes mapped from `start`: the guard, `reserved` and the guard after it.
    mapped: usize,
}

// SAFETY: this value alone owns the mapping, and mprotect and munmap may be called from any
// thread.
unsafe impl Send for HugePageMemory {}
// SAFETY: `&self` methods only read the sizes and the base address.
unsafe impl Sync for HugePageMemory {}

impl HugePageMemory {
    fn new(minimum: usize, reserved: usize, guard: usize) -> Result<Self> {
        let page = page_size();
        let reserved = round_up(reserved, page)?;
        let guard = round_up(guard, page)?;
        let mapped = guard
            .checked_add(reserved)
            .and_then(|bytes| bytes.checked_add(guard))
            .filter(|&mapped| mapped > 0)
            .ok_or_else(|| {
                format_err!(
                    "a reservation of {reserved} bytes between guards of {guard} bytes cannot be mapped"
                )
            })?;
        if minimum > reserved {
            bail!("a minimum of {minimum} bytes is more than the reservation of {reserved} bytes");
        }
        // SAFETY: a fresh private anonymous mapping at an address the kernel chooses; nothing
        // else refers to it.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return Err(format_err!("{}", std::io::Error::last_os_error()));
        }
        let start: NonNull<u8> =
            NonNull::new(start.cast()).ok_or_else(|| format_err!("mmap returned null"))?;
        // SAFETY: `guard` bytes into the mapping, which is longer.
        let base = unsafe { start.add(guard) };
        let mut memory = Self {
            start,
            base,
            size: 0,
            accessible: 0,
            reserved,
            mapped,
        };
        // Advice only: a kernel without transparent huge pages keeps 4 KiB pages.
        // SAFETY: the range is this mapping's.
        unsafe {
            libc::madvise(base.as_ptr().cast(), reserved, libc::MADV_HUGEPAGE);
        }
        memory.grow_to(minimum)?;
        Ok(memory)
    }
}

impl Drop for HugePageMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.start.as_ptr().cast(), self.mapped);
        }
    }
}

// SAFETY: see `HugePageMemories`: the base never moves and only `[0, accessible)` from it is
// mapped readable and writable, `accessible` covering `byte_size`.
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
            // SAFETY: `[self.accessible, accessible)` from the base lies inside the reservation
            // (`accessible` is at most `reserved`, itself page-aligned), and starts on a page.
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

    fn memory(minimum: usize, reserved: usize, guard: usize) -> HugePageMemory {
        HugePageMemory::new(minimum, reserved, guard).expect("a memory is reserved")
    }

    /// The lines `/proc/self/smaps` (or `maps`) gives the mapping that holds `address`: the
    /// one that names its range, and those after it up to the next range's.
    fn mapping_at(address: usize, file: &str) -> Vec<String> {
        let range_of = |line: &str| -> Option<std::ops::Range<usize>> {
            let (start, end) = line.split(' ').next()?.split_once('-')?;
            Some(usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?)
        };
        let text = std::fs::read_to_string(file).expect("/proc/self is read");
        let mut lines = text
            .lines()
            .skip_while(|line| range_of(line).is_none_or(|range| !range.contains(&address)));
        let Some(first) = lines.next() else {
            return Vec::new();
        };
        std::iter::once(first)
            .chain(lines.take_while(|line| range_of(line).is_none()))
            .map(str::to_string)
            .collect()
    }

    /// The permissions of the mapping that holds `address`.
    fn permissions_at(address: usize) -> String {
        mapping_at(address, "/proc/self/maps")
            .first()
            .and_then(|line| line.split(' ').nth(1))
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn a_memory_grows_in_place_up_to_its_reservation_and_is_zeroed() {
        let mut memory = memory(64 * KIB, 1024 * KIB, 64 * KIB);
        let base = memory.as_ptr();
        assert_eq!(memory.byte_size(), 64 * KIB);
        assert_eq!(memory.byte_capacity(), 1024 * KIB);
        // A size that is no whole page, then a larger one: each growth starts on a page.
        let mut before = memory.byte_size();
        for size in [100 * KIB + 1, 256 * KIB] {
            memory.grow_to(size).expect("growth within the reservation");
            assert_eq!(memory.as_ptr(), base, "the base never moves");
            assert_eq!(memory.byte_size(), size);
            // SAFETY: `[0, byte_size)` is mapped readable and writable.
            let bytes = unsafe { std::slice::from_raw_parts_mut(base, memory.byte_size()) };
            let fresh = &bytes[before..];
            assert!(fresh.iter().all(|&b| b == 0), "fresh memory reads as zeros");
            bytes[size - 1] = 7;
            before = size;
        }
        memory.grow_to(256 * KIB).expect("growth to the same size");
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
            .grow_to(100 * KIB + 1)
            .expect("growth within the reservation");
        assert_eq!(memory.mapped, guard + reserved + guard);
        let (start, base) = (memory.start.as_ptr() as usize, memory.as_ptr() as usize);
        assert_eq!(start + guard, base);
        // Rounded up to a page, not past it; the guard before, the rest of the reservation
        // and the guard after it are mapped inaccessible, which compiled code relies on in
        // place of bounds checks. Every address read is inside this memory's own mapping
        // (`start` to `start + mapped`, above), so no neighbour's can answer for it.
        let accessible = (100 * KIB + 1).next_multiple_of(page_size());
        assert!(
            permissions_at(base).starts_with("rw"),
            "{}",
            permissions_at(base)
        );
        assert!(permissions_at(base + accessible - 1).starts_with("rw"));
        for address in [
            start,
            base - 1,
            base + accessible,
            base + reserved + guard - 1,
        ] {
            assert_eq!(permissions_at(address), "---p", "at {address:#x}");
        }
    }

    #[test]
    fn the_reservation_is_marked_for_huge_pages() {
        let memory = memory(64 * KIB, 4096 * KIB, 64 * KIB);
        let mapping = mapping_at(memory.as_ptr() as usize + 2048 * KIB, "/proc/self/smaps");
        let flags = mapping
            .iter()
            .find(|line| line.starts_with("VmFlags:"))
            .expect("smaps gives the mapping's flags");
        assert!(flags.split(' ').any(|flag| flag == "hg"), "{flags}");
    }

    #[test]
    fn a_memory_without_the_engines_reservation_is_refused() {
        let refused = HugePageMemories.new_memory(
            MemoryType::new(1, Some(2)),
            64 * KIB,
            Some(128 * KIB),
            None,
            64 * KIB,
        );
        assert!(refused.is_err());
    }
}
