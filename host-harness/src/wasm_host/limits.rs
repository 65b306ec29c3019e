//! What one plugin call may spend: time (wasmtime epoch interruption, a
//! deadline per call) and memory (a cap per instance). A plugin that goes
//! past either traps with a [`LimitExceeded`] the shell can name.

use std::time::{Duration, Instant};

use wasmtime::{Engine, EngineWeak, StoreContextMut, UpdateDeadline};

/// How often the engine's epoch advances: the granularity of every deadline.
pub const TICK: Duration = Duration::from_millis(2);

/// A call may take this many times its limit in all, the shell's imports included. The
/// imports' time is the shell's, not the plugin's; but a plugin that calls a costly import in
/// a loop spends almost none of its own time, and without a bound on the whole call it would
/// hold the shell for as long as it liked (minutes, on a large registry).
pub const WALL_FACTOR: u32 = 10;

/// The limits every plugin instance runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Per call of the per-request exports (visible-tools, pre-execute,
    /// system-prompt, explain, agent-disposed, guard-tools, dispose).
    pub call: Duration,
    /// Per call of the exports that may rebuild everything: configure,
    /// registry-changed (a new search index), agent-created and agent-forked
    /// (a new agent's token costs); of execute (a guard tool's call may refresh
    /// the agent's view of a large registry) and resolve-call (it may load a lazy
    /// group: a server starts); and of export-state and restore-state (every
    /// agent's loads, in a state of up to 16 MiB).
    pub long_call: Duration,
    /// The linear memory (and table bytes) one instance may hold.
    pub memory_bytes: usize,
    /// The text one call may return (see `returned`): a system prompt, a tool's result, the
    /// names an agent sees. export-state has its own bound, the largest state a shell restores.
    pub returned_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            call: Duration::from_millis(50),
            long_call: Duration::from_secs(2),
            memory_bytes: 256 << 20,
            returned_bytes: 16 << 20,
        }
    }
}

/// Which deadline a call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Short,
    Long,
}

/// Why a plugin call was stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitExceeded {
    #[error("ran out of time: still running after {}ms (limit {}ms)", .spent.as_millis(), .limit.as_millis())]
    Time { spent: Duration, limit: Duration },
    #[error(
        "ran out of time: still running {}ms after the call began, {}ms of it in the shell's \
         imports (limit {}ms of its own, {}ms in all)",
        .elapsed.as_millis(), .in_host.as_millis(), .limit.as_millis(), .wall_limit.as_millis()
    )]
    WallTime {
        elapsed: Duration,
        in_host: Duration,
        limit: Duration,
        wall_limit: Duration,
    },
    #[error("ran out of memory: asked for {desired} bytes of linear memory (limit {limit})")]
    Memory { desired: usize, limit: usize },
}

/// Time since a point, on the wall and on the calling thread's CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spent {
    pub wall: Duration,
    pub cpu: Duration,
}

/// A point in time on both clocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamp {
    wall: Instant,
    cpu: Duration,
}

impl Stamp {
    pub(crate) fn now() -> Self {
        Self {
            wall: Instant::now(),
            cpu: thread_cpu_time(),
        }
    }

    pub(crate) fn elapsed(&self) -> Spent {
        Spent {
            wall: self.wall.elapsed(),
            cpu: thread_cpu_time().saturating_sub(self.cpu),
        }
    }
}

