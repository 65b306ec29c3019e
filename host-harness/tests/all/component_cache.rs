//! The precompiled component cache, with the real lazy-tools component on the
//! real engine: an entry is written once and used after, and an entry that is
//! corrupt, foreign, copied from another home or for another component or
//! engine is never used, and neither is one whose component changed.

use std::path::Path;

use host_harness::shell::{Origin, Shell, Tool};
use host_harness::wasm_host::cache::{CompiledCache, Rejection, Verified};
use host_harness::wasm_host::{LoadError, LoadedFrom, WasmHost, hex, lazy_tools_component_path};
use serde_json::json;
use sha2::{Digest, Sha256};

/// A copy of the component in a temporary folder, with an empty cache.
struct Fixture {
    _dir: tempfile::TempDir,
    component: std::path::PathBuf,
    cache: CompiledCache,
    sha256: String,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let component = dir.path().join("lazy_tools.wasm");
    std::fs::copy(lazy_tools_component_path(), &component).unwrap();
    let cache = CompiledCache::new(dir.path().join("cache"), dir.path().join("cache.key"));
    let sha256 = hex(&Sha256::digest(std::fs::read(&component).unwrap()));
    Fixture {
        _dir: dir,
        component,
        cache,
        sha256,
    }
}

impl Fixture {
    /// Loads the component through the cache once; the code and check files of its entry.
    fn cached_entry(&self) -> (std::path::PathBuf, std::path::PathBuf) {
        let host = WasmHost::global();
        host.load_through_cache(&self.component, Some(&self.sha256), &self.cache)
            .unwrap();
        (
            self.cache.entry_path(&self.sha256, host.engine_key()),
            self.cache.check_path(&self.sha256, host.engine_key()),
        )
    }
}

/// The loaded component really runs: it hides an MCP tool behind its guards.
fn runs(component: &host_harness::wasm_host::PluginComponent) {
    let mut shell = Shell::new();
    shell
        .register_tools([
            Tool::new("bash", "Run a command", Origin::Builtin),
            Tool::new("gh__issue", "Create an issue", Origin::Mcp("gh".into())),
        ])
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell
        // The preset defers whatever the budget: two tools fit in any budget.
        .install_plugin("lazy-tools", component, &json!({"deferToolLoading": true}))
        .unwrap();
    let names: Vec<String> = shell
        .next_request("main")
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        names,
        ["bash", "tool_search", "defer_execute_tool", "load_tools"]
    );
}

#[test]
fn compiles_once_then_loads_from_the_cache() {
    let f = fixture();
    let host = WasmHost::global();
    let (first, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Compiled);
    assert_eq!(first.sha256, f.sha256);
    let entry = f.cache.entry_path(&f.sha256, host.engine_key());
    assert!(entry.is_file(), "no entry at {}", entry.display());
    assert!(f.cache.check_path(&f.sha256, host.engine_key()).is_file());

    let (second, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Cache);
    runs(&second);
    // Without a recorded sha256 the component is hashed, then found.
    let (_, from) = host
        .load_through_cache(&f.component, None, &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Cache);
}

