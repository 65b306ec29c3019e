//! An MCP server for the harness's tests, on the official SDK's server side,
//! over stdio. Its tools have real schemas; `misbehave` can be told to crash,
//! hang, write garbage on stdout, send a message longer than a client reads,
//! write a byte that is not UTF-8 on stderr, or return an error result, and
//! `grow` adds a tool and sends `notifications/tools/list_changed`.
//!
//! ```text
//! mcp-fixture-server [--exit-at-start] [--refuse-initialize] [--relist-delay-ms N] [--variant N] [--page-size N] [--alike-names] [--bad-entries]
//!                    [--flood-stderr MIB] [--cursor-loop MODE] [--cursor-loop-after-grow]
//! ```
//! `--exit-at-start` exits with status 7 before reading anything; `--refuse-initialize` answers
//! `initialize` with an error, then exits with status 0 when stdin closes; `--relist-delay-ms N`
//! answers tools/list's first page N ms late once `grow` ran;
//! `--flood-stderr 256` first writes 256 MiB on stderr without a newline;
//! `--variant 2` offers one more tool (`echo_twice`), as a server does after
//! an upgrade; tools/list pages hold `--page-size` tools (default 2), so a
//! client must follow `nextCursor`; `--alike-names` offers `echo.loud` and
//! `echo-loud` too, two names that a shell writes alike; `--bad-entries` lists two entries a
//! shell must leave out: a tool with an empty name and `echo` again.
//! `--cursor-loop repeat|endless|empty` makes tools/list never end: the last page names its own
//! cursor again (`repeat`), or pages follow forever with distinct cursors, each with
//! `--page-size` new tools (`endless`, each described by `--padding` bytes) or none (`empty`), or
//! no page is ever sent (`hang`); with `--cursor-loop-after-grow`, only
//! once `grow` ran.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

#[derive(Clone)]
struct Fixture {
    variant: u32,
    page_size: usize,
    alike_names: bool,
    bad_entries: bool,
    /// Entries listed after the tools, each named with the same 20,000 characters
    /// (`--long-repeats N`): one is a tool, the rest are left out.
    long_repeats: usize,
    cursor_loop: Option<CursorLoop>,
    cursor_loop_after_grow: bool,
    /// How long the description of each endless page's tool is.
    padding: usize,
    grown: Arc<AtomicBool>,
    /// Answers `initialize` with an error (`--refuse-initialize`).
    refuse_initialize: bool,
    /// How long tools/list takes once `grow` ran (`--relist-delay-ms`).
    relist_delay: Duration,
}

/// How tools/list never ends (`--cursor-loop`).
#[derive(Clone, Copy)]
enum CursorLoop {
    Repeat,
    Endless,
    Empty,
    /// No page at all: the request is never answered.
    Hang,
}

impl Fixture {
    fn tools(&self) -> Vec<Value> {
        let mut tools = vec![
            json!({
                "name": "echo",
                "description": "Echo a message back, to check that calls reach the server.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "The message to echo"}},
                    "required": ["text"]
                }
            }),
            json!({
                "name": "add",
                "description": "Add two numbers and return the sum as structured content.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "number", "description": "The first addend"},
                        "b": {"type": "number", "description": "The second addend"}
                    },
                    "required": ["a", "b"]
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"sum": {"type": "number"}},
                    "required": ["sum"]
                }
            }),
            json!({
                "name": "misbehave",
                "description": "Fail on purpose: crash the server, hang, write garbage on stdout, or return an error result.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"mode": {"type": "string", "enum": ["crash", "hang", "garbage", "requests", "not-json-rpc", "long-garbage", "deep", "huge", "bad-utf8", "error", "long-error"]}},
                    "required": ["mode"]
                }
            }),
            json!({
                "name": "grow",
                "description": "Add the tool `extra` to this server and announce that the tool list changed.",
                "inputSchema": {"type": "object", "properties": {}}
            }),
        ];
        if self.variant >= 2 {
            tools.push(json!({
                "name": "echo_twice",
                "description": "Echo a message back twice.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"]
                }
            }));
        }
        if self.alike_names {
            for name in ["echo.loud", "echo-loud"] {
                tools.push(json!({
                    "name": name,
                    "description": format!("Echo a message back in capitals, saying it came through `{name}`."),
                    "inputSchema": {
                        "type": "object",
                        "properties": {"text": {"type": "string"}},
                        "required": ["text"]
                    }
                }));
            }
        }
        if self.bad_entries {
            tools.push(json!({"name": "", "inputSchema": {"type": "object"}}));
            tools.push(json!({
                "name": "echo",
                "description": "A second echo, which a client must not mistake for the first.",
                "inputSchema": {"type": "object", "properties": {}}
            }));
        }
        let long_name = "r".repeat(20_000);
        for _ in 0..self.long_repeats {
            tools.push(json!({"name": long_name, "inputSchema": {"type": "object"}}));
        }
        if self.grown.load(Ordering::SeqCst) {
            tools.push(json!({
                "name": "extra",
                "description": "A tool that appeared while the server ran.",
                "inputSchema": {"type": "object", "properties": {}}
            }));
        }
        tools
    }
}

