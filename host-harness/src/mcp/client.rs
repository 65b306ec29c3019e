//! One connection to an MCP server through the official SDK (`rmcp`):
//! started (spawn or connect, `initialize`, `tools/list` with every page),
//! called, watched, and stopped.
//!
//! A stdio server is spawned here rather than by the SDK so that the harness
//! owns the process: it knows its exit status, reads its stderr, sees lines
//! on its stdout that are not JSON-RPC (the SDK skips them silently, which
//! would turn a broken server into a hang), and stops its whole process group.

use std::collections::VecDeque;
use std::hash::BuildHasher as _;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
    PaginatedRequestParams, ServerJsonRpcMessage,
};
use rmcp::service::{ClientInitializeError, NotificationContext, Peer, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt as _};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt as _, ReadBuf};
use tokio::process::{Child, ChildStdout};
use tokio::sync::watch;

use super::cache::{CachedTool, Listing, MAX_LEFT_OUT_SAID, MAX_TOOLS, Names, too_many};
use super::config::{Launch, ServerConfig};
use super::cut;

/// How much of the server's stderr is kept for error messages.
const STDERR_LINES: usize = 5;
const STDERR_LINE_CHARS: usize = 300;
/// The bytes of a stderr line read for it: a character takes at most 4, and one more
/// character than is shown makes `printable` mark the cut.
const STDERR_LINE_BYTES: usize = 4 * (STDERR_LINE_CHARS + 1);
/// How much of a server's own message (an error answer) is kept: enough for any explanation,
/// not the megabytes a server may send as one.
const SERVER_TEXT_CHARS: usize = 2_000;
/// How much of a malformed line is quoted.
const QUOTE_CHARS: usize = 80;
/// A listing of at most [`MAX_TOOLS`] tools needs no more pages, unless some are empty.
const MAX_PAGES: usize = MAX_TOOLS;
/// The most text a whole listing may hold, its pages together (each page is one message of at
/// most [`MAX_MESSAGE_BYTES`]): ten thousand pages of large tools would otherwise be kept in
/// memory until the listing ended. Four times what the cache keeps of one.
const MAX_LISTING_BYTES: usize = 64 << 20;
/// How long a stopping server gets after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_millis(500);
/// How long an error waits for the server's exit and last stderr lines.
const STDERR_WAIT: Duration = Duration::from_millis(300);

/// Why a server could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    #[error("could not start `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    #[error("did not finish starting (initialize and tools/list) within {0:?}")]
    StartTimeout(Duration),
    /// No answer to a request (`tools/call`, or `tools/list` after a change) in time.
    #[error("did not answer {request} within {after:?}; it was stopped")]
    Timeout {
        request: &'static str,
        after: Duration,
    },
    /// The process exited, the connection closed or the server sent
    /// something that is not JSON-RPC.
    #[error("{0}")]
    Broken(String),
    #[error("failed to start: {0}")]
    Handshake(String),
    #[error("sent an invalid tools/list: {0}")]
    BadListing(String),
    /// The session is ending (Ctrl-C, SIGTERM): the harness stopped waiting for it.
    #[error("the harness stopped waiting for it: the session is ending")]
    Interrupted,
}

/// What the watchers saw, shared with the connection.
struct Watch {
    /// Set once: why the connection cannot be used any more.
    broken: watch::Sender<Option<String>>,
    tools_changed: AtomicBool,
    stderr: Mutex<VecDeque<String>>,
    /// The server's stderr reached its end (it exited, or closed it).
    stderr_closed: watch::Sender<bool>,
}

impl Watch {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            broken: watch::channel(None).0,
            tools_changed: AtomicBool::new(false),
            stderr: Mutex::new(VecDeque::new()),
            stderr_closed: watch::channel(false).0,
        })
    }

    fn break_with(&self, reason: String) {
        self.broken.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }

    fn broken(&self) -> Option<String> {
        self.broken.borrow().clone()
    }

    /// Why the connection broke, with the end of the server's stderr (given
    /// a moment to arrive: the exit can be seen before the last lines).
    async fn reason(&self) -> Option<String> {
        let reason = self.broken()?;
        let mut closed = self.stderr_closed.subscribe();
        let _ = tokio::time::timeout(STDERR_WAIT, closed.wait_for(|closed| *closed)).await;
        Some(format!("{reason}{}", self.stderr_tail()))
    }

    /// Waits a moment for the connection to be marked broken (a closed
    /// pipe can be seen before the exit), then says why.
    async fn settled_reason(&self) -> Option<String> {
        let mut broken = self.broken.subscribe();
        let _ = tokio::time::timeout(STDERR_WAIT, broken.wait_for(|r| r.is_some())).await;
        self.reason().await
    }

    /// `; its stderr ends: ...`, or nothing.
    fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            String::new()
        } else {
            format!(
                "; its stderr ends: {}",
                lines.iter().cloned().collect::<Vec<_>>().join(" | ")
            )
        }
    }
}