#[test]
fn bad_entries_are_rejected_and_recompiled() {
    let f = fixture();
    let host = WasmHost::global();
    let (code_path, check_path) = f.cached_entry();
    let (code, check) = (
        std::fs::read(&code_path).unwrap(),
        std::fs::read(&check_path).unwrap(),
    );
    // Loads the entry with `code` and `check` in place of the good files.
    let reject = |bad_code: &[u8], bad_check: &[u8]| {
        std::fs::write(&code_path, bad_code).unwrap();
        std::fs::write(&check_path, bad_check).unwrap();
        match f
            .cache
            .load(host.engine(), host.engine_key(), &f.sha256, &f.component)
        {
            Ok(_) => panic!("a bad entry was loaded"),
            Err(rejection) => rejection,
        }
    };

    // One flipped bit in the code.
    let mut flipped = code.clone();
    let near_end = flipped.len() - 100;
    flipped[near_end] ^= 0x10;
    assert!(matches!(reject(&flipped, &check), Rejection::Corrupt));
    // Cut short, as by a crash while writing (which the rename prevents).
    assert!(matches!(
        reject(&code[..code.len() / 2], &check),
        Rejection::Corrupt
    ));
    // A check file some other program wrote.
    assert!(matches!(reject(&code, b"{}"), Rejection::Foreign));
    // Written for another engine: the check's engine key differs.
    let mut other_engine = check.clone();
    other_engine[16 + 4 + 64] ^= 0x01;
    assert!(matches!(reject(&code, &other_engine), Rejection::OtherKey));
    // The code without its check file is no entry.
    std::fs::remove_file(&check_path).unwrap();
    assert!(matches!(
        f.cache
            .load(host.engine(), host.engine_key(), &f.sha256, &f.component),
        Err(Rejection::Missing)
    ));

    // Loading through the cache now recompiles and repairs the entry.
    reject(&flipped, &check);
    let (component, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Compiled);
    runs(&component);
    assert_eq!(std::fs::read(&code_path).unwrap(), code);
    assert_eq!(std::fs::read(&check_path).unwrap(), check);
    let (_, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Cache);
}

#[test]
fn a_missing_or_changed_component_is_reported() {
    let f = fixture();
    let host = WasmHost::global();
    let missing = f.component.with_file_name("gone.wasm");
    let err = host
        .load_through_cache(&missing, Some(&f.sha256), &f.cache)
        .unwrap_err();
    assert!(
        matches!(err, LoadError::Missing(ref p) if p == &missing),
        "{err}"
    );

    let other = "0".repeat(64);
    let err = host
        .load_through_cache(&f.component, Some(&other), &f.cache)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the component {} has sha256 {}, not the recorded {other}",
            f.component.display(),
            f.sha256
        )
    );
    assert!(!Path::new(&f.cache.entry_path(&other, host.engine_key())).exists());

    // A file that is not WebAssembly is said to be so, not shown as wasmtime's dump of its
    // first bytes; a device is refused before it is read.
    let text = f.component.with_file_name("hosts.wasm");
    std::fs::write(&text, "127.0.0.1 localhost\n").unwrap();
    for (path, why) in [
        (
            text.as_path(),
            "not a WebAssembly component: it does not begin with `\\0asm`",
        ),
        (
            Path::new("/dev/zero"),
            "not a regular file; a plugin component must be one",
        ),
    ] {
        let err = host.load_through_cache(path, None, &f.cache).unwrap_err();
        assert_eq!(
            format!("{:#}", anyhow::Error::from(err)),
            format!("reading the plugin component {}: {why}", path.display())
        );
    }
}

/// Writes `entry`'s two files into `cache` as a copy would.
fn copy_entry(from: &CompiledCache, to: &CompiledCache, sha256: &str) {
    let key = WasmHost::global().engine_key();
    std::fs::create_dir_all(to.dir()).unwrap();
    for (a, b) in [
        (from.entry_path(sha256, key), to.entry_path(sha256, key)),
        (from.check_path(sha256, key), to.check_path(sha256, key)),
    ] {
        std::fs::copy(a, b).unwrap();
    }
}

#[test]
fn an_entry_from_another_home_or_patched_is_not_trusted() {
    let f = fixture();
    let host = WasmHost::global();
    host.load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    // A second home, with its own key: an entry copied (or forged) into its
    // cache by someone who cannot read that key does not pass.
    let other_home = tempfile::tempdir().unwrap();
    let other = CompiledCache::new(
        other_home.path().join("cache"),
        other_home.path().join("cache.key"),
    );
    // The other home's key exists before the copy arrives.
    let (_, from) = host.load_through_cache(&f.component, None, &other).unwrap();
    assert_eq!(from, LoadedFrom::Compiled);
    copy_entry(&f.cache, &other, &f.sha256);
    let rejection = other
        .load(host.engine(), host.engine_key(), &f.sha256, &f.component)
        .err()
        .expect("a copied entry was trusted");
    assert!(matches!(rejection, Rejection::Corrupt), "{rejection}");

    // Patched code with its checksum field rewritten: the MAC covers the
    // code, and nobody without the key can compute it.
    let code_path = f.cache.entry_path(&f.sha256, host.engine_key());
    let mut code = std::fs::read(&code_path).unwrap();
    let at = code.len() / 2;
    code[at] ^= 0xff;
    std::fs::write(&code_path, &code).unwrap();
    let rejection = f
        .cache
        .load(host.engine(), host.engine_key(), &f.sha256, &f.component)
        .err()
        .expect("patched code was trusted");
    assert!(matches!(rejection, Rejection::Corrupt), "{rejection}");
}