fn text(result: String) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(result)]))
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities =
            serde_json::from_value(json!({"tools": {"listChanged": true}}))
                .expect("a valid capabilities object");
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("lazy-tools-fixture", "1.0.0"))
            .with_instructions("Test fixture: echo and add numbers, or fail on purpose.")
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.refuse_initialize {
            return Err(ErrorData::invalid_request(
                "this fixture refuses to start, as told",
                None,
            ));
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Late once per listing: at its first page.
        let first_page = request.as_ref().is_none_or(|r| r.cursor.is_none());
        if first_page && self.grown.load(Ordering::SeqCst) {
            tokio::time::sleep(self.relist_delay).await;
        }
        let tools = self.tools();
        let start: usize = request
            .and_then(|r| r.cursor)
            .map(|cursor| {
                cursor
                    .parse()
                    .map_err(|_| ErrorData::invalid_params("bad cursor", None))
            })
            .transpose()?
            .unwrap_or(0);
        let end = (start + self.page_size).min(tools.len());
        let looping = self
            .cursor_loop
            .filter(|_| !self.cursor_loop_after_grow || self.grown.load(Ordering::SeqCst));
        if matches!(looping, Some(CursorLoop::Hang)) {
            std::future::pending::<()>().await;
        }
        let page = match looping {
            Some(CursorLoop::Hang) => unreachable!("never answered"),
            Some(_) if end < tools.len() => json!({
                "tools": tools[start..end],
                "nextCursor": end.to_string(),
            }),
            None => json!({
                "tools": tools[start.min(end)..end],
                "nextCursor": (end < tools.len()).then(|| end.to_string()),
            }),
            Some(CursorLoop::Repeat) => json!({
                "tools": tools[start.min(end)..end],
                "nextCursor": start.to_string(),
            }),
            // The real tools, then `more_<n>` without end.
            Some(CursorLoop::Endless) => json!({
                "tools": (start..start + self.page_size)
                    .map(|i| tools.get(i).cloned().unwrap_or_else(|| {
                        json!({
                            "name": format!("more_{i}"),
                            "description": "x".repeat(self.padding),
                            "inputSchema": {"type": "object"},
                        })
                    }))
                    .collect::<Vec<_>>(),
                "nextCursor": (start + self.page_size).to_string(),
            }),
            Some(CursorLoop::Empty) => json!({
                "tools": tools[start.min(end)..end],
                "nextCursor": (start.max(end) + 1).to_string(),
            }),
        };
        serde_json::from_value(page).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let string = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| ErrorData::invalid_params(format!("`{key}` must be a string"), None))
        };
        let number = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_f64)
                .ok_or_else(|| ErrorData::invalid_params(format!("`{key}` must be a number"), None))
        };
        match request.name.as_ref() {
            "echo" => Ok(text(format!("echo: {}", string("text")?))),
            "echo_twice" if self.variant >= 2 => {
                let said = string("text")?;
                Ok(text(format!("{said} {said}")))
            }
            "add" => {
                let sum = number("a")? + number("b")?;
                Ok(CallToolResponse::Complete(CallToolResult::structured(
                    json!({"sum": sum}),
                )))
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(text("added the tool `extra`".into()))
            }
            "extra" if self.grown.load(Ordering::SeqCst) => Ok(text("extra ran".into())),
            name @ ("echo.loud" | "echo-loud") if self.alike_names => {
                Ok(text(format!("{name}: {}", string("text")?.to_uppercase())))
            }
            "misbehave" => match string("mode")?.as_str() {
                "crash" => {
                    eprintln!("fixture: crashing as told");
                    std::process::exit(3);
                }
                "hang" => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(text("woke up".into()))
                }
                "garbage" => {
                    {
                        use std::io::Write as _;
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(b"this is not JSON-RPC {{{\n");
                        let _ = out.flush();
                    }
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(text("unreachable".into()))
                }
                // Requests the client refuses (it offers no sampling), each with an id of
                // 10,000 characters: what a client logs of them is its own business.
                "requests" => {
                    {
                        use std::io::Write as _;
                        let mut out = std::io::stdout().lock();
                        for i in 0..50 {
                            let request = json!({
                                "jsonrpc": "2.0",
                                "id": format!("{i}-{}", "\u{1b}[31m".repeat(2_000)),
                                "method": "sampling/createMessage",
                                "params": {"messages": [], "maxTokens": 1}
                            });
                            let _ = writeln!(out, "{request}");
                        }
                        let _ = out.flush();
                    }
                    Ok(text("sent 50 requests".into()))
                }
                // JSON that no JSON-RPC message is: the SDK drops it, and answers nothing.
                "not-json-rpc" => {
                    {
                        use std::io::Write as _;
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(b"{\"hello\": \"world\"}\n");
                        let _ = out.flush();
                    }
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(text("unreachable".into()))
                }
                // An error answer of a megabyte, as a server may send a whole log.
                "long-error" => Err(ErrorData::internal_error(
                    format!("it failed:\nat line two: {}", "x".repeat(1 << 20)),
                    None,
                )),
                // What a client's JSON parser drops: more than 1 MiB that is not JSON, and a
                // notification nested 200 levels deep (serde_json stops at 128).
                mode @ ("long-garbage" | "deep") => {
                    let line = if mode == "deep" {
                        format!(
                            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":{}1{}}}}}"#,
                            "[".repeat(200),
                            "]".repeat(200)
                        )
                    } else {
                        format!("not JSON {}", "x".repeat(2 << 20))
                    };
                    {
                        use std::io::Write as _;
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "{line}");
                        let _ = out.flush();
                    }
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(text("unreachable".into()))
                }
                "huge" => {
                    // A well-formed notification one byte longer than rmcp's 16 MiB line
                    // limit (which counts the `\n`).
                    let head = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":""#;
                    let tail = b"\"}}\n";
                    let data = (16 << 20) + 1 - head.len() - tail.len();
                    {
                        use std::io::Write as _;
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(head);
                        let _ = out.write_all(&vec![b'x'; data]);
                        let _ = out.write_all(tail);
                        let _ = out.flush();
                    }
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(text("unreachable".into()))
                }
                "bad-utf8" => {
                    use std::io::Write as _;
                    let _ = std::io::stderr().write_all(b"fixture: \xff is not UTF-8\n");
                    // Time for a client that stops reading at such a byte to close the pipe:
                    // this server's next write then fails, and it says so by its status.
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    if writeln!(std::io::stderr(), "fixture: still writing").is_err() {
                        std::process::exit(4);
                    }
                    Ok(text("wrote a byte that is not UTF-8 on stderr".into()))
                }
                "error" => Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text("the tool failed, as asked"),
                ]))),
                other => Err(ErrorData::invalid_params(
                    format!("unknown mode `{other}`"),
                    None,
                )),
            },
            other => Err(ErrorData::invalid_params(
                format!("no tool `{other}`"),
                None,
            )),
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut fixture = Fixture {
        variant: 1,
        page_size: 2,
        alike_names: false,
        bad_entries: false,
        long_repeats: 0,
        cursor_loop: None,
        cursor_loop_after_grow: false,
        padding: 0,
        grown: Arc::new(AtomicBool::new(false)),
        refuse_initialize: false,
        relist_delay: Duration::ZERO,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match arg.as_str() {
            "--exit-at-start" => {
                eprintln!("fixture: exiting at start as told");
                std::process::exit(7);
            }
            // Fails only once the file exists: the launch (and so its cached listing) stays
            // the same from one session to the next.
            "--exit-at-start-if" => {
                let path = args.next().expect("--exit-at-start-if needs a path");
                if std::path::Path::new(&path).exists() {
                    eprintln!("fixture: exiting at start as {path} says");
                    std::process::exit(7);
                }
            }
            "--variant" => fixture.variant = value("--variant") as u32,
            "--page-size" => fixture.page_size = value("--page-size").max(1),
            "--alike-names" => fixture.alike_names = true,
            "--bad-entries" => fixture.bad_entries = true,
            // What a server sees of its environment: it refuses to start on a variable it
            // must not see, or without one it must.
            flag @ ("--exit-if-env" | "--exit-unless-env") => {
                let name = args.next().expect("an environment variable's name");
                if std::env::var_os(&name).is_some() == (flag == "--exit-if-env") {
                    eprintln!("fixture: {flag} {name}");
                    std::process::exit(9);
                }
            }
            "--long-repeats" => fixture.long_repeats = value("--long-repeats"),
            "--cursor-loop" => {
                fixture.cursor_loop = Some(match args.next().as_deref() {
                    Some("repeat") => CursorLoop::Repeat,
                    Some("endless") => CursorLoop::Endless,
                    Some("empty") => CursorLoop::Empty,
                    Some("hang") => CursorLoop::Hang,
                    other => {
                        panic!("--cursor-loop needs repeat, endless, empty or hang, not {other:?}")
                    }
                })
            }
            "--cursor-loop-after-grow" => fixture.cursor_loop_after_grow = true,
            "--refuse-initialize" => fixture.refuse_initialize = true,
            "--relist-delay-ms" => {
                fixture.relist_delay = Duration::from_millis(value("--relist-delay-ms") as u64)
            }
            "--padding" => fixture.padding = value("--padding"),
            "--flood-stderr" => {
                use std::io::Write as _;
                let mib = value("--flood-stderr");
                let chunk = vec![b'x'; 1 << 20];
                let mut err = std::io::stderr().lock();
                for _ in 0..mib {
                    err.write_all(&chunk).expect("stderr is read");
                }
                writeln!(err, "\nfixture: flooded stderr").expect("stderr is read");
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        if fixture.refuse_initialize {
            // Its error answered, it ends when the client closes stdin, with status 0, as
            // servers do.
            let _ = fixture.serve(rmcp::transport::stdio()).await;
            return;
        }
        let service = fixture
            .serve(rmcp::transport::stdio())
            .await
            .expect("the client initializes");
        let _ = service.waiting().await;
    });
}
