//! SIGINT, SIGTERM and SIGHUP (Ctrl-C, a `kill`, a closed terminal) end a command that runs MCP
//! servers (a session, `demo --live`, `bench mcp-startup`), not the harness: the command stops
//! where it is and stops its servers with what they started in their process groups (a session
//! also saves its state). Left to the signal's default, the harness would die and the kernel
//! would take down only the servers' own processes (`PR_SET_PDEATHSIG`), not what they started
//! (npx's node, a wrapper's helper). A second signal stops the harness at once, as Ctrl-C
//! always does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::mcp::Interrupt;

/// Whether an ending signal came, and what it reaches: the servers whose waits it ends, and
/// the session's input, which it wakes.
#[derive(Default)]
pub struct Ending {
    signalled: AtomicBool,
    reached: Mutex<Reached>,
}

#[derive(Default)]
struct Reached {
    servers: Option<Arc<Interrupt>>,
    wake: Option<Box<dyn Fn() + Send>>,
}

impl Ending {
    /// Catches the ending signals from now on; `then` runs on the signal's thread after each
    /// first one has been recorded.
    #[cfg(unix)]
    pub fn catch(then: impl Fn() + Send + 'static) -> std::io::Result<Arc<Self>> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        use signal_hook::iterator::Signals;

        let ending = Arc::new(Self::default());
        // The order matters: the second signal (of any of them) finds the flag the first set.
        let second = Arc::new(AtomicBool::new(false));
        let signals = [SIGINT, SIGTERM, SIGHUP];
        for signal in signals {
            signal_hook::flag::register_conditional_default(signal, Arc::clone(&second))?;
        }
        for signal in signals {
            signal_hook::flag::register(signal, Arc::clone(&second))?;
        }
        let mut caught = Signals::new(signals)?;
        let recorded = Arc::clone(&ending);
        std::thread::spawn(move || {
            for _ in caught.forever() {
                recorded.signalled.store(true, Ordering::SeqCst);
                {
                    let reached = recorded.lock();
                    if let Some(servers) = &reached.servers {
                        servers.set();
                    }
                    if let Some(wake) = &reached.wake {
                        wake();
                    }
                }
                then();
            }
        });
        Ok(ending)
    }

    #[cfg(not(unix))]
    pub fn catch(_then: impl Fn() + Send + 'static) -> std::io::Result<Arc<Self>> {
        Ok(Arc::default())
    }

    /// From now on (or at once, if a signal came already), a signal ends the waits of
    /// `servers`' calls and starts.
    pub fn watch(&self, servers: Arc<Interrupt>) {
        let mut reached = self.lock();
        if self.signalled() {
            servers.set();
        }
        reached.servers = Some(servers);
    }

    /// From now on, a signal also runs `wake` (a session waiting for a line is woken); one
    /// that came already is for the session to see in [`Ending::signalled`].
    pub fn wake_with(&self, wake: impl Fn() + Send + 'static) {
        self.lock().wake = Some(Box::new(wake));
    }

    pub fn signalled(&self) -> bool {
        self.signalled.load(Ordering::SeqCst)
    }

    /// What a command that a signal may have cut short did: once a signal came, the
    /// interruption (`interrupted`), whatever `ran` says (a server call or an install the
    /// signal ended fails, and that failure is the signal's); else `ran`.
    pub fn outcome<T>(&self, ran: anyhow::Result<T>, interrupted: &str) -> anyhow::Result<T> {
        if self.signalled() {
            anyhow::bail!("{interrupted}");
        }
        ran
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reached> {
        self.reached.lock().unwrap_or_else(|e| e.into_inner())
    }
}
