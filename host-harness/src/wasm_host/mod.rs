//! Runs plugin components on wasmtime: one engine per process, components
//! compiled once (and kept precompiled on disk, see `cache`), one store per
//! plugin instance.

pub mod cache;
#[cfg(target_os = "linux")]
mod huge_pages;
pub mod limits;
mod no_wait;
pub mod returned;
pub mod wit;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::host_view::HostView;
use crate::shell_core::ShellCore;
use crate::tool::Tool;
use cache::{CompiledCache, EngineKey, Rejection};
use lazy_tools::host::LogLevel;
use limits::{AsClock, CallClock, MemoryWatch};
pub use limits::{CallKind, LimitExceeded, Limits};
use returned::ReturnedBytes;
use wit::PluginBindings;
use wit::since_v0_3_0::wit::{
    CallResolution, ConfigError, Explanation, LocatedExplanation, PluginError,
    PluginError as PluginCallError, ToolResult, Verdict,
};

/// The path of the lazy-tools component this crate was built with.
pub fn lazy_tools_component_path() -> PathBuf {
    PathBuf::from(env!("LAZY_TOOLS_COMPONENT"))
}

pub struct WasmHost {
    engine: Engine,
    engine_key: EngineKey,
    linker: Linker<PluginState>,
    compiled: Mutex<HashMap<String, PluginComponent>>,
    /// Whether calls run under an epoch deadline (always, but for the
    /// benchmark that measures what the deadline costs).
    epochs: bool,
}

/// Where a loaded component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadedFrom {
    /// Already compiled in this process.
    Memory,
    /// The precompiled cache on disk.
    Cache,
    /// Compiled now (and written to the cache).
    Compiled,
}