#[test]
fn a_changed_component_of_the_same_size_never_runs_the_old_code() {
    let f = fixture();
    let host = WasmHost::global();
    host.load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    let mut bytes = std::fs::read(&f.component).unwrap();
    let size = bytes.len();
    let last = size - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&f.component, &bytes).unwrap();
    assert_eq!(
        std::fs::metadata(&f.component).unwrap().len() as usize,
        size
    );

    let rejection = f
        .cache
        .load(host.engine(), host.engine_key(), &f.sha256, &f.component)
        .err()
        .expect("the old code was used for a changed component");
    assert!(
        matches!(rejection, Rejection::ComponentChanged),
        "{rejection}"
    );
    // Loading it as the profile recorded it says what happened.
    let err = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap_err();
    assert!(matches!(err, LoadError::Sha256Mismatch { .. }), "{err}");
}

/// What a test's cache waits for before it trusts a file's identity: more
/// than the kernel's timestamp tick, less than the real two seconds.
const TEST_SETTLE: std::time::Duration = std::time::Duration::from_millis(150);

/// The same cache with a settle time no test outlasts, for loads that must
/// come before the files settle: on a loaded machine, more than
/// [`TEST_SETTLE`] can pass between two lines of a test.
fn unsettled(cache: &CompiledCache) -> CompiledCache {
    cache
        .clone()
        .with_settle(Some(std::time::Duration::from_secs(3600)))
}

/// An entry compiled into a cache with a short settle time, then loaded once
/// after it settled (hashing both files and signing their identities), and
/// once more by identity.
fn settled_entry() -> (Fixture, CompiledCache) {
    let f = fixture();
    let cache = f.cache.clone().with_settle(Some(TEST_SETTLE));
    let host = WasmHost::global();
    let (_, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Compiled);
    // Not settled yet: hashed, nothing signed.
    let early = unsettled(&cache);
    let load_early = || early.load(host.engine(), host.engine_key(), &f.sha256, &f.component);
    assert_eq!(load_early().unwrap().verified, Verified::Hashed);
    assert_eq!(load_early().unwrap().verified, Verified::Hashed);
    let load = || cache.load(host.engine(), host.engine_key(), &f.sha256, &f.component);
    std::thread::sleep(TEST_SETTLE * 2);
    assert_eq!(load().unwrap().verified, Verified::Hashed);
    assert_eq!(load().unwrap().verified, Verified::ByIdentity);
    (f, cache)
}

/// Writes `bytes` over `path` in place (same inode, no truncation) and puts
/// its modification time back, as someone hiding a change would.
fn overwrite_keeping_mtime(path: &Path, bytes: &[u8]) {
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    std::io::Write::write_all(&mut &file, bytes).unwrap();
    file.set_modified(modified).unwrap();
}

#[test]
fn settled_files_load_by_identity_and_any_write_makes_the_load_hash_again() {
    let (f, cache) = settled_entry();
    let host = WasmHost::global();
    let load = || cache.load(host.engine(), host.engine_key(), &f.sha256, &f.component);
    runs(
        &host
            .load_through_cache(&f.component, Some(&f.sha256), &cache)
            .unwrap()
            .0,
    );

    // The same bytes written again in place (same inode, size and, restored,
    // modification time): the change time moved, so the load hashes again.
    let code_path = cache.entry_path(&f.sha256, host.engine_key());
    let code = std::fs::read(&code_path).unwrap();
    overwrite_keeping_mtime(&code_path, &code);
    assert_eq!(load().unwrap().verified, Verified::Hashed);

    // A copy renamed into place is another file: hashed, then trusted only
    // after it settled too.
    let copy = code_path.with_extension("copy");
    std::fs::copy(&code_path, &copy).unwrap();
    std::fs::rename(&copy, &code_path).unwrap();
    let early = unsettled(&cache);
    let load_early = || early.load(host.engine(), host.engine_key(), &f.sha256, &f.component);
    assert_eq!(load_early().unwrap().verified, Verified::Hashed);
    std::thread::sleep(TEST_SETTLE * 2);
    assert_eq!(load().unwrap().verified, Verified::Hashed);
    assert_eq!(load().unwrap().verified, Verified::ByIdentity);
}

