//! A plugin that loops, traps or grows its memory is stopped and contained,
//! at every export; a plugin cannot take another tool's name; lazy-tools
//! itself never traps on oversized input. The subject is the hostile guest
//! (tests/guests/hostile), whose config says where and how to misbehave.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use host_harness::log_allowance::MAX_LOG_BYTES_PER_CALL;
use host_harness::shell::{
    CallOutcome, InstallError, MAX_ARGUMENT_BYTES, Origin, RegistryChangeErrors, Shell, Tool,
};
use host_harness::wasm_host::{Limits, PluginComponent, WasmHost};
use serde_json::{Value, json};

use crate::guests;

const HOSTILE: &str = "hostile";

fn hostile() -> PluginComponent {
    WasmHost::global()
        .load(&guests::component("hostile"))
        .unwrap()
}

/// Short limits, so that a loop costs little here (but long enough to fill
/// the memory limit: writing 64 MiB takes tens of milliseconds).
fn test_limits() -> Limits {
    Limits {
        call: Duration::from_millis(300),
        long_call: Duration::from_millis(400),
        memory_bytes: 64 << 20,
        returned_bytes: 1 << 20,
    }
}

/// A shell with `read`, `bash` and `secret`, the hostile plugin installed
/// with `config` (before any agent: agent-created is a failure point too),
/// then `main` and `main/child`, where the profile denies `bash`.
fn shell(config: &str) -> Shell {
    let mut shell = Shell::new();
    shell.set_plugin_limits(test_limits());
    shell
        .register_tools(["read", "bash", "secret"].map(|n| Tool::new(n, "", Origin::Builtin)))
        .unwrap();
    shell
        .install_plugin(HOSTILE, &hostile(), &json!(config))
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell.create_agent("child", Some("main")).unwrap();
    shell
        .restrict(
            "main/child",
            "profile",
            Some(vec!["read".into(), "secret".into()]),
        )
        .unwrap();
    shell
}

fn names(shell: &mut Shell, agent: &str) -> Vec<String> {
    crate::common::visible_names(shell, agent)
}

const EXPORTS: &[&str] = &[
    "configure",
    "agent-created",
    "agent-forked",
    "visible-tools",
    "pre-execute",
    "execute",
    "resolve-call",
    "registry-changed",
    "system-prompt",
    // Not in a request's path: the shell's own call fails and says so.
    "explain",
    "restore-state",
];

/// Makes the plugin run `export`, configured to fail there in the way `how`.
fn trigger(shell: &mut Shell, export: &str, how: &str) -> Option<Shell> {
    match export {
        "configure" => {
            let err = shell
                .reconfigure(
                    HOSTILE,
                    &json!(format!("fail=configure how={how} hide=secret")),
                )
                .unwrap_err();
            assert!(err.to_string().contains("is disabled"), "{err}");
        }
        // Fails on the agents the shell creates after install.
        "agent-created" => {
            let mut fresh = Shell::new();
            fresh.set_plugin_limits(test_limits());
            fresh
                .register_tools(
                    ["read", "bash", "secret"].map(|n| Tool::new(n, "", Origin::Builtin)),
                )
                .unwrap();
            let config = format!("fail=agent-created how={how} hide=secret guards=hostile_guard");
            fresh
                .install_plugin(HOSTILE, &hostile(), &json!(config))
                .unwrap();
            fresh.create_agent("main", None).unwrap();
            fresh.create_agent("child", Some("main")).unwrap();
            fresh
                .restrict(
                    "main/child",
                    "profile",
                    Some(vec!["read".into(), "secret".into()]),
                )
                .unwrap();
            return Some(fresh);
        }
        // The fork is made; the plugin that failed in it is quarantined.
        "agent-forked" => {
            shell
                .fork_agent("fork", Some("main"), "main/child")
                .unwrap();
        }
        "visible-tools" => {
            shell.next_request("main/child").unwrap();
        }
        "pre-execute" => {
            let outcome = shell.call("main/child", "read", &Value::Null).unwrap();
            // The plugin's verdict is gone with it; the call goes on.
            assert!(matches!(outcome, CallOutcome::Completed(_)), "{outcome:?}");
        }
        // The shell resolves a call to a plugin's tool before anything else.
        "execute" | "resolve-call" => {
            let outcome = shell
                .call("main/child", "hostile_guard", &Value::Null)
                .unwrap();
            let CallOutcome::Refused(reason) = outcome else {
                panic!("{outcome:?}");
            };
            assert!(reason.contains("plugin `hostile` is disabled"), "{reason}");
        }
        "registry-changed" => shell
            .register_tools([Tool::new("late", "", Origin::Builtin)])
            .unwrap(),
        "system-prompt" => {
            shell.assemble("main/child").unwrap();
        }
        "explain" | "restore-state" => {
            let err = match export {
                "explain" => shell.explain(HOSTILE, "main", "secret").map(drop),
                _ => shell.restore_state(HOSTILE, "{}"),
            }
            .unwrap_err()
            .to_string();
            assert!(
                err.contains(&format!("failed in {export} and is disabled")),
                "{err}"
            );
        }
        other => unreachable!("{other}"),
    }
    None
}