/// The client side handler: notes `notifications/tools/list_changed`.
#[derive(Clone)]
struct Handler {
    watch: Arc<Watch>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.watch.tools_changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("lazy-tools host-harness", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A connection being set up (the SDK's `initialize`).
type Starting = Pin<
    Box<dyn Future<Output = Result<RunningService<RoleClient, Handler>, InitializeFailure>> + Send>,
>;

/// Why the server's `initialize` failed.
struct InitializeFailure {
    /// What went wrong, shortened.
    message: String,
    /// Whether the connection closed under it: then the server's exit, if it exited, says more.
    closed: bool,
}

impl From<ClientInitializeError> for InitializeFailure {
    fn from(error: ClientInitializeError) -> Self {
        let closed = matches!(
            error,
            ClientInitializeError::ConnectionClosed(_)
                | ClientInitializeError::TransportError { .. }
        );
        let message = match &error {
            // The SDK prints what came as a Rust value.
            ClientInitializeError::ExpectedInitResponse(_)
            | ClientInitializeError::ExpectedInitResult(_) => {
                "answered initialize with something other than its result".to_string()
            }
            other => printable(&other.to_string(), SERVER_TEXT_CHARS),
        };
        Self { message, closed }
    }
}

/// A running server.
pub struct Connection {
    service: RunningService<RoleClient, Handler>,
    watch: Arc<Watch>,
    process: Option<Process>,
    /// The relist under way since the server said its tools changed.
    relisting: Option<tokio::task::JoinHandle<Result<Listing, Fault>>>,
}

impl Connection {
    /// Starts `config`'s server and lists its tools, all within its start
    /// timeout.
    pub async fn start(config: &ServerConfig) -> Result<(Self, Listing), Fault> {
        let watch = Watch::new();
        let handler = Handler {
            watch: watch.clone(),
        };
        let (process, starting) = match &config.launch {
            Launch::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (process, stdout, stdin) = Process::spawn(command, args, env, cwd, &watch)?;
                // The limit set here is the one `Inspect` enforces.
                let transport =
                    AsyncRwTransport::new_client(Inspect::new(stdout, watch.clone()), stdin)
                        .with_max_line_length(MAX_MESSAGE_BYTES);
                let serving = handler.serve(transport);
                (
                    Some(process),
                    Box::pin(async move { serving.await.map_err(InitializeFailure::from) })
                        as Starting,
                )
            }
            Launch::Http { url, headers } => {
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
                    http_config(url, headers)?,
                );
                let serving = handler.serve(transport);
                (
                    None,
                    Box::pin(async move { serving.await.map_err(InitializeFailure::from) })
                        as Starting,
                )
            }
        };
        let mut connection = None;
        let started = tokio::time::timeout(config.start_timeout, async {
            let service = match until_broken(&watch, starting).await? {
                Ok(service) => service,
                Err(e) if e.closed => {
                    return Err(broken_or(&watch, Fault::Handshake(e.message)).await);
                }
                // An error answer or a result the SDK refused: what the server said, not the
                // exit that closing its stdin then caused.
                Err(e) => {
                    return Err(Fault::Handshake(format!(
                        "{}{}",
                        e.message,
                        watch.stderr_tail()
                    )));
                }
            };
            let tools = until_broken(&watch, list_tools(&service)).await;
            let description = describe(&service, &config.name);
            connection = Some(service);
            match tools? {
                Ok(tools) => Ok::<_, Fault>((tools, description)),
                Err(Listed::Refused(why)) => Err(Fault::BadListing(why)),
                Err(Listed::Failed(e)) => {
                    let said = printable(&e.to_string(), SERVER_TEXT_CHARS);
                    Err(broken_or(&watch, Fault::Handshake(format!("tools/list: {said}"))).await)
                }
            }
        })
        .await;
        let stop = |connection: Option<RunningService<RoleClient, Handler>>, process| async move {
            if let Some(mut service) = connection {
                let _ = service.close_with_timeout(STOP_GRACE).await;
            }
            if let Some(process) = process {
                Process::stop(process).await;
            }
        };
        let (tools, description) = match started {
            Ok(Ok(found)) => found,
            Ok(Err(fault)) => {
                stop(connection, process).await;
                return Err(fault);
            }
            Err(_) => {
                stop(connection, process).await;
                return Err(Fault::StartTimeout(config.start_timeout));
            }
        };
        let service = connection.expect("set when started");
        let listing = match listing(description, tools) {
            Ok(listing) => listing,
            Err(fault) => {
                stop(Some(service), process).await;
                return Err(fault);
            }
        };
        Ok((
            Self {
                service,
                watch,
                process,
                relisting: None,
            },
            listing,
        ))
    }

    /// Calls `tool` with `arguments`; the result as the server sent it
    /// (`content`, `structuredContent`, `isError`), as JSON.
    pub async fn call(
        &self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<Result<Value, String>, Fault> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(JsonObject::from_iter(arguments.clone()));
        }
        let call = tokio::time::timeout(timeout, self.service.call_tool(params));
        match until_broken(&self.watch, call).await? {
            Err(_) => Err(Fault::Timeout {
                request: "tools/call",
                after: timeout,
            }),
            Ok(Ok(result)) => Ok(Ok(serde_json::to_value(result).map_err(|e| {
                Fault::Broken(format!("sent a result that is not JSON: {e}"))
            })?)),
            // The server answered with a JSON-RPC error: it is alive.
            // The model's to read, lines and all; a terminal escapes it where it shows it.
            Ok(Err(ServiceError::McpError(error))) => {
                Ok(Err(cut(&error.message, SERVER_TEXT_CHARS)))
            }
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(self.closed().await)
            }
            Ok(Err(other)) => Err(Fault::Broken(other.to_string())),
        }
    }

    /// Lists the tools again, after `notifications/tools/list_changed`, on a task of its own
    /// on `runtime`: a command need not wait for it (see [`Connection::relisted_within`]).
    pub fn start_relist(
        &mut self,
        runtime: &tokio::runtime::Handle,
        description: String,
        timeout: Duration,
    ) {
        let peer = self.service.peer().clone();
        let watch = self.watch.clone();
        self.relisting = Some(runtime.spawn(async move {
            let tools = tokio::time::timeout(timeout, list_tools(&peer));
            match until_broken(&watch, tools).await? {
                Err(_) => Err(Fault::Timeout {
                    request: "tools/list",
                    after: timeout,
                }),
                Ok(Ok(tools)) => listing(description, tools),
                Ok(Err(Listed::Refused(why))) => Err(Fault::BadListing(why)),
                Ok(Err(Listed::Failed(ServiceError::McpError(error)))) => Err(Fault::BadListing(
                    printable(&error.message, SERVER_TEXT_CHARS),
                )),
                Ok(Err(Listed::Failed(ServiceError::UnexpectedResponse))) => {
                    Err(Fault::BadListing(
                        "answered tools/list with something other than a listing".into(),
                    ))
                }
                Ok(Err(Listed::Failed(_))) => Err(closed(&watch).await),
            }
        }));
    }

    /// Whether a relist is under way.
    pub fn relisting(&self) -> bool {
        self.relisting.is_some()
    }

    /// The relist's outcome, waiting at most `wait` for it: `None` while it runs on.
    pub async fn relisted_within(&mut self, wait: Duration) -> Option<Result<Listing, Fault>> {
        let task = self.relisting.as_mut()?;
        let ended = tokio::time::timeout(wait, task).await.ok()?;
        self.relisting = None;
        Some(
            ended
                .unwrap_or_else(|_| Err(Fault::Broken("its relist ended without a result".into()))),
        )
    }

    /// Whether the server said its tools changed since the last call.
    pub fn take_tools_changed(&self) -> bool {
        self.watch.tools_changed.swap(false, Ordering::SeqCst)
    }

    /// Why the connection is unusable, if it is.
    pub fn fault(&self) -> Option<Fault> {
        self.watch
            .broken()
            .or_else(|| {
                self.service
                    .is_closed()
                    .then(|| "closed the connection".to_string())
            })
            .map(|reason| Fault::Broken(format!("{reason}{}", self.watch.stderr_tail())))
    }

    /// The server process's id (stdio servers).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid)
    }

    /// Closes the connection and stops the process (SIGTERM to its group,
    /// then SIGKILL), waiting for it to exit.
    pub async fn stop(self) {
        let Self {
            mut service,
            process,
            relisting,
            ..
        } = self;
        if let Some(task) = relisting {
            task.abort();
        }
        let _ = service.close_with_timeout(STOP_GRACE).await;
        if let Some(process) = process {
            Process::stop(process).await;
        }
    }

    async fn closed(&self) -> Fault {
        closed(&self.watch).await
    }
}