/// The CPU time the calling thread has used: a plugin runs on the thread that calls it, so
/// this is what it spent, not the time the machine gave to other work meanwhile.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) writes the timespec it is given and nothing else.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } == 0;
    if !ok {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// The clock of one call, kept in the store. The plugin's limit is on its own CPU time: time
/// spent in the shell's imports is the shell's, and time the machine gave to other work while
/// the call waited to run is no one's (on a loaded machine a call that needs microseconds can
/// wait 50 ms for a core). The whole call is bounded on the wall too ([`WALL_FACTOR`]), but
/// for imports bounded by timeouts of their own.
#[derive(Debug)]
pub(crate) struct CallClock {
    started: Stamp,
    in_host: Spent,
    /// Of `in_host`'s wall time, the time in imports with timeouts of their own (a lazy
    /// group's server starting), which the whole call's bound leaves out.
    in_timed_host: Duration,
    limit: Duration,
}

impl Default for CallClock {
    fn default() -> Self {
        Self {
            started: Stamp::now(),
            in_host: Spent::default(),
            in_timed_host: Duration::ZERO,
            limit: Limits::default().call,
        }
    }
}

impl CallClock {
    pub(crate) fn start(&mut self, limit: Duration) {
        *self = Self {
            started: Stamp::now(),
            in_host: Spent::default(),
            in_timed_host: Duration::ZERO,
            limit,
        };
    }

    pub(crate) fn charge_host(&mut self, spent: Spent) {
        self.in_host.wall += spent.wall;
        self.in_host.cpu += spent.cpu;
    }

    /// Leaves `spent`, time of the shell's already charged with
    /// [`CallClock::charge_host`] that has a timeout of its own (a lazy
    /// group's server starting), out of the whole call's bound.
    pub(crate) fn exempt_from_wall(&mut self, spent: Duration) {
        self.in_timed_host = (self.in_timed_host + spent).min(self.in_host.wall);
    }

    /// Called when the epoch deadline passes: more ticks if the plugin still
    /// has time (the shell's imports ran in between, or the machine ran other
    /// work), else the trap.
    pub(crate) fn on_deadline(&self) -> wasmtime::Result<UpdateDeadline> {
        self.on_deadline_at(self.started.elapsed())
    }

    /// [`CallClock::on_deadline`] when `elapsed` has passed since the call began.
    fn on_deadline_at(&self, elapsed: Spent) -> wasmtime::Result<UpdateDeadline> {
        let spent = elapsed.cpu.saturating_sub(self.in_host.cpu);
        if spent >= self.limit {
            return Err(wasmtime::Error::new(LimitExceeded::Time {
                spent,
                limit: self.limit,
            }));
        }
        let bounded = elapsed.wall.saturating_sub(self.in_timed_host);
        let wall_limit = self.limit.saturating_mul(WALL_FACTOR);
        if bounded >= wall_limit {
            return Err(wasmtime::Error::new(LimitExceeded::WallTime {
                elapsed: elapsed.wall,
                in_host: self.in_host.wall,
                limit: self.limit,
                wall_limit,
            }));
        }
        // The next look comes when either bound could be reached.
        let left = (self.limit - spent).min(wall_limit - bounded);
        Ok(UpdateDeadline::Continue(ticks(left)))
    }
}

/// The number of epoch ticks that covers `duration` (at least one).
pub(crate) fn ticks(duration: Duration) -> u64 {
    (duration.as_nanos().div_ceil(TICK.as_nanos()) as u64).max(1)
}

/// Advances `engine`'s epoch every [`TICK`] for as long as the engine lives.
pub(crate) fn start_ticker(engine: &Engine) {
    let weak: EngineWeak = engine.weak();
    std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(TICK);
            }
        })
        .expect("the epoch ticker thread can start");
}

/// The epoch-deadline callback of a plugin store.
pub(crate) fn deadline_callback<T: AsClock>(
    ctx: StoreContextMut<'_, T>,
) -> wasmtime::Result<UpdateDeadline> {
    ctx.data().clock().on_deadline()
}

pub(crate) trait AsClock {
    fn clock(&self) -> &CallClock;
}

/// What one table element holds in the host (a pointer or two), as counted against the
/// memory limit.
pub(crate) const TABLE_ELEMENT_BYTES: usize = 16;

/// Caps a plugin's memory: growing past the limit traps with
/// [`LimitExceeded::Memory`] rather than failing the allocation, so the shell
/// learns why.
#[derive(Debug)]
pub(crate) struct MemoryWatch {
    /// The bytes of linear memory the instance holds now.
    pub(crate) bytes: usize,
    /// What its tables hold, at [`TABLE_ELEMENT_BYTES`] an element: counted against the same
    /// limit, so that a component of many tables cannot hold the limit once per table.
    pub(crate) table_bytes: usize,
    pub(crate) limit: usize,
    /// How many times the instance's linear memory has grown.
    pub(crate) grows: usize,
}

impl wasmtime::ResourceLimiter for MemoryWatch {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.bytes + desired.saturating_sub(current);
        if total.saturating_add(self.table_bytes) > self.limit {
            return Err(wasmtime::Error::new(LimitExceeded::Memory {
                desired: total,
                limit: self.limit,
            }));
        }
        self.bytes = total;
        self.grows += usize::from(desired > current);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let added = desired
            .saturating_sub(current)
            .saturating_mul(TABLE_ELEMENT_BYTES);
        let tables = self.table_bytes.saturating_add(added);
        if tables.saturating_add(self.bytes) > self.limit {
            return Err(wasmtime::Error::new(LimitExceeded::Memory {
                desired: tables.saturating_add(self.bytes),
                limit: self.limit,
            }));
        }
        self.table_bytes = tables;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_and_linear_memory_share_one_limit() {
        use wasmtime::ResourceLimiter as _;
        let mut watch = MemoryWatch {
            bytes: 0,
            table_bytes: 0,
            limit: 1 << 20,
            grows: 0,
        };
        assert!(watch.memory_growing(0, 768 << 10, None).unwrap());
        // 20,000 elements (320,000 bytes) fit alone, not beside 768 KiB of memory.
        let Err(err) = watch.table_growing(0, 20_000, None) else {
            panic!("tables grew past the limit beside the memory");
        };
        assert!(matches!(
            err.downcast_ref::<LimitExceeded>(),
            Some(LimitExceeded::Memory { .. })
        ));
        assert!(watch.table_growing(0, 10_000, None).unwrap());
        // ... and memory may not grow into what the tables hold.
        assert!(watch.memory_growing(768 << 10, 960 << 10, None).is_err());
    }