/// Why a component could not be loaded; the first two are the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("the component {} does not exist", .0.display())]
    Missing(PathBuf),
    #[error("the component {} has sha256 {actual}, not the recorded {expected}", path.display())]
    Sha256Mismatch {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// A compiled component, ready to instantiate any number of times.
#[derive(Clone)]
pub struct PluginComponent {
    pub component: Component,
    /// sha256 of the component's bytes, hex.
    pub sha256: String,
    pub size: usize,
    pub path: PathBuf,
}

impl std::fmt::Debug for PluginComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginComponent")
            .field("sha256", &self.sha256)
            .field("size", &self.size)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

static WASM_HOST: LazyLock<WasmHost> = LazyLock::new(|| {
    WasmHost::new(EngineOptions::SHELL).expect("the wasmtime engine and linker can be set up")
});

/// How a host's engine runs plugins: as the shell does, or without one of its settings, only
/// to measure what that setting does.
#[derive(Debug, Clone, Copy)]
pub struct EngineOptions {
    /// A deadline per call: every loop header and function entry checks the epoch.
    pub epochs: bool,
    /// Linear memory the kernel may back with 2 MiB pages (Linux; see `huge_pages`).
    pub huge_pages: bool,
}

impl EngineOptions {
    /// What the shell runs plugins with.
    pub const SHELL: EngineOptions = EngineOptions {
        epochs: true,
        huge_pages: true,
    };
}

impl WasmHost {
    /// The process-wide host: compiling a component is costly, so every
    /// shell in the process shares one engine and its compiled components.
    pub fn global() -> &'static WasmHost {
        &WASM_HOST
    }

    /// A host of its own (not the process-wide one). Options other than
    /// [`EngineOptions::SHELL`] are for measuring what a setting does.
    pub fn new(options: EngineOptions) -> Result<Self> {
        let EngineOptions { epochs, huge_pages } = options;
        let mut config = Config::new();
        config.wasm_component_model(true);
        // Every loop header and function entry checks the epoch: a plugin
        // that loops is stopped at its call's deadline.
        config.epoch_interruption(epochs);
        // A first look at a large registry writes some 20 MB of fresh linear
        // memory: 2 MiB pages fault ten times less often than 4 KiB ones.
        // Memories of our own are not initialised copy-on-write from the
        // compiled image: the data segments are copied in at instantiation.
        #[cfg(target_os = "linux")]
        if huge_pages {
            config.with_host_memory(Arc::new(huge_pages::HugePageMemories));
            config.memory_init_cow(false);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = huge_pages;
        // For profiling the plugin with `perf record`: wasmtime writes
        // /tmp/perf-<pid>.map, which names the plugin's compiled functions.
        if std::env::var_os("LAZY_TOOLS_PERF_MAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)
            .into_anyhow()
            .context("creating the wasmtime engine")?;
        if epochs {
            limits::start_ticker(&engine);
        }
        let mut linker = Linker::new(&engine);
        // The plugin's std imports WASI p2 (stdio, environment, clocks,
        // random); it gets an empty context: nothing inherited or preopened.
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .into_anyhow()
            .context("linking WASI p2")?;
        // ... but a plugin may not wait in the host, where its deadline cannot stop it.
        no_wait::add_to_linker(&mut linker)
            .into_anyhow()
            .context("linking wasi:io/poll without waiting")?;
        wit::add_to_linker(&mut linker)?;
        Ok(Self {
            engine_key: EngineKey::of(&engine),
            engine,
            linker,
            compiled: Mutex::new(HashMap::new()),
            epochs,
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Loads and compiles the component at `path`, once per content.
    pub fn load(&self, path: &Path) -> Result<PluginComponent> {
        let bytes = read_component(path)
            .with_context(|| format!("reading the plugin component {}", path.display()))?;
        let sha256 = hex(&Sha256::digest(&bytes));
        if let Some(found) = self.lock_compiled().get(&sha256) {
            return Ok(found.clone());
        }
        let component = Component::new(&self.engine, &bytes)
            .into_anyhow()
            .with_context(|| format!("compiling the plugin component {}", path.display()))?;
        let loaded = PluginComponent {
            component,
            sha256: sha256.clone(),
            size: bytes.len(),
            path: path.to_path_buf(),
        };
        self.lock_compiled().insert(sha256, loaded.clone());
        Ok(loaded)
    }

    /// What precompiled artifacts of this engine are keyed by.
    pub fn engine_key(&self) -> &EngineKey {
        &self.engine_key
    }

    /// Loads the component at `path` through the precompiled `cache`:
    /// compiled at most once per content and engine, across processes, and
    /// kept in this process once loaded.
    ///
    /// With `expected_sha256` (what the profile recorded) a cache hit does
    /// not read the component at all, only checks that it is still there
    /// with the size it was compiled from; the sha256 is checked whenever the
    /// bytes are read.
    pub fn load_cached(
        &self,
        path: &Path,
        expected_sha256: Option<&str>,
        cache: &CompiledCache,
    ) -> Result<(PluginComponent, LoadedFrom), LoadError> {
        if let Some(found) = expected_sha256.and_then(|sha| self.lock_compiled().get(sha).cloned())
        {
            return Ok((found, LoadedFrom::Memory));
        }
        let (loaded, from) = self.load_through_cache(path, expected_sha256, cache)?;
        self.lock_compiled()
            .insert(loaded.sha256.clone(), loaded.clone());
        Ok((loaded, from))
    }

    /// [`load_cached`](Self::load_cached) without this process's map: what a
    /// new process does.
    pub fn load_through_cache(
        &self,
        path: &Path,
        expected_sha256: Option<&str>,
        cache: &CompiledCache,
    ) -> Result<(PluginComponent, LoadedFrom), LoadError> {
        if let Some(sha256) = expected_sha256
            && let Some(loaded) = self.load_from_disk_cache(path, sha256, cache)?
        {
            return Ok((loaded, LoadedFrom::Cache));
        }
        let bytes = match read_component(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadError::Missing(path.to_path_buf()));
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("reading the plugin component {}", path.display()))
                    .into());
            }
        };
        let sha256 = hex(&Sha256::digest(&bytes));
        match expected_sha256 {
            Some(expected) if expected != sha256 => {
                return Err(LoadError::Sha256Mismatch {
                    path: path.to_path_buf(),
                    expected: expected.to_string(),
                    actual: sha256,
                });
            }
            Some(_) => {}
            None => {
                if let Some(loaded) = self.load_from_disk_cache(path, &sha256, cache)? {
                    return Ok((loaded, LoadedFrom::Cache));
                }
            }
        }
        let code = self
            .engine
            .precompile_component(&bytes)
            .into_anyhow()
            .with_context(|| format!("compiling the plugin component {}", path.display()))?;
        if let Err(e) = cache.store(&self.engine_key, &sha256, &bytes, &code) {
            // A read-only cache costs time, not correctness.
            tracing::warn!("could not write the precompiled component: {e:#}");
        }
        // SAFETY: `code` was produced just now by this engine.
        let component = unsafe { Component::deserialize(&self.engine, &code) }
            .into_anyhow()
            .context("loading the component just compiled")?;
        let loaded = PluginComponent {
            component,
            sha256,
            size: bytes.len(),
            path: path.to_path_buf(),
        };
        Ok((loaded, LoadedFrom::Compiled))
    }

    /// The precompiled entry for `sha256`, when there is one that can be
    /// trusted and the component at `path` still has the size it was
    /// compiled from. `None` means: compile it (a bad entry is logged, and
    /// overwritten by the compilation).
    pub fn load_from_disk_cache(
        &self,
        path: &Path,
        sha256: &str,
        cache: &CompiledCache,
    ) -> Result<Option<PluginComponent>, LoadError> {
        let size = match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => meta.len(),
            Ok(_) => return Err(LoadError::Missing(path.to_path_buf())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadError::Missing(path.to_path_buf()));
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("reading {}", path.display()))
                    .into());
            }
        };
        let cached = match cache.load(&self.engine, &self.engine_key, sha256, path) {
            Ok(cached) if cached.component_size == size => cached,
            Ok(_) | Err(Rejection::ComponentChanged) => {
                tracing::info!(
                    "not using the precompiled {}: the component changed since",
                    path.display()
                );
                return Ok(None);
            }
            Err(Rejection::Missing) => return Ok(None),
            Err(rejection) => {
                tracing::warn!(
                    "recompiling {}: the precompiled entry {} is unusable: {rejection}",
                    path.display(),
                    cache.entry_path(sha256, &self.engine_key).display()
                );
                return Ok(None);
            }
        };
        Ok(Some(PluginComponent {
            component: cached.component,
            sha256: sha256.to_string(),
            size: size as usize,
            path: path.to_path_buf(),
        }))
    }

    /// The lazy-tools component built with this crate.
    pub fn lazy_tools(&self) -> Result<PluginComponent> {
        self.load(&lazy_tools_component_path())
    }

    pub fn instantiate(
        &self,
        component: &PluginComponent,
        plugin_id: &str,
        shell: Arc<Mutex<ShellCore>>,
        limits: Limits,
    ) -> Result<PluginInstance> {
        let state = PluginState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            host: HostView::new(shell, plugin_id),
            memory: MemoryWatch {
                bytes: 0,
                table_bytes: 0,
                limit: limits.memory_bytes,
                grows: 0,
            },
            clock: CallClock::default(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.memory);
        if self.epochs {
            store.epoch_deadline_callback(limits::deadline_callback);
            let deadline = store.data_mut().clock.start(limits.long_call);
            store.set_epoch_deadline(deadline);
        }
        let bindings = PluginBindings::instantiate(&mut store, &component.component, &self.linker)
            .with_context(|| format!("instantiating plugin `{plugin_id}`"))?;
        Ok(PluginInstance {
            store,
            bindings,
            limits,
            epochs: self.epochs,
        })
    }

    fn lock_compiled(&self) -> MutexGuard<'_, HashMap<String, PluginComponent>> {
        // A panic while holding this lock leaves the map intact.
        self.compiled.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a plugin's store holds: WASI state and the plugin's view of the
