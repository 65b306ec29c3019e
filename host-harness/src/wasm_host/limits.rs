//! What one plugin call may spend: time (wasmtime epoch interruption, a
//! deadline per call) and memory (a cap per instance). A plugin that goes
//! past either traps with a [`LimitExceeded`] the shell can name.
//!
//! A call's own time is what its thread ran, not what the wall clock shows: on a loaded
//! machine a call of a microsecond may wait tens of milliseconds for a core, and stopping it
//! there would quarantine a healthy plugin. The thread's CPU clock is read when a call starts
//! and at its epoch checks: a system call, about 0.6 µs a call in this VM. Reading it only at the checks
//! could not tell what the call ran before the first one, in WASI's imports or copying an
//! import's arguments as much as in its own code (see [`CallClock`]).

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
    #[error(
        "ran out of time: still running after {}ms of its own (limit {}ms)",
        .spent.as_millis(), .limit.as_millis()
    )]
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

/// The clock of one call, kept in the store: time spent in the shell's own
/// imports is the shell's, not charged to the plugin; the whole call is bounded
/// too ([`WALL_FACTOR`]), but for imports bounded by timeouts of their own.
///
/// The plugin's own time is the lesser of two bounds on it: the wall time outside the
/// shell's imports (too high when the thread waited for a core) and the thread's CPU time
/// since the call began (too high when an import ran on the CPU).
#[derive(Debug)]
pub(crate) struct CallClock {
    started: Instant,
    in_host: Duration,
    /// Of `in_host`, the time in imports with timeouts of their own (a lazy
    /// group's server starting), which the whole call's bound leaves out.
    in_timed_host: Duration,
    limit: Duration,
    /// The thread's CPU clock when the call began, where the OS keeps one.
    started_cpu: Option<Duration>,
}

impl Default for CallClock {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            in_host: Duration::ZERO,
            in_timed_host: Duration::ZERO,
            limit: Limits::default().call,
            started_cpu: thread_cpu_time(),
        }
    }
}

impl CallClock {
    /// Starts a call of `limit`; returns its first epoch deadline, in ticks from now.
    pub(crate) fn start(&mut self, limit: Duration) -> u64 {
        *self = Self {
            started: Instant::now(),
            in_host: Duration::ZERO,
            in_timed_host: Duration::ZERO,
            limit,
            started_cpu: thread_cpu_time(),
        };
        ticks(limit)
    }

    pub(crate) fn charge_host(&mut self, spent: Duration) {
        self.in_host += spent;
    }

    /// Leaves `spent`, time of the shell's already charged with
    /// [`CallClock::charge_host`] that has a timeout of its own (a lazy
    /// group's server starting), out of the whole call's bound.
    pub(crate) fn exempt_from_wall(&mut self, spent: Duration) {
        self.in_timed_host = (self.in_timed_host + spent).min(self.in_host);
    }

    /// Called when the epoch deadline passes: more ticks if the plugin still
    /// has time (it waited, or the shell's imports ran in between), else the trap.
    pub(crate) fn on_deadline(&self) -> wasmtime::Result<UpdateDeadline> {
        self.on_deadline_at(self.started.elapsed(), thread_cpu_time())
    }