/// The connection closed under a request: say why, once the process watcher has seen the exit
/// (it may lag the closed pipe a little).
async fn closed(watch: &Watch) -> Fault {
    match watch.settled_reason().await {
        Some(reason) => Fault::Broken(reason),
        None => Fault::Broken(format!("closed the connection{}", watch.stderr_tail())),
    }
}

/// Runs `work` unless the connection breaks first.
async fn until_broken<T>(watch: &Watch, work: impl Future<Output = T>) -> Result<T, Fault> {
    let mut broken = watch.broken.subscribe();
    // The watch's guard is dropped before the next await: a relist runs on a task of its own,
    // which may move between threads.
    let broke = async {
        let _ = broken.wait_for(|reason| reason.is_some()).await;
    };
    // `work` first: a line already in the pipe (an error answer before the server exits) is
    // read before the exit is taken for the cause.
    tokio::select! {
        biased;
        result = work => Ok(result),
        () = broke => Err(Fault::Broken(watch.reason().await.unwrap_or_default())),
    }
}

/// Why [`list_tools`] has no listing.
enum Listed {
    /// The request failed (an error answer, a closed connection).
    Failed(ServiceError),
    /// The server's pages make a listing the harness does not take.
    Refused(String),
}

/// Every page of the server's `tools/list`, following `nextCursor`. The SDK's `list_all_tools`
/// follows it as long as it is set, so a server whose cursor never ends would fill the memory
/// until the timeout: this loop stops at a cursor given before, at more than [`MAX_TOOLS`]
/// tools, at more than [`MAX_PAGES`] pages, and past [`MAX_LISTING_BYTES`] of tools.
async fn list_tools(service: &Peer<RoleClient>) -> Result<Vec<rmcp::model::Tool>, Listed> {
    // Hashes, not the cursors: a cursor may be as long as a message.
    let hashes = std::hash::RandomState::new();
    let mut cursors = std::collections::HashSet::new();
    let mut tools = Vec::new();
    let mut cursor = None;
    let mut bytes = 0;
    for page in 1..=MAX_PAGES {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let listed = service.list_tools(params).await.map_err(Listed::Failed)?;
        bytes += serde_json::to_vec(&listed.tools).map_or(0, |text| text.len());
        if bytes > MAX_LISTING_BYTES {
            return Err(Listed::Refused(format!(
                "more than {} MiB of tools (the most the harness takes) by page {page}",
                MAX_LISTING_BYTES >> 20
            )));
        }
        tools.extend(listed.tools);
        if tools.len() > MAX_TOOLS {
            return Err(Listed::Refused(format!(
                "more than {MAX_TOOLS} tools (the most the harness takes) by page {page}"
            )));
        }
        let Some(next) = listed.next_cursor else {
            return Ok(tools);
        };
        if !cursors.insert(hashes.hash_one(&next)) {
            return Err(Listed::Refused(format!(
                "page {page} gives the nextCursor `{}` again: the listing would never end",
                printable(&next, QUOTE_CHARS)
            )));
        }
        cursor = Some(next);
    }
    Err(Listed::Refused(format!(
        "more than {MAX_PAGES} pages (the most the harness reads)"
    )))
}

