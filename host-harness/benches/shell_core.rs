//! `cargo bench -p host-harness --bench shell_core`: what the shell core's
//! name checks cost as the registry grows to 50,000 tools. Installing an
//! allow set (`restrict`, on every tool a plugin loads) and registering a
//! catalog check names against a name index; the baseline, run on the same
//! data, is the scan of every tool per name that the index replaced.
//! Prints medians.

use std::hint::black_box;
use std::time::{Duration, Instant};

use host_harness::shell::{Origin, ShellCore, Tool};

const SIZES: &[usize] = &[1_000, 10_000, 50_000];

fn catalog(n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| {
            let server = format!("server{}", i / 100);
            Tool::new(format!("{server}__tool_{i}"), "a tool", Origin::Mcp(server))
        })
        .collect()
}

fn median(runs: usize, mut run: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(|_| run()).collect();
    times.sort();
    times[times.len() / 2]
}

fn timed<T>(f: impl FnOnce() -> T) -> Duration {
    let start = Instant::now();
    black_box(f());
    start.elapsed()
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn main() {
    println!(
        "{:>8} {:>14} {:>16} {:>12} {:>16}",
        "tools", "restrict (ms)", "name scan (ms)", "scan/index", "register (ms)"
    );
    for &n in SIZES {
        let tools = catalog(n);
        let register = median(5, || {
            let tools = tools.clone();
            let mut core = ShellCore::default();
            let start = Instant::now();
            for tool in tools {
                core.register(tool).expect("unique names");
            }
            start.elapsed()
        });
        let mut core = ShellCore::default();
        for tool in tools {
            core.register(tool).expect("unique names");
        }
        core.create_agent("main", None).expect("a new agent");
        // The worst case a plugin meets: every tool stays visible.
        let allow: Vec<String> = core.tools().iter().map(|t| t.name.clone()).collect();
        let restrict = median(11, || {
            let allow = allow.clone();
            timed(|| {
                core.restrict("main", "p", Some(allow))
                    .expect("known names")
            })
        });
        // The baseline: for each name, a scan of the registry.
        let scan_runs = if n > 10_000 { 3 } else { 11 };
        let scan = median(scan_runs, || {
            timed(|| {
                allow
                    .iter()
                    .filter(|name| !core.tools().iter().any(|t| &t.name == *name))
                    .count()
            })
        });
        println!(
            "{n:>8} {:>14} {:>16} {:>12.0} {:>16}",
            ms(restrict),
            ms(scan),
            scan.as_secs_f64() / restrict.as_secs_f64(),
            ms(register)
        );
    }
}