/// shell, which the WIT imports delegate to.
pub struct PluginState {
    wasi: WasiCtx,
    table: ResourceTable,
    host: HostView,
    memory: MemoryWatch,
    clock: CallClock,
}

impl AsClock for PluginState {
    fn clock(&self) -> &CallClock {
        &self.clock
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl PluginState {
    pub(crate) fn host(&self) -> &HostView {
        &self.host
    }

    /// Runs one of the shell's imports: its time is the shell's, not
    /// charged against the plugin's deadline.
    pub(crate) fn host_call<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let started = std::time::Instant::now();
        let out = f(self);
        self.clock.charge_host(started.elapsed());
        out
    }
}

/// One instantiated plugin. Every method returns `Err` only when the
/// plugin trapped; errors the plugin reports are values inside.
pub struct PluginInstance {
    store: Store<PluginState>,
    bindings: PluginBindings,
    limits: Limits,
    epochs: bool,
}

impl PluginInstance {
    pub fn contract_version(&self) -> &'static str {
        self.bindings.version()
    }

    /// Runs `run`, one call into the plugin, under a fresh log allowance; what the allowance
    /// held back, if anything, comes back beside its output.
    pub fn with_log_allowance<T>(
        &mut self,
        run: impl FnOnce(&mut Self) -> T,
    ) -> (T, Option<crate::log_allowance::HeldBack>) {
        self.store.data().host.open_log_allowance();
        let out = run(self);
        (out, self.store.data().host.close_log_allowance())
    }

