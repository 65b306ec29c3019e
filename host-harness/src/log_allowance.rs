//! What one call into a plugin may write to the shell's log. A plugin's `log` import runs
//! inside its call, where nothing else bounds it: a loop of 4 KiB lines wrote 0.7 MB to
//! stderr in one 50 ms call and 28 MB in one configure. The shell opens an allowance when it
//! calls a plugin and closes it after, saying in one line what was held back; the plugin's
//! in-memory ring of recent lines keeps every line as before.
//!
//! 64 KiB and 256 lines: lazy-tools writes a few short lines in its busiest call, and 256
//! lines (what the ring keeps) are pages of a terminal, so no plugin that means to be read
//! meets either; the line count bounds the per-line overhead (time, level, plugin) of many
//! tiny lines, which the byte count alone would not.

use std::fmt;

/// The most bytes of log text (as shown, escaped) one plugin call may write.
pub const MAX_LOG_BYTES_PER_CALL: usize = 64 << 10;

/// The most log lines one plugin call may write.
pub const MAX_LOG_LINES_PER_CALL: usize = 256;

/// The allowance of the plugin call in progress, if the shell opened one.
#[derive(Debug, Default)]
pub struct LogAllowance {
    /// Outside a call the shell opened (the native baseline, a test calling an instance
    /// directly), lines are not counted.
    open: bool,
    lines: usize,
    bytes: usize,
    held_back: HeldBack,
}

/// The log lines a call wrote past its allowance.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HeldBack {
    pub lines: usize,
    pub bytes: usize,
}

impl fmt::Display for HeldBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} more log lines ({} bytes) were not shown: one call may write {} lines or {} KiB",
            self.lines,
            self.bytes,
            MAX_LOG_LINES_PER_CALL,
            MAX_LOG_BYTES_PER_CALL >> 10
        )
    }
}

impl LogAllowance {
    /// A fresh allowance for a call that starts now.
    pub fn open(&mut self) {
        *self = Self {
            open: true,
            ..Self::default()
        };
    }

    /// Whether a line of `bytes` may be written; one that may not is counted as held back.
    pub fn admit(&mut self, bytes: usize) -> bool {
        if !self.open {
            return true;
        }
        if self.lines < MAX_LOG_LINES_PER_CALL && self.bytes + bytes <= MAX_LOG_BYTES_PER_CALL {
            self.lines += 1;
            self.bytes += bytes;
            return true;
        }
        self.held_back.lines += 1;
        self.held_back.bytes += bytes;
        false
    }

    /// Ends the call's allowance: what it held back, if anything.
    pub fn close(&mut self) -> Option<HeldBack> {
        let held_back = self.held_back;
        *self = Self::default();
        (held_back.lines > 0).then_some(held_back)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_writes_up_to_its_allowance_and_counts_the_rest() {
        let mut allowance = LogAllowance::default();
        // No call open: nothing is counted.
        assert!((0..1_000).all(|_| allowance.admit(4096)));
        assert_eq!(allowance.close(), None);

        allowance.open();
        let admitted = (0..100).filter(|_| allowance.admit(4096)).count();
        assert_eq!(admitted, MAX_LOG_BYTES_PER_CALL / 4096);
        let held_back = allowance.close().unwrap();
        assert_eq!(
            held_back,
            HeldBack {
                lines: 84,
                bytes: 84 * 4096
            }
        );

        allowance.open();
        let admitted = (0..1_000).filter(|_| allowance.admit(1)).count();
        assert_eq!(admitted, MAX_LOG_LINES_PER_CALL);
        assert_eq!(
            allowance.close().unwrap().lines,
            1_000 - MAX_LOG_LINES_PER_CALL
        );
    }
}