/// A failed handshake is better explained by what the watchers saw.
async fn broken_or(watch: &Watch, fault: Fault) -> Fault {
    match watch.settled_reason().await {
        Some(reason) => Fault::Broken(reason),
        None => match fault {
            Fault::Handshake(message) => {
                Fault::Handshake(format!("{message}{}", watch.stderr_tail()))
            }
            other => other,
        },
    }
}

/// The group description: the server's instructions, else its name.
fn describe(service: &RunningService<RoleClient, Handler>, name: &str) -> String {
    let info = service.peer_info();
    let instructions = info
        .as_ref()
        .and_then(|info| info.instructions.clone())
        .filter(|text| !text.trim().is_empty());
    let server_name = info
        .as_ref()
        .and_then(|info| info.server_info.as_ref().map(|s| s.name.clone()))
        .filter(|text| !text.trim().is_empty());
    instructions
        .or(server_name)
        .unwrap_or_else(|| name.to_string())
}

/// The server's tools as the shell keeps them. A tool without a name, or with a name listed
/// before, is left out and said so (`left_out`): the server's other tools stay usable.
fn listing(description: String, tools: Vec<rmcp::model::Tool>) -> Result<Listing, Fault> {
    if let Some(why) = too_many(tools.len()) {
        return Err(Fault::BadListing(why));
    }
    let mut names = Names::default();
    let mut listed = Vec::with_capacity(tools.len());
    let mut left_out = Vec::new();
    let mut left_out_more = 0;
    for (at, tool) in tools.into_iter().enumerate() {
        let name = tool.name.to_string();
        if let Err(why) = names.take(at, &name) {
            if left_out.len() == MAX_LEFT_OUT_SAID {
                left_out_more += 1;
                continue;
            }
            let kept = if name.is_empty() {
                ""
            } else {
                "; the first is kept"
            };
            left_out.push(format!("tool {at} of its tools/list {why}{kept}"));
            continue;
        }
        let value = serde_json::to_value(&tool).map_err(|e| Fault::BadListing(e.to_string()))?;
        listed.push(CachedTool {
            name,
            description: tool.description.as_deref().unwrap_or_default().to_string(),
            input_schema: value
                .get("inputSchema")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        });
    }
    Ok(Listing {
        description,
        tools: listed,
        left_out,
        left_out_more,
    })
}

