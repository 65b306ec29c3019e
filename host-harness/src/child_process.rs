//! What the harness does to the programs it starts (MCP servers, git): each runs in a process
//! group of its own, so that stopping it stops what it started (npx's node, git's ssh), and on
//! Linux dies with the harness.

use std::os::unix::process::CommandExt as _;
use std::process::Command;

/// Makes `command` start in a process group of its own, which [`signal_group`] reaches whole.
pub fn own_group(command: &mut Command) -> &mut Command {
    command.process_group(0)
}

/// Has the kernel kill the child (its process, not its group) when the harness ends without
/// stopping it: killed by SIGKILL, or stopped by a second Ctrl-C. Strictly, when the thread
/// that spawned it ends: callers spawn from threads that outlive the child.
#[cfg(target_os = "linux")]
pub fn die_with_parent(command: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and only makes the
    // async-signal-safe calls prctl(2) and getppid(2).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            // The harness ended before the signal was set: nothing would send it.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(std::io::Error::other("the harness ended"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(_command: &mut Command) {}

/// Sends `signal` to the process group of the child `pid` started with [`own_group`].
pub fn signal_group(pid: u32, signal: i32) {
    let Ok(pid) = i32::try_from(pid) else { return };
    if pid > 0 {
        // SAFETY: kill(2) with a negative pid signals that process group; it has no memory
        // effects. The group is the one this process made for the child.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}