    #[test]
    fn ticks_round_up() {
        assert_eq!(ticks(Duration::ZERO), 1);
        assert_eq!(ticks(TICK), 1);
        assert_eq!(ticks(TICK + Duration::from_nanos(1)), 2);
        assert_eq!(ticks(Duration::from_millis(50)), 25);
    }

    /// `wall` and `cpu` milliseconds.
    fn spent(wall: u64, cpu: u64) -> Spent {
        Spent {
            wall: Duration::from_millis(wall),
            cpu: Duration::from_millis(cpu),
        }
    }

    #[test]
    fn a_call_that_spends_its_time_in_the_shells_imports_is_bounded_too() {
        let limit = Duration::from_millis(20);
        let mut clock = CallClock::default();
        clock.start(limit);
        // Just under the whole call's bound, almost all of it in imports: goes on, and the
        // next look is due when the bound is reached.
        clock.charge_host(spent(190, 190));
        let Ok(UpdateDeadline::Continue(next)) = clock.on_deadline_at(spent(195, 195)) else {
            panic!("a call within both bounds is stopped");
        };
        assert_eq!(next, ticks(Duration::from_millis(5)));
        // Past it: stopped, though the plugin itself spent 10 ms of its 20.
        let Err(err) = clock.on_deadline_at(spent(200, 200)) else {
            panic!("a call past ten times its limit goes on");
        };
        assert_eq!(
            err.downcast_ref::<LimitExceeded>(),
            Some(&LimitExceeded::WallTime {
                elapsed: Duration::from_millis(200),
                in_host: Duration::from_millis(190),
                limit,
                wall_limit: limit * WALL_FACTOR,
            })
        );
        assert!(
            err.to_string()
                .contains("190ms of it in the shell's imports"),
            "{err}"
        );
        // A server starting for a lazy group has its own timeout: not counted.
        clock.start(limit);
        clock.charge_host(spent(5_000, 10));
        clock.exempt_from_wall(Duration::from_secs(5));
        assert!(clock.on_deadline_at(spent(5_010, 15)).is_ok());
        // What the shell spent around it is bounded as before.
        clock.start(limit);
        clock.charge_host(spent(5_000, 10));
        clock.exempt_from_wall(Duration::from_secs(4));
        assert!(clock.on_deadline_at(spent(5_010, 15)).is_err());
    }

    /// On a loaded machine a call waits for a core: the wait is not the plugin's time. A
    /// call that needed 5 ms of CPU and was descheduled for 60 ms goes on (it was quarantined
    /// at 50 ms of wall time); the whole call is still bounded on the wall.
    #[test]
    fn time_the_machine_gave_to_other_work_is_not_the_plugins() {
        let limit = Duration::from_millis(50);
        let mut clock = CallClock::default();
        clock.start(limit);
        let Ok(UpdateDeadline::Continue(next)) = clock.on_deadline_at(spent(60, 5)) else {
            panic!("a call that waited for a core is stopped");
        };
        assert_eq!(next, ticks(Duration::from_millis(45)));
        let Err(err) = clock.on_deadline_at(spent(80, 50)) else {
            panic!("a call past its CPU limit goes on");
        };
        assert_eq!(
            err.downcast_ref::<LimitExceeded>(),
            Some(&LimitExceeded::Time {
                spent: limit,
                limit
            })
        );
        assert!(
            clock.on_deadline_at(spent(500, 5)).is_err(),
            "the wall bound holds"
        );
    }

    /// The thread's CPU clock runs while the thread works, not while it sleeps.
    #[test]
    fn a_stamp_counts_the_threads_work_not_its_sleep() {
        let stamp = Stamp::now();
        std::thread::sleep(Duration::from_millis(30));
        let slept = stamp.elapsed();
        assert!(slept.wall >= Duration::from_millis(30), "{slept:?}");
        assert!(slept.cpu < Duration::from_millis(15), "{slept:?}");
        let stamp = Stamp::now();
        let mut x = 0u64;
        while stamp.elapsed().cpu < Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(stamp.elapsed().cpu >= Duration::from_millis(5));
    }

    #[test]
    fn a_clock_charges_only_the_plugin() {
        let mut clock = CallClock::default();
        clock.start(Duration::from_millis(20));
        clock.charge_host(spent(10_000, 10_000));
        assert!(clock.on_deadline().is_ok(), "host time is not the plugin's");
        clock.start(Duration::ZERO);
        let Err(err) = clock.on_deadline() else {
            panic!("a call past its limit goes on");
        };
        assert!(matches!(
            err.downcast_ref::<LimitExceeded>(),
            Some(LimitExceeded::Time { .. })
        ));
    }
}