fn http_config(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig, Fault> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let bad = |e: &dyn std::fmt::Display| Fault::Spawn {
            command: url.to_string(),
            reason: format!("header `{name}`: {e}"),
        };
        let name = http::HeaderName::try_from(name.as_str()).map_err(|e| bad(&e))?;
        let value = http::HeaderValue::try_from(value.as_str()).map_err(|e| bad(&e))?;
        custom.insert(name, value);
    }
    Ok(StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(custom))
}

/// A stdio server's process: its id (and process group), and the task that
/// waits for it to exit.
struct Process {
    pid: u32,
    waiter: Option<tokio::task::JoinHandle<()>>,
}

/// The variables of the harness's environment a stdio server inherits: the official
/// TypeScript and Python SDKs' default list, and how this machine reaches the network, reads
/// text and keeps temporary files (proxies, certificate authorities, locale, time zone,
/// temporary folder), without which a server behind a TLS proxy cannot fetch anything.
/// Anything else a server needs (a token) is in its `env`.
const INHERITED_ENV: &[&str] = &[
    #[cfg(not(windows))]
    "HOME",
    #[cfg(not(windows))]
    "LOGNAME",
    "PATH",
    #[cfg(not(windows))]
    "SHELL",
    #[cfg(not(windows))]
    "TERM",
    #[cfg(not(windows))]
    "USER",
    #[cfg(windows)]
    "APPDATA",
    #[cfg(windows)]
    "HOMEDRIVE",
    #[cfg(windows)]
    "HOMEPATH",
    #[cfg(windows)]
    "LOCALAPPDATA",
    #[cfg(windows)]
    "PROCESSOR_ARCHITECTURE",
    #[cfg(windows)]
    "SYSTEMDRIVE",
    #[cfg(windows)]
    "SYSTEMROOT",
    #[cfg(windows)]
    "TEMP",
    #[cfg(windows)]
    "USERNAME",
    #[cfg(windows)]
    "USERPROFILE",
    #[cfg(windows)]
    "PROGRAMFILES",
    // What finds and starts a program there (`npx` is `npx.cmd`).
    #[cfg(windows)]
    "PATHEXT",
    #[cfg(windows)]
    "COMSPEC",
    #[cfg(windows)]
    "TMP",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
];