    /// [`CallClock::on_deadline`] when `elapsed` has passed since the call began and the
    /// thread's CPU clock reads `cpu`.
    fn on_deadline_at(
        &self,
        elapsed: Duration,
        cpu: Option<Duration>,
    ) -> wasmtime::Result<UpdateDeadline> {
        let mut spent = elapsed.saturating_sub(self.in_host);
        if let (Some(started), Some(cpu)) = (self.started_cpu, cpu) {
            spent = spent.min(cpu.saturating_sub(started));
        }
        if spent >= self.limit {
            return Err(wasmtime::Error::new(LimitExceeded::Time {
                spent,
                limit: self.limit,
            }));
        }
        let bounded = elapsed.saturating_sub(self.in_timed_host);
        let wall_limit = self.limit.saturating_mul(WALL_FACTOR);
        if bounded >= wall_limit {
            return Err(wasmtime::Error::new(LimitExceeded::WallTime {
                elapsed,
                in_host: self.in_host,
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

/// The CPU time the calling thread has run, where the OS keeps it.
fn thread_cpu_time() -> Option<Duration> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Some(Duration::new(
            u64::try_from(now.tv_sec).ok()?,
            u32::try_from(now.tv_nsec).ok()?,
        ))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        None
    }
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

    #[test]
    fn a_call_that_spends_its_time_in_the_shells_imports_is_bounded_too() {
        let limit = Duration::from_millis(20);
        let mut clock = CallClock::default();
        clock.start(limit);
        // Just under the whole call's bound, almost all of it in imports: goes on, and the
        // next look is due when the bound is reached.
        clock.charge_host(Duration::from_millis(190));
        let Ok(UpdateDeadline::Continue(next)) =
            clock.on_deadline_at(Duration::from_millis(195), None)
        else {
            panic!("a call within both bounds is stopped");
        };
        assert_eq!(next, ticks(Duration::from_millis(5)));
        // Past it: stopped, though the plugin itself spent 10 ms of its 20.
        let Err(err) = clock.on_deadline_at(Duration::from_millis(200), None) else {
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
        clock.charge_host(Duration::from_secs(5));
        clock.exempt_from_wall(Duration::from_secs(5));
        assert!(
            clock
                .on_deadline_at(Duration::from_millis(5_010), None)
                .is_ok()
        );
        // What the shell spent around it is bounded as before.
        clock.start(limit);
        clock.charge_host(Duration::from_secs(5));
        clock.exempt_from_wall(Duration::from_secs(4));
        assert!(
            clock
                .on_deadline_at(Duration::from_millis(5_010), None)
                .is_err()
        );
    }

    #[test]
    fn a_call_is_charged_what_its_thread_ran_not_its_wait_for_a_core() {
        let limit = Duration::from_millis(50);
        let ms = Duration::from_millis;
        let mut clock = CallClock::default();
        assert_eq!(clock.start(limit), ticks(limit));
        clock.started_cpu = Some(ms(900));
        // 200 ms of wall time in, the thread had run 32 ms (it waited for a core): 32 of 50.
        let Ok(UpdateDeadline::Continue(next)) = clock.on_deadline_at(ms(202), Some(ms(932)))
        else {
            panic!("a call that waited for a core is stopped");
        };
        assert_eq!(next, ticks(ms(18)));
        // Once it has run 50 ms, it is stopped, and told what it spent.
        let Err(err) = clock.on_deadline_at(ms(260), Some(ms(950))) else {
            panic!("a call that ran past its limit goes on");
        };
        assert_eq!(
            err.downcast_ref::<LimitExceeded>(),
            Some(&LimitExceeded::Time {
                spent: limit,
                limit
            })
        );
        // Its whole call stays bounded, however little it ran.
        clock.start(limit);
        clock.started_cpu = Some(ms(0));
        assert!(matches!(
            stopped(
                clock.on_deadline_at(ms(500), Some(ms(1))),
                "a call past ten times its limit goes on"
            ),
            LimitExceeded::WallTime { .. }
        ));
    }

    /// What the thread ran from the call's start is the plugin's, outside the shell's charged
    /// imports: a WASI import (random bytes by the megabyte) or an import's arguments copied
    /// in, before the first epoch check as after it.
    #[test]
    fn what_the_thread_ran_in_wasi_is_charged_from_the_calls_start() {
        let ms = Duration::from_millis;
        let clock = started(ms(50), ms(0));
        assert!(clock.on_deadline_at(ms(45), Some(ms(40))).is_ok());
        assert!(matches!(
            stopped(
                clock.on_deadline_at(ms(60), Some(ms(52))),
                "a call that ran 52 ms in WASI goes on"
            ),
            LimitExceeded::Time { .. }
        ));
    }

    #[test]
    fn a_shells_imports_on_the_cpu_are_not_charged_to_the_plugin() {
        // The CPU clock counts the imports too; the wall time outside them is the lesser bound.
        let ms = Duration::from_millis;
        let mut clock = started(ms(50), ms(0));
        clock.charge_host(ms(100));
        let Ok(UpdateDeadline::Continue(next)) = clock.on_deadline_at(ms(130), Some(ms(128)))
        else {
            panic!("a call whose imports ran on the CPU is stopped");
        };
        assert_eq!(next, ticks(ms(20)));
        // Where the thread has no CPU clock, the wall time outside the imports is all there is.
        clock.start(ms(50));
        clock.started_cpu = None;
        assert!(clock.on_deadline_at(ms(60), Some(ms(1))).is_err());
    }

    #[test]
    fn the_thread_cpu_clock_counts_only_what_the_thread_ran() {
        let Some(before) = thread_cpu_time() else {
            return;
        };
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu_time().unwrap() - before;
        assert!(slept < Duration::from_millis(15), "{slept:?}");
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        assert!(thread_cpu_time().unwrap() - before > slept);
    }

    /// A clock of a call begun with `limit`, its thread's CPU clock at `cpu`.
    fn started(limit: Duration, cpu: Duration) -> CallClock {
        let mut clock = CallClock::default();
        clock.start(limit);
        clock.started_cpu = Some(cpu);
        clock
    }

    /// Why a look at the clock stopped the call; a panic saying `goes_on` if it did not.
    fn stopped(look: wasmtime::Result<UpdateDeadline>, goes_on: &str) -> LimitExceeded {
        let Err(err) = look else { panic!("{goes_on}") };
        err.downcast::<LimitExceeded>().unwrap()
    }

    #[test]
    fn a_clock_charges_only_the_plugin() {
        let mut clock = CallClock::default();
        clock.start(Duration::from_millis(20));
        clock.charge_host(Duration::from_secs(10));
        assert!(clock.on_deadline().is_ok(), "host time is not the plugin's");
        clock.start(Duration::ZERO);
        assert!(matches!(
            stopped(clock.on_deadline(), "a call past its limit goes on"),
            LimitExceeded::Time { .. }
        ));
    }
}