    /// The plugin's last log lines, oldest first (a bounded number).
    pub fn recent_logs(&self) -> Vec<(LogLevel, String)> {
        self.store.data().host.recent_logs()
    }

    /// The bytes of linear memory the plugin holds: its high-water mark, since a WebAssembly
    /// memory never shrinks.
    pub fn memory_bytes(&self) -> usize {
        self.store.data().memory.bytes
    }

    /// How many times the plugin's linear memory has grown (each `memory.grow` that added
    /// memory): a heap grown in many small steps is faulted in page by page.
    pub fn memory_grows(&self) -> usize {
        self.store.data().memory.grows
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn configure(&mut self, config: &str) -> Result<Result<(), Vec<ConfigError>>> {
        let returned = self.bindings.configure(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Long),
            config,
        );
        self.checked("configure", returned)
    }

    pub fn guard_tools(&mut self) -> Result<Vec<Tool>> {
        let returned = self.bindings.guard_tools(begin(
            &mut self.store,
            &self.limits,
            self.epochs,
            CallKind::Short,
        ));
        let defs = self.checked("guard-tools", returned)?;
        defs.into_iter()
            .map(wit::since_v0_3_0::tool_from_wit)
            .collect()
    }

    pub fn agent_created(
        &mut self,
        agent: &str,
        parent: Option<&str>,
    ) -> Result<Result<(), PluginCallError>> {
        let returned = self.bindings.agent_created(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Long),
            agent,
            parent,
        );
        self.checked("agent-created", returned)
    }

    /// `agent` was created as a fork of `source`; a plugin older than 0.3.0
    /// hears of a new agent.
    pub fn agent_forked(
        &mut self,
        agent: &str,
        parent: Option<&str>,
        source: &str,
    ) -> Result<Result<(), PluginCallError>> {
        let returned = self.bindings.agent_forked(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Long),
            agent,
            parent,
            source,
        );
        self.checked("agent-forked", returned)
    }

    pub fn agent_disposed(&mut self, agent: &str) -> Result<()> {
        let returned = self.bindings.agent_disposed(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Short),
            agent,
        );
        self.checked("agent-disposed", returned)
    }

    pub fn registry_changed(&mut self) -> Result<Result<(), PluginCallError>> {
        let returned = self.bindings.registry_changed(begin(
            &mut self.store,
            &self.limits,
            self.epochs,
            CallKind::Long,
        ));
        self.checked("registry-changed", returned)
    }

    pub fn visible_tools(&mut self, agent: &str) -> Result<Result<Vec<String>, PluginCallError>> {
        let returned = self.bindings.visible_tools(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Short),
            agent,
        );
        self.checked("visible-tools", returned)
    }

    pub fn pre_execute(&mut self, agent: &str, tool: &str, arguments: &str) -> Result<Verdict> {
        let returned = self.bindings.pre_execute(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Short),
            agent,
            tool,
            arguments,
        );
        self.checked("pre-execute", returned)
    }

    pub fn execute(
        &mut self,
        agent: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<Result<ToolResult, PluginCallError>> {
        // A guard tool's call (the model searching or loading) may refresh the agent's view
        // of a large registry; a deadline that quarantined the plugin there would hand the
        // model every schema back. It is a tool call, not on the path of every request: long.
        let returned = self.bindings.execute(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Long),
            agent,
            tool,
            arguments,
        );
        self.checked("execute", returned)
    }

    pub fn system_prompt(
        &mut self,
        agent: &str,
    ) -> Result<Result<Option<String>, PluginCallError>> {
        let returned = self.bindings.system_prompt(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Short),
            agent,
        );
        self.checked("system-prompt", returned)
    }

    pub fn explain(&mut self, agent: &str, tool: &str) -> Result<Result<Explanation, PluginError>> {
        let returned = self.bindings.explain(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Short),
            agent,
            tool,
        );
        self.checked("explain", returned)
    }

    /// `explain` with the JSON pointer of the config entry that decided.
    pub fn explain_located(
        &mut self,
        agent: &str,
        tool: &str,
    ) -> Result<Result<LocatedExplanation, PluginCallError>> {
        let returned = self.bindings.explain_located(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Short),
            agent,
            tool,
        );
        self.checked("explain-located", returned)
    }

    /// Unwraps a forwarded call; `direct` for anything else.
    pub fn resolve_call(
        &mut self,
        agent: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<Result<CallResolution, PluginCallError>> {
        // It may load a lazy group (a server start): a long call.
        let returned = self.bindings.resolve_call(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Long),
            agent,
            tool,
            arguments,
        );
        self.checked("resolve-call", returned)
    }

    /// The plugin's load state; `None` for a plugin older than 0.3.0. A long call: it writes
    /// every agent's loads, up to a state of [`lazy_tools::MAX_STATE_BYTES`].
    pub fn export_state(&mut self) -> Result<Option<Result<String, PluginCallError>>> {
        let returned = self.bindings.export_state(begin(
            &mut self.store,
            &self.limits,
            self.epochs,
            CallKind::Long,
        ))?;
        // A state has its own bound where the shell saves it; its error has every call's.
        if let Some(Err(error)) = &returned {
            self.check_size("export-state", error.returned_bytes())?;
        }
        Ok(returned)
    }

    /// A long call: it reads a state of up to [`lazy_tools::MAX_STATE_BYTES`].
    pub fn restore_state(&mut self, state: &str) -> Result<Result<(), String>> {
        let returned = self.bindings.restore_state(
            begin(&mut self.store, &self.limits, self.epochs, CallKind::Long),
            state,
        );
        self.checked("restore-state", returned)
    }

    /// `returned`, failed if it holds more than a call may return: the shell quarantines the
    /// plugin, as for a trap.
    fn checked<T: ReturnedBytes>(&self, export: &str, returned: Result<T>) -> Result<T> {
        let value = returned?;
        self.check_size(export, value.returned_bytes())?;
        Ok(value)
    }

    fn check_size(&self, export: &str, bytes: usize) -> Result<()> {
        if bytes > self.limits.returned_bytes {
            anyhow::bail!(
                "returned too much: {bytes} bytes from {export} (limit {})",
                self.limits.returned_bytes
            );
        }
        Ok(())
    }

    pub fn dispose(&mut self) -> Result<()> {
        self.bindings.dispose(begin(
            &mut self.store,
            &self.limits,
            self.epochs,
            CallKind::Short,
        ))
    }
}