impl Process {
    fn spawn(
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: &Option<std::path::PathBuf>,
        watch: &Arc<Watch>,
    ) -> Result<(Self, ChildStdout, tokio::process::ChildStdin), Fault> {
        let spawn_fault = |reason: String| Fault::Spawn {
            command: command.to_string(),
            reason,
        };
        // Else a missing folder reads as a missing command: spawn(2) says only "not found".
        if let Some(cwd) = cwd {
            match std::fs::metadata(cwd) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(spawn_fault(format!(
                        "its cwd `{}` is not a directory",
                        cwd.display()
                    )));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(spawn_fault(format!(
                        "its cwd `{}` does not exist",
                        cwd.display()
                    )));
                }
                Err(e) => {
                    return Err(spawn_fault(format!("its cwd `{}`: {e}", cwd.display())));
                }
            }
        }
        let mut cmd = tokio::process::Command::new(command);
        // A server gets the few variables a program needs to run, and what its config gives
        // it, as the official SDKs' stdio clients do: not every secret of the user's shell.
        cmd.env_clear();
        for name in INHERITED_ENV {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.args(args)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own group, so that stopping it stops what it started.
        crate::child_process::own_group(cmd.as_std_mut());
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        crate::child_process::die_with_parent(cmd.as_std_mut());
        let mut child: Child = cmd.spawn().map_err(|e| spawn_fault(e.to_string()))?;
        let pid = child.id().unwrap_or_default();
        let (Some(stdout), Some(stdin), Some(stderr)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take())
        else {
            unreachable!("all three were piped");
        };
        tokio::spawn(drain_stderr(stderr, watch.clone()));
        let exit = watch.clone();
        let waiter = tokio::spawn(async move {
            let reason = match child.wait().await {
                Ok(status) => match status.code() {
                    Some(code) => format!("exited with status {code}"),
                    None => format!("was killed ({status})"),
                },
                Err(e) => format!("could not be waited for: {e}"),
            };
            exit.break_with(reason);
        });
        Ok((
            Self {
                pid,
                waiter: Some(waiter),
            },
            stdout,
            stdin,
        ))
    }

    /// SIGTERM to the group, a short grace, then SIGKILL; waits for the exit
    /// so that no zombie is left. The waiter stays in place until then: a stop
    /// dropped half way (the session interrupted during the grace) still kills
    /// the group in `drop`.
    async fn stop(mut self) {
        let Some(waiter) = self.waiter.as_mut() else {
            return;
        };
        crate::child_process::signal_group(self.pid, libc::SIGTERM);
        if tokio::time::timeout(STOP_GRACE, &mut *waiter)
            .await
            .is_err()
        {
            crate::child_process::signal_group(self.pid, libc::SIGKILL);
            let _ = waiter.await;
        }
        // Whatever the server started in its group goes too.
        crate::child_process::signal_group(self.pid, libc::SIGKILL);
        self.waiter = None;
    }
}

impl Drop for Process {
    /// Dropped without `stop` (a panic, a forgotten connection): kill the
    /// group now; the waiter task reaps the child.
    fn drop(&mut self) {
        if self.waiter.is_some() {
            crate::child_process::signal_group(self.pid, libc::SIGKILL);
        }
    }
}

/// Reads a server's stderr to its end, keeping the start of its last lines.
///
/// Read in chunks, not lines: a line is kept only up to [`STDERR_LINE_BYTES`] and the rest
/// of it is skipped, so a server that writes gigabytes without a newline costs no memory;
/// and bytes that are not UTF-8 are replaced, not an error, so the pipe is drained until the
/// server closes it (a reader that stopped would make the server's next write fail).
async fn drain_stderr(mut stderr: impl AsyncRead + Unpin, watch: Arc<Watch>) {
    let keep = |line: &[u8]| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut kept = watch.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == STDERR_LINES {
            kept.pop_front();
        }
        kept.push_back(printable(&String::from_utf8_lossy(line), STDERR_LINE_CHARS));
    };
    let mut chunk = vec![0; 8192];
    let mut line = Vec::with_capacity(STDERR_LINE_BYTES);
    // Whether the current line has bytes (kept or not): a last line without `\n` counts.
    let mut open = false;
    loop {
        let read = match stderr.read(&mut chunk).await {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        for piece in chunk[..read].split_inclusive(|b| *b == b'\n') {
            let (body, ends) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            let room = STDERR_LINE_BYTES - line.len();
            line.extend_from_slice(&body[..body.len().min(room)]);
            open = true;
            if ends {
                keep(&line);
                line.clear();
                open = false;
            }
        }
    }
    if open {
        keep(&line);
    }
    watch.stderr_closed.send_replace(true);
}