#[test]
fn code_patched_after_its_identity_was_signed_never_runs() {
    let (f, cache) = settled_entry();
    let host = WasmHost::global();
    // Patched in place, size kept and modification time put back: only the
    // change time, which no user program can set, tells.
    let code_path = cache.entry_path(&f.sha256, host.engine_key());
    let mut code = std::fs::read(&code_path).unwrap();
    let at = code.len() / 2;
    code[at] ^= 0xff;
    overwrite_keeping_mtime(&code_path, &code);
    let rejection = cache
        .load(host.engine(), host.engine_key(), &f.sha256, &f.component)
        .err()
        .expect("patched code was trusted by its old identity");
    assert!(matches!(rejection, Rejection::Corrupt), "{rejection}");
}

#[test]
fn a_component_changed_after_its_identity_was_signed_never_runs_the_old_code() {
    let (f, cache) = settled_entry();
    let host = WasmHost::global();
    let mut bytes = std::fs::read(&f.component).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    overwrite_keeping_mtime(&f.component, &bytes);
    let rejection = cache
        .load(host.engine(), host.engine_key(), &f.sha256, &f.component)
        .err()
        .expect("the old code was used for a changed component");
    assert!(
        matches!(rejection, Rejection::ComponentChanged),
        "{rejection}"
    );
}

#[cfg(unix)]
#[test]
fn the_key_is_owner_only_and_a_shared_one_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = fixture();
    let host = WasmHost::global();
    host.load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    let key = f.cache.key_file();
    assert!(!key.starts_with(f.cache.dir()));
    let meta = std::fs::metadata(key).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), 32);

    // A key others can read signs nothing: the entry is not used.
    std::fs::set_permissions(key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let fresh = CompiledCache::new(f.cache.dir(), key);
    let rejection = fresh
        .load(host.engine(), host.engine_key(), &f.sha256, &f.component)
        .err()
        .expect("an entry was trusted under a shared key");
    assert!(
        rejection.to_string().contains("accessible to other users"),
        "{rejection}"
    );
    // The plugin still loads: compiled, not taken from the cache.
    let (component, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &fresh)
        .unwrap();
    assert_eq!(from, LoadedFrom::Compiled);
    runs(&component);
}

#[test]
fn a_fifo_in_the_cache_is_refused_without_waiting_for_a_writer() {
    let f = fixture();
    let (code_path, check_path) = f.cached_entry();
    let check = std::fs::read(&check_path).unwrap();
    let mkfifo = |path: &Path| {
        std::fs::remove_file(path).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    };
    // Loads the entry on another thread: opening a FIFO for reading waits for a writer, so a
    // load that opens one would never return.
    let load = |f: &Fixture| {
        let (cache, sha256, component) = (f.cache.clone(), f.sha256.clone(), f.component.clone());
        let (sent, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let host = WasmHost::global();
            let loaded = cache.load(host.engine(), host.engine_key(), &sha256, &component);
            sent.send(loaded.map(|_| ())).unwrap();
        });
        received
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the load returned")
    };
    mkfifo(&check_path);
    assert!(matches!(load(&f), Err(Rejection::Unreadable(_))));
    // A good check, and the code it signs replaced by a FIFO.
    std::fs::remove_file(&check_path).unwrap();
    std::fs::write(&check_path, &check).unwrap();
    mkfifo(&code_path);
    assert!(matches!(load(&f), Err(Rejection::Unreadable(_))));
}