/// Starts the clock of one call, and its first epoch deadline.
fn begin<'a>(
    store: &'a mut Store<PluginState>,
    limits: &Limits,
    epochs: bool,
    kind: CallKind,
) -> &'a mut Store<PluginState> {
    if epochs {
        let limit = match kind {
            CallKind::Short => limits.call,
            CallKind::Long => limits.long_call,
        };
        let deadline = store.data_mut().clock.start(limit);
        store.set_epoch_deadline(deadline);
    }
    store
}

/// wasmtime 48 has its own error type; this brings it into anyhow so that
/// every step can say what it was doing.
pub(crate) trait IntoAnyhow<T> {
    fn into_anyhow(self) -> Result<T>;
}

impl<T> IntoAnyhow<T> for wasmtime::Result<T> {
    fn into_anyhow(self) -> Result<T> {
        self.map_err(anyhow::Error::from)
    }
}

/// The bytes of the component file at `path`, within [`crate::bounded::MAX_COMPONENT_BYTES`],
/// refused at once when they are not WebAssembly (wasmtime would say so in a debug dump of the
/// first bytes).
pub fn read_component(path: &Path) -> std::io::Result<Vec<u8>> {
    let bytes = crate::bounded::read(
        path,
        crate::bounded::MAX_COMPONENT_BYTES,
        "a plugin component",
    )?;
    if !bytes.starts_with(b"\0asm") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a WebAssembly component: it does not begin with `\\0asm`",
        ));
    }
    Ok(bytes)
}

/// Lowercase hex of `bytes` (how sha256 digests are written everywhere).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