#[test]
fn a_healthy_hostile_plugin_hides_what_it_says() {
    let mut shell = shell("hide=secret guards=hostile_guard");
    assert_eq!(names(&mut shell, "main"), ["read", "bash", "hostile_guard"]);
    assert_eq!(names(&mut shell, "main/child"), ["read", "hostile_guard"]);
    assert_eq!(shell.quarantined().count(), 0);
}

#[test]
fn a_plugin_that_fails_anywhere_is_quarantined_and_the_rest_of_the_chain_holds() {
    let mut problems = Vec::new();
    for export in EXPORTS {
        for (how, expected) in [
            ("loop", "ran out of time"),
            ("trap", "trap"),
            ("grow", "ran out of memory"),
            // Sleeping is waiting in the host, where no deadline check runs.
            ("sleep", "may not wait"),
            // 2 MiB of text in what it returns (an error value where there is no text).
            ("big", "returned too much: 2097"),
        ] {
            let config = match *export {
                "configure" | "agent-created" => "hide=secret guards=hostile_guard".to_string(),
                _ => format!("fail={export} how={how} hide=secret guards=hostile_guard"),
            };
            let mut shell = shell(&config);
            let started = Instant::now();
            let mut shell = trigger(&mut shell, export, how).unwrap_or(shell);
            let took = started.elapsed();
            let quarantined: Vec<_> = shell.quarantined().cloned().collect();
            let case = format!("{export}/{how}");
            let [q] = quarantined.as_slice() else {
                problems.push(format!("{case}: quarantined {quarantined:?}"));
                continue;
            };
            if q.during != *export || !q.reason.contains(expected) {
                problems.push(format!("{case}: {q}"));
            }
            // The calls that may rebuild or refresh much run under the long limit.
            let long = matches!(
                *export,
                "configure"
                    | "agent-created"
                    | "agent-forked"
                    | "registry-changed"
                    | "execute"
                    | "resolve-call"
                    | "restore-state"
            );
            let limit = if long {
                test_limits().long_call
            } else {
                test_limits().call
            };
            if how == "loop"
                && !q
                    .reason
                    .contains(&format!("(limit {}ms)", limit.as_millis()))
            {
                problems.push(format!("{case}: not under the {limit:?} limit: {q}"));
            }
            if took > Duration::from_secs(5) {
                problems.push(format!("{case}: took {took:?}"));
            }
            // Its allow sets and guard tools are lifted; the profile's
            // restriction still holds for the child.
            let mut main = names(&mut shell, "main");
            main.retain(|n| n != "late");
            let child = names(&mut shell, "main/child");
            if main != ["read", "bash", "secret"] || child != ["read", "secret"] {
                problems.push(format!("{case}: main sees {main:?}, child sees {child:?}"));
            }
            // It is never called again, and nothing else fails.
            let outcome = shell.call("main/child", "bash", &Value::Null).unwrap();
            if !matches!(outcome, CallOutcome::Refused(_)) {
                problems.push(format!("{case}: bash for the child: {outcome:?}"));
            }
            if let Err(e) = shell.register_tools([Tool::new("later", "", Origin::Builtin)]) {
                problems.push(format!("{case}: registering after: {e:#}"));
            }
            // A fork after the quarantine neither calls the plugin nor gets its guard tools.
            match shell.fork_agent("after", Some("main"), "main/child") {
                Ok(_) => {
                    let forked = names(&mut shell, "main/after");
                    if forked.iter().any(|n| n == "hostile_guard") {
                        problems.push(format!("{case}: the fork sees {forked:?}"));
                    }
                }
                Err(e) => problems.push(format!("{case}: forking after: {e:#}")),
            }
            if shell.quarantined().count() != 1 {
                problems.push(format!("{case}: quarantined again"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Runs a request for `main` in `shell`, whose plugin loops on the shell's imports in
/// visible-tools: it must be stopped at the whole call's bound (the tests' 300 ms limit, ten
/// times that in all) and quarantined, within 6 s.
fn stopped_at_the_whole_call_bound(shell: &mut Shell) {
    let started = Instant::now();
    shell.next_request("main").unwrap();
    let took = started.elapsed();
    let quarantined: Vec<_> = shell.quarantined().cloned().collect();
    let [q] = quarantined.as_slice() else {
        panic!("quarantined {quarantined:?}");
    };
    assert_eq!(q.during, "visible-tools");
    assert!(
        q.reason
            .contains("of it in the shell's imports (limit 300ms of its own, 3000ms in all)"),
        "{q}"
    );
    assert!(took < Duration::from_secs(6), "took {took:?}");
}

#[test]
fn a_plugin_that_loops_on_the_shells_imports_is_stopped_within_ten_times_its_limit() {
    // Each ask intersects 20,000 names with the profile's one: the shell's time, not the
    // plugin's, so only the bound on the whole call stops the loop.
    let mut shell = Shell::new();
    shell.set_plugin_limits(test_limits());
    shell
        .register_tools(
            (0..20_000).map(|i| Tool::new(format!("tool_{i}"), "a tool", Origin::Builtin)),
        )
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell
        .restrict("main", "profile", Some(vec!["tool_0".into()]))
        .unwrap();
    shell
        .install_plugin(
            HOSTILE,
            &hostile(),
            &json!("fail=visible-tools how=imports"),
        )
        .unwrap();
    stopped_at_the_whole_call_bound(&mut shell);
    // The profile's restriction holds without the plugin.
    assert_eq!(names(&mut shell, "main"), ["tool_0"]);
}

#[test]
fn a_state_too_large_to_restore_is_not_saved() {
    let mut shell = shell("fail=export-state how=huge");
    let err = shell.export_state(HOSTILE).unwrap_err().to_string();
    assert!(
        err.contains("plugin `hostile` exported a state of 17825792 bytes, more than the 16777216"),
        "{err}"
    );
    // Refusing to save it is not the plugin's failure.
    assert_eq!(shell.quarantined().count(), 0);
}

#[test]
fn too_much_text_from_guard_tools_or_an_export_state_error_disables_the_plugin() {
    // Guard tools are measured as written, before their parameters are parsed: 2 MiB of
    // whitespace is `{}` once parsed.
    let mut shell = Shell::new();
    shell.set_plugin_limits(test_limits());
    let err = shell
        .install_plugin(HOSTILE, &hostile(), &json!("fail=guard-tools how=big"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("plugin `hostile` failed in guard-tools: returned too much: 2097168 bytes"),
        "{err}"
    );
    assert_eq!(shell.quarantined().count(), 0, "nothing was installed");

    // A state has its own bound (above); an error's message has every call's.
    let mut shell = self::shell("fail=export-state how=big");
    let err = shell.export_state(HOSTILE).unwrap_err().to_string();
    assert!(err.contains("is disabled"), "{err}");
    let quarantined: Vec<_> = shell.quarantined().collect();
    assert!(
        quarantined[0]
            .reason
            .contains("returned too much: 2097152 bytes from export-state"),
        "{}",
        quarantined[0]
    );
}

/// A group loader that must never run: every load in these tests is refused before it.
#[derive(Debug)]
struct NeverLoads;

impl host_harness::shell_core::GroupLoader for NeverLoads {
    fn load(&self, group: &str) -> Result<Vec<Tool>, String> {
        panic!("group `{group}` was loaded")
    }
}

/// A shell with `main` and a lazy group `db` of one tool, `db__query`, under the tests' limits.
fn shell_with_a_database() -> Shell {
    #[derive(Debug)]
    struct Database;
    impl host_harness::shell_core::GroupLoader for Database {
        fn load(&self, _group: &str) -> Result<Vec<Tool>, String> {
            let query = Tool::new("db__query", "Run a SQL query.", Origin::Mcp("db".into()));
            Ok(vec![query])
        }
    }
    let mut shell = Shell::new();
    shell.set_plugin_limits(test_limits());
    shell.create_agent("main", None).unwrap();
    let db = host_harness::shell_core::LazyGroupDecl {
        name: "db".into(),
        description: "A SQL database".into(),
        tool_names: vec!["db__query".into()],
    };
    shell.set_lazy_groups(vec![db], Arc::new(Database)).unwrap();
    shell
}

/// A group that a guard tool loads (lazy-tools' `load_tools`, in `execute`) registers tools:
/// every plugin hears of it when the call ends, not at some later forwarded call. Here the
/// hostile plugin loops when it hears, so it is quarantined by that call.
#[test]
fn a_group_a_guard_tool_loads_is_told_to_every_plugin_when_the_call_ends() {
    let mut shell = shell_with_a_database();
    let lazy = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin("lazy-tools", &lazy, &json!({"defer": ["db__*"]}))
        .unwrap();
    let listener = json!("fail=registry-changed how=loop");
    shell
        .install_plugin(HOSTILE, &hostile(), &listener)
        .unwrap();

    let outcome = shell
        .call("main", "load_tools", &json!({"group_id": "db"}))
        .unwrap();
    assert!(matches!(outcome, CallOutcome::Completed(_)), "{outcome:?}");
    let during: Vec<_> = shell.quarantined().map(|q| q.during.clone()).collect();
    assert_eq!(during, ["registry-changed"]);
    assert!(names(&mut shell, "main").contains(&"db__query".to_string()));

    // A hostile plugin that loads the group as `loader` says, and the listener after it.
    let loader_and_listener = |loader: &str| {
        let mut shell = shell_with_a_database();
        (shell.install_plugin("loader", &hostile(), &json!(loader))).unwrap();
        (shell.install_plugin("listener", &hostile(), &listener)).unwrap();
        shell
    };

    // A guard tool that loads the group and then fails: the load is told all the same.
    let mut shell = loader_and_listener("fail=execute how=loaderr guards=g");
    let err = shell.call("main", "g", &Value::Null).unwrap_err();
    assert!(
        err.to_string()
            .contains("hostile loaded `db`, then refused"),
        "{err:#}"
    );
    let quarantined: Vec<_> = shell.quarantined().map(|q| q.plugin.clone()).collect();
    assert_eq!(quarantined, ["listener"]);

    // A load outside any tool call (a plugin's visible-tools): told by the next request.
    let mut shell = loader_and_listener("fail=visible-tools how=loadonce");
    shell.next_request("main").unwrap();
    assert!(shell.core().resolve("main", "db__query").unwrap().is_some());
    shell.next_request("main").unwrap();
    let quarantined: Vec<_> = shell.quarantined().map(|q| q.plugin.clone()).collect();
    assert_eq!(quarantined, ["listener"]);
}

#[test]
fn a_plugin_that_loops_on_refused_group_loads_is_stopped_within_ten_times_its_limit() {
    // Only a loader's run (a server starting) is left out of the whole call's bound; a load the
    // shell refuses (20,000 declared names checked against `main`'s allow set) is not.
    let mut shell = Shell::new();
    shell.set_plugin_limits(test_limits());
    shell
        .register_tools([Tool::new("read", "", Origin::Builtin)])
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell
        .restrict("main", "profile", Some(vec!["read".into()]))
        .unwrap();
    let declared = host_harness::shell_core::LazyGroupDecl {
        name: "big".into(),
        description: "A server of many tools".into(),
        tool_names: (0..20_000).map(|i| format!("big__tool_{i}")).collect(),
    };
    shell
        .set_lazy_groups(vec![declared], Arc::new(NeverLoads))
        .unwrap();
    shell
        .install_plugin(HOSTILE, &hostile(), &json!("fail=visible-tools how=loads"))
        .unwrap();
    stopped_at_the_whole_call_bound(&mut shell);
}

#[test]
fn a_plugin_that_fails_while_installing_leaves_nothing_and_says_why() {
    for (config, expected) in [
        (
            "fail=configure how=loop",
            "failed in configure: ran out of time",
        ),
        (
            "fail=configure how=grow",
            "failed in configure: ran out of memory",
        ),
        (
            "fail=agent-created how=trap guards=g hide=secret",
            "failed in agent-created: trap",
        ),
    ] {
        let mut shell = Shell::new();
        shell.set_plugin_limits(test_limits());
        shell
            .register_tools(["read", "secret"].map(|n| Tool::new(n, "", Origin::Builtin)))
            .unwrap();
        shell.create_agent("main", None).unwrap();
        let started = Instant::now();
        let err = shell
            .install_plugin(HOSTILE, &hostile(), &json!(config))
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(err.to_string().contains(expected), "{config}: {err}");
        assert_eq!(shell.plugin_ids().count(), 0);
        assert_eq!(names(&mut shell, "main"), ["read", "secret"], "{config}");
    }
}

#[test]
fn the_default_limits_stop_a_loop_in_tens_of_milliseconds() {
    let defaults = Limits::default();
    assert!(defaults.call <= Duration::from_millis(100));
    assert!(defaults.memory_bytes <= 512 << 20);
    let mut shell = Shell::new();
    shell.create_agent("main", None).unwrap();
    shell
        .install_plugin(
            HOSTILE,
            &hostile(),
            &json!("fail=pre-execute how=loop guards=g"),
        )
        .unwrap();
    let started = Instant::now();
    shell.call("main", "g", &Value::Null).unwrap();
    let took = started.elapsed();
    assert!(took >= defaults.call, "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let q = shell.quarantined().next().unwrap();
    assert!(q.reason.contains("ran out of time"), "{q}");
}

/// What the busy-core tests share: this thread's CPU clock, a shell whose plugin computes for
/// `work` rounds in pre-execute, and how many rounds make `ms` of CPU time here.
#[cfg(target_os = "linux")]
mod busy_core {
    use super::*;

    pub fn thread_cpu() -> Duration {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
    }

    pub fn working(work: u64, limits: Limits) -> Shell {
        let mut shell = Shell::new();
        shell.set_plugin_limits(limits);
        shell.create_agent("main", None).unwrap();
        let config = format!("fail=pre-execute how=work work={work} guards=g");
        shell
            .install_plugin(HOSTILE, &hostile(), &json!(config))
            .unwrap();
        shell
    }

    /// Measured in CPU time, so however busy the machine is.
    pub fn rounds_for(ms: f64) -> u64 {
        let calibration = Limits {
            call: Duration::from_secs(2),
            ..Limits::default()
        };
        let rounds = 4_000_000;
        let mut shell = working(rounds, calibration);
        let before = thread_cpu();
        shell.call("main", "g", &Value::Null).unwrap();
        let ran = thread_cpu() - before;
        (rounds as f64 * ms / (ran.as_secs_f64() * 1e3)) as u64
    }

    /// One busy-core test at a time: two on one core would starve each other's calls.
    pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    /// This thread pinned to one core, with threads that keep that core busy until dropped
    /// (a failed assertion included): then they stop, and this thread may run anywhere again.
    pub struct BusyCore {
        pub core: rustix::thread::CpuSet,
        all: rustix::thread::CpuSet,
        stop: Arc<std::sync::atomic::AtomicBool>,
        threads: Vec<std::thread::JoinHandle<()>>,
    }

    impl BusyCore {
        pub fn pin() -> Self {
            use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
            let all = sched_getaffinity(None).unwrap();
            let first = (0..CpuSet::MAX_CPU).find(|&c| all.is_set(c)).unwrap();
            let mut core = CpuSet::new();
            core.set(first);
            sched_setaffinity(None, &core).unwrap();
            Self {
                core,
                all,
                stop: Arc::default(),
                threads: Vec::new(),
            }
        }

        /// Runs `busy` on a thread of the core until the guard drops; `busy` is given the flag
        /// that says to stop.
        pub fn run(&mut self, busy: impl FnOnce(&std::sync::atomic::AtomicBool) + Send + 'static) {
            let (core, stop) = (self.core, Arc::clone(&self.stop));
            self.threads.push(std::thread::spawn(move || {
                rustix::thread::sched_setaffinity(None, &core).unwrap();
                busy(&stop);
            }));
        }
    }

    impl Drop for BusyCore {
        fn drop(&mut self) {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            for thread in self.threads.drain(..) {
                let _ = thread.join();
            }
            let _ = rustix::thread::sched_setaffinity(None, &self.all);
        }
    }
}

/// A healthy plugin on a machine whose cores are busy: a call that computes for about 12 ms
/// waits for a core for most of a 50 ms limit or more, and is charged what it ran, not the
/// wait. (Stopping it would quarantine the plugin for the rest of the session.)
#[cfg(target_os = "linux")]
#[test]
fn a_call_that_waits_for_a_busy_core_is_charged_only_what_it_ran() {
    use std::sync::atomic::Ordering;

    use busy_core::{BusyCore, rounds_for, thread_cpu, working};

    let _alone = busy_core::ONE_AT_A_TIME.lock();
    let mut shell = working(rounds_for(12.0), Limits::default());
    // This thread and eleven spinning ones share one core: the call waits most of the time.
    let mut busy = BusyCore::pin();
    for _ in 0..11 {
        busy.run(|stop| {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
    }
    // The scheduler shares the core unevenly: calls until one has waited past the limit.
    let limit = Limits::default().call;
    let mut calls = Vec::new();
    while calls.len() < 5 && calls.last().is_none_or(|&(took, _)| took <= limit) {
        let started = Instant::now();
        let before = thread_cpu();
        let outcome = shell.call("main", "g", &Value::Null);
        let (took, ran) = (started.elapsed(), thread_cpu() - before);
        let quarantined: Vec<_> = shell.quarantined().cloned().collect();
        assert!(
            outcome.is_ok() && quarantined.is_empty(),
            "stopped after {took:?}, {ran:?} on the CPU: {outcome:?} {quarantined:?}"
        );
        calls.push((took, ran));
    }
    drop(busy);
    assert!(
        calls.iter().any(|&(took, _)| took > limit),
        "no call waited past the limit, so nothing was tested: {calls:?}"
    );
}

/// The same when the wait comes before the call's first epoch check: a real-time thread on
/// the call's core spins 45 ms in every 48, so a call of about 8 ms is mostly descheduled at
/// its first check (13 of 30 such calls were stopped while the wall time to the first check
/// counted as the plugin's).
#[cfg(target_os = "linux")]
#[test]
fn a_call_that_waits_before_its_first_check_is_charged_only_what_it_ran() {
    use std::sync::atomic::Ordering;

    use busy_core::{BusyCore, rounds_for, working};

    let _alone = busy_core::ONE_AT_A_TIME.lock();
    let rounds = rounds_for(8.0);
    let mut busy = BusyCore::pin();
    let (tx, rx) = std::sync::mpsc::channel();
    busy.run(move |stop| {
        let param = libc::sched_param { sched_priority: 10 };
        // SAFETY: sets this thread's own policy; `param` is a valid sched_param.
        let set = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        tx.send(set == 0).unwrap();
        while set == 0 && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(3));
            let burst = Instant::now();
            while burst.elapsed() < Duration::from_millis(45) {
                std::hint::spin_loop();
            }
        }
    });
    if !rx.recv().unwrap() {
        eprintln!("skipped: no real-time scheduling here (it needs CAP_SYS_NICE)");
        return;
    }
    let limit = Limits::default().call;
    let mut calls = Vec::new();
    for _ in 0..10 {
        let mut shell = working(rounds, Limits::default());
        let started = Instant::now();
        let outcome = shell.call("main", "g", &Value::Null);
        calls.push(started.elapsed());
        let quarantined: Vec<_> = shell.quarantined().cloned().collect();
        assert!(
            outcome.is_ok() && quarantined.is_empty(),
            "stopped after {:?}: {outcome:?} {quarantined:?}",
            calls.last()
        );
    }
    drop(busy);
    assert!(
        calls.iter().any(|&took| took > limit),
        "no call waited past the limit, so nothing was tested: {calls:?}"
    );
}

#[test]
fn guard_tools_cannot_take_another_tools_name() {
    let mut shell = Shell::new();
    shell
        .register_tools(["read", "bash"].map(|n| Tool::new(n, "", Origin::Builtin)))
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell
        .restrict("main", "profile", Some(vec!["read".into()]))
        .unwrap();
    shell.create_agent("child", Some("main")).unwrap();

    // Impersonating a shell tool the chain denies.
    let err = shell
        .install_plugin("evil", &hostile(), &json!("guards=bash"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugin `evil` declares a tool `bash`, but that name is already a built-in tool: a \
         plugin cannot take another tool's name"
    );
    assert_eq!(names(&mut shell, "main/child"), ["read"]);

    // Impersonating another plugin's guard.
    shell
        .install_plugin("first", &hostile(), &json!("guards=search"))
        .unwrap();
    let err = shell
        .install_plugin("second", &hostile(), &json!("guards=search"))
        .unwrap_err();
    assert!(
        err.to_string().contains("already a tool of plugin `first`"),
        "{err}"
    );
    let err = shell
        .install_plugin("twice", &hostile(), &json!("guards=x,x"))
        .unwrap_err();
    assert!(
        err.to_string().contains("declares its tool `x` twice"),
        "{err}"
    );

    // A tool registered later cannot take a guard's name either.
    let err = shell
        .register_tools([Tool::new("search", "", Origin::Builtin)])
        .unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "the name `search` is taken by plugin `first`: a tool cannot take another's name"
    );
}

/// A shell with `read` and `gh_issue`, agent `main`, and lazy-tools deferring `gh_*`.
fn deferring_gh() -> Shell {
    let mut shell = Shell::new();
    shell
        .register_tools(["read", "gh_issue"].map(|n| Tool::new(n, "", Origin::Builtin)))
        .unwrap();
    shell.create_agent("main", None).unwrap();
    let lazy = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin("lazy-tools", &lazy, &json!({"defer": ["gh_*"]}))
        .unwrap();
    shell
}

#[test]
fn lazy_tools_keeps_its_config_when_a_new_one_is_oversized() {
    let mut shell = deferring_gh();
    let before = names(&mut shell, "main");
    assert!(!before.contains(&"gh_issue".to_string()), "{before:?}");

    let huge = "x".repeat(700_000);
    let err = shell
        .reconfigure("lazy-tools", &json!({"defer": [huge]}))
        .unwrap_err();
    let InstallError::Config { errors, .. } = err else {
        panic!("{err}");
    };
    assert_eq!(errors[0].pointer, "/defer/0");
    assert_eq!(shell.quarantined().count(), 0);
    assert_eq!(names(&mut shell, "main"), before);

    // A 1 MB tool name is refused at once, not compared with every name.
    let started = Instant::now();
    let outcome = shell
        .call(
            "main",
            "defer_execute_tool",
            &json!({"toolName": "n".repeat(1 << 20)}),
        )
        .unwrap();
    let CallOutcome::Completed(output) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(output.is_error);
    assert!(
        output
            .text
            .contains("defer_execute_tool: 1048591 bytes of arguments; at most 262144"),
        "{}",
        output.text
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(shell.quarantined().count(), 0);
}

/// A guard tool's arguments are sized before they are parsed: eight megabytes of empty queries
/// (as many as the shell passes) grew the plugin's memory by a hundred and came close to its
/// limit, which would trap it.
#[test]
fn a_guard_tools_arguments_are_sized_before_they_are_read() {
    let mut shell = deferring_gh();
    let before = shell.plugin_mut("lazy-tools").unwrap().memory_bytes();
    let queries = vec![""; (MAX_ARGUMENT_BYTES - 64) / 3];
    let outcome = shell
        .call("main", "tool_search", &json!({"queries": queries}))
        .unwrap();
    let CallOutcome::Completed(output) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(output.is_error);
    assert!(
        output.text.starts_with("tool_search: ")
            && output.text.ends_with(" bytes of arguments; at most 262144"),
        "{}",
        output.text
    );
    let after = shell.plugin_mut("lazy-tools").unwrap().memory_bytes();
    assert!(
        after - before < 16 << 20,
        "the plugin's memory grew from {before} to {after} bytes"
    );
    assert_eq!(shell.quarantined().count(), 0);
}

#[test]
fn oversized_arguments_are_refused_before_any_plugin_sees_them() {
    let mut shell = deferring_gh();
    // 300 MB of arguments used to exhaust the plugin's memory in pre-execute: the shell
    // quarantined it, and the deferred tool it had just denied then ran.
    let huge = json!({"text": "A".repeat(MAX_ARGUMENT_BYTES)});
    let outcome = shell.call("main", "read", &huge).unwrap();
    let CallOutcome::Refused(reason) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        reason.starts_with("the arguments of `read` are 8388619 bytes of JSON; at most 8 MiB"),
        "{reason}"
    );
    assert_eq!(shell.quarantined().count(), 0);
    let denied = shell.call("main", "gh_issue", &json!({})).unwrap();
    assert!(matches!(denied, CallOutcome::Denied { .. }), "{denied:?}");
}

/// lazy-tools restores and saves a state of 50,000 loads (some 2 MB; a state may have
/// 16 MiB) under the long limit: under the short one, restoring 20,000 ran out of time and
/// disabled the plugin. The loads of agents this shell never created are saved again.
#[test]
fn lazy_tools_restores_and_saves_a_large_state_under_the_long_limit() {
    let mut shell = Shell::new();
    shell.set_plugin_limits(Limits {
        call: Duration::from_millis(20),
        long_call: Duration::from_secs(60),
        ..Limits::default()
    });
    let component = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin("lazy-tools", &component, &json!({"defer": ["Defer(*)"]}))
        .unwrap();
    shell.create_agent("main", None).unwrap();
    let agents: serde_json::Map<String, Value> = (0..5_000)
        .map(|a| {
            let tools: serde_json::Map<String, Value> = (0..10)
                .map(|t| {
                    (
                        format!("server_{t}__tool_{a}"),
                        json!(format!("{:016x}", a * 10 + t)),
                    )
                })
                .collect();
            (format!("main/agent_{a}"), json!({ "tools": tools }))
        })
        .collect();
    let state = json!({
        "format": "lazy-tools/load-state",
        "version": 1,
        "strategy": "inject",
        "agents": agents,
    });
    shell
        .restore_state("lazy-tools", &state.to_string())
        .unwrap();
    let saved: Value = serde_json::from_str(&shell.export_state("lazy-tools").unwrap()).unwrap();
    assert_eq!(saved["agents"].as_object().unwrap().len(), 5_000);
    assert_eq!(
        saved["agents"]["main/agent_7"]["tools"]["server_3__tool_7"],
        json!("0000000000000049")
    );
    assert_eq!(shell.quarantined().count(), 0);
}

/// What a restore keeps is bounded and named as a shell names things: a state of 390,000
/// agents (16 MiB) restored, and its export then took the plugin past its memory; an agent
/// named twice (or a tool or group within one), an `unused_runs` that wraps, a tool name with a bell went through. Each is
/// refused at the restore, saying which, and the plugin goes on.
#[test]
fn a_state_lazy_tools_could_not_hold_or_name_is_refused_at_the_restore() {
    let mut shell = Shell::new();
    let component = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin("lazy-tools", &component, &json!({"defer": ["Defer(*)"]}))
        .unwrap();
    shell.create_agent("main", None).unwrap();
    let state = |agents: &str| {
        format!(
            r#"{{"format": "lazy-tools/load-state", "version": 1, "strategy": "inject", "agents": {agents}}}"#
        )
    };
    let load = r#"{"tools": {"t": "0123456789abcdef"}}"#;
    let many: Vec<String> = (0..=10_000)
        .map(|a| format!(r#""main/a{a}": {load}"#))
        .collect();
    for (agents, said) in [
        (format!("{{{}}}", many.join(",")), "more than 10000 agents"),
        (
            format!(r#"{{"main": {load}, "main": {{"tools": {{}}}}}}"#),
            "agent `main` is listed twice",
        ),
        (
            r#"{"main": {"tools": {"t": "0123456789abcdef", "t": "fedcba9876543210"}}}"#
                .to_string(),
            "tool `t` is listed twice",
        ),
        (
            r#"{"main": {"tools": {}, "groups": {"g": "full", "g": "partial"}}}"#.to_string(),
            "group `g` is listed twice",
        ),
        (
            r#"{"main/ghost": {"tools": {"t": "0123456789abcdef"}, "unused_runs": 4294967295}}"#
                .to_string(),
            "agent `main/ghost`: unused_runs 4294967295; a state carries an agent through at \
             most 7 runs",
        ),
        (
            r#"{"main": {"tools": {"\u0007bad": "0123456789abcdef"}}}"#.to_string(),
            "agent `main`, tool `\\u{7}bad`: a name with a control or bidirectional character",
        ),
        (format!(r#"{{"": {load}}}"#), "agent ``: an empty name"),
    ] {
        let err = shell
            .restore_state("lazy-tools", &state(&agents))
            .unwrap_err()
            .to_string();
        assert!(err.contains(said), "{said}: {err}");
    }
    assert_eq!(shell.quarantined().count(), 0);
    // The plugin still saves what it holds.
    shell.export_state("lazy-tools").unwrap();
}

/// A plugin that answers a registry change with an error value (not a failure: it stays
/// installed) does not keep the change from the plugins after it: lazy-tools, installed
/// second, still finds the new tool. The caller hears that the change is in force.
#[test]
fn an_error_value_from_registry_changed_still_reaches_the_plugins_after_it() {
    let mut shell = Shell::new();
    shell
        .register_tools(
            ["read", "gh_issue"].map(|n| Tool::new(n, "open an issue", Origin::Builtin)),
        )
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell
        .install_plugin(
            HOSTILE,
            &hostile(),
            &json!("fail=registry-changed how=errvalue"),
        )
        .unwrap();
    let lazy = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin("lazy-tools", &lazy, &json!({"defer": ["gh_*"]}))
        .unwrap();

    let err = shell
        .register_tools([Tool::new(
            "gh_release",
            "publish a release of a repository",
            Origin::Builtin,
        )])
        .unwrap_err();
    assert!(err.is::<RegistryChangeErrors>(), "{err:#}");
    assert_eq!(
        format!("{err:#}"),
        "the registry change is in force and every plugin was told of it, but plugin \
         `hostile` could not take it in (registry-changed): the shell refused it: hostile \
         refuses the registry change"
    );
    assert_eq!(shell.quarantined().count(), 0);

    let outcome = shell
        .call(
            "main",
            "tool_search",
            &json!({"queries": ["publish a release"]}),
        )
        .unwrap();
    let CallOutcome::Completed(output) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(output.text.contains("gh_release"), "{}", output.text);
}

/// A quarantined plugin's instance is dropped with the store that holds its linear memory
/// (up to the memory limit, until the shell ended): the shell keeps only why it stopped.
#[test]
fn a_quarantined_plugin_no_longer_holds_its_memory() {
    let mut shell = shell("fail=visible-tools how=grow");
    shell.next_request("main").unwrap();
    let quarantined: Vec<_> = shell.quarantined().cloned().collect();
    let [q] = quarantined.as_slice() else {
        panic!("{quarantined:?}");
    };
    assert!(q.reason.contains("ran out of memory"), "{q}");

    let held = shell.plugin_mut(HOSTILE).map(|p| p.memory_bytes());
    let Err(why) = held else {
        panic!("the quarantined plugin still holds {held:?} bytes of linear memory");
    };
    assert_eq!(why.to_string(), q.to_string());
    // Its quarantine is still reported, and its id still taken.
    assert_eq!(shell.plugin_ids().collect::<Vec<_>>(), [HOSTILE]);
}

/// What a tracing subscriber wrote, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap());
        String::from_utf8(bytes).unwrap()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One plugin call writes at most its allowance to the shell's log (a loop of 4 KiB lines
/// wrote 0.7 MB in one 50 ms call, 28 MB in one configure), then one line says how much
/// was held back.
#[test]
fn a_plugin_call_logs_within_its_allowance_and_says_what_it_held_back() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    // What the allowance lets through, with room for each line's time, level and fields,
    // the held-back line and the quarantine's.
    let at_most = MAX_LOG_BYTES_PER_CALL + (16 << 10);

    let mut shell = shell("fail=visible-tools how=logflood");
    captured.take();
    shell.next_request("main").unwrap();
    let q = shell.quarantined().next().cloned().unwrap();
    assert!(q.reason.contains("ran out of time"), "{q}");
    let log = captured.take();
    assert!(log.len() <= at_most, "one call logged {} bytes", log.len());
    let held_back = log
        .lines()
        .find(|l| l.contains("in visible-tools: "))
        .unwrap_or_else(|| panic!("no line says what was held back"));
    assert!(
        held_back.contains("more log lines (")
            && held_back.contains("were not shown: one call may write 256 lines or 64 KiB"),
        "{held_back}"
    );

    let mut shell = Shell::new();
    shell.set_plugin_limits(test_limits());
    let err = shell
        .install_plugin(HOSTILE, &hostile(), &json!("fail=configure how=logflood"))
        .unwrap_err();
    assert!(err.to_string().contains("failed in configure"), "{err}");
    let log = captured.take();
    assert!(
        log.len() <= at_most,
        "one configure logged {} bytes",
        log.len()
    );
    assert!(log.contains("in configure: "), "{log}");
}