/// A server's text made safe for a terminal: control characters replaced,
/// at most `max` characters (an ellipsis marks a cut).
fn printable(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// The server's stdout on its way to the SDK, read line by line on the side:
/// a line the SDK would drop (not JSON, nested deeper than it parses, or
/// longer than it reads) breaks the connection at once, as the request it
/// answered would otherwise wait out its whole timeout.
struct Inspect {
    inner: ChildStdout,
    watch: Arc<Watch>,
    /// The current line so far, up to [`MAX_MESSAGE_BYTES`].
    line: Vec<u8>,
    /// The current line's bytes so far, `\n` included.
    length: usize,
}

/// The longest line (one JSON-RPC message, `\n` included) the SDK reads from a
/// stdio server. It drops a longer one and reads on, so the request it
/// answered would wait out its whole timeout: `Inspect` breaks the
/// connection instead.
const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// A byte order mark, which the SDK skips at the start of a line.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

impl Inspect {
    fn new(inner: ChildStdout, watch: Arc<Watch>) -> Self {
        Self {
            inner,
            watch,
            line: Vec::new(),
            length: 0,
        }
    }

    fn observe(&mut self, bytes: &[u8]) {
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            let (body, ends) = match chunk.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (chunk, false),
            };
            let before = self.length;
            self.length = self.length.saturating_add(chunk.len());
            if before <= MAX_MESSAGE_BYTES && self.length > MAX_MESSAGE_BYTES {
                self.watch.break_with(format!(
                    "sent a message of more than {} MiB on stdout, the most the client reads",
                    MAX_MESSAGE_BYTES >> 20
                ));
            }
            if self.length <= MAX_MESSAGE_BYTES {
                self.line.extend_from_slice(body);
            }
            if ends {
                if self.length <= MAX_MESSAGE_BYTES {
                    self.check_line();
                }
                self.line.clear();
                self.length = 0;
            }
        }
    }

    /// Parses the line as the SDK does (into a JSON-RPC message, with serde_json's recursion
    /// limit), so that what it would drop is seen here. The SDK passes over a request or a
    /// notification it cannot read (it answers the one, ignores the other); anything else it
    /// drops, and the request it answered would wait out its whole timeout.
    fn check_line(&self) {
        let line = self.line.strip_prefix(UTF8_BOM).unwrap_or(&self.line);
        if line.trim_ascii().is_empty()
            || serde_json::from_slice::<ServerJsonRpcMessage>(line).is_ok()
        {
            return;
        }
        let quoted = printable(&String::from_utf8_lossy(line.trim_ascii()), QUOTE_CHARS);
        let reason = match serde_json::from_slice::<Value>(line) {
            Ok(value) if value.get("method").is_some_and(Value::is_string) => return,
            Ok(Value::Array(_)) => {
                format!(
                    "sent a JSON-RPC batch on stdout, which the client does not read: `{quoted}`"
                )
            }
            Ok(_) => format!("sent JSON that is not a JSON-RPC message on stdout: `{quoted}`"),
            // serde_json says so only in its message: its error codes are private.
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => format!(
                "sent a message nested more than {JSON_DEPTH} levels deep on stdout, more than \
                 the client reads: `{quoted}`"
            ),
            Err(_) => format!("sent malformed JSON-RPC on stdout: `{quoted}`"),
        };
        self.watch.break_with(reason);
    }
}

/// serde_json's recursion limit (arrays and objects in one another), which
/// the SDK's parse of a message has.
const JSON_DEPTH: usize = 128;

impl AsyncRead for Inspect {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let fresh = buf.filled()[before..].to_vec();
            self.observe(&fresh);
        }
        polled
    }
}
