//! `profiles/<name>/mcp.yml`: the MCP servers a profile connects, in the
//! shape Claude Desktop, Claude Code and Cursor users already write:
//!
//! ```yaml
//! mcpServers:
//!   memory:
//!     command: npx
//!     args: ["-y", "@modelcontextprotocol/server-memory"]
//!     env: {MEMORY_FILE_PATH: /tmp/memory.json}
//!     cwd: /tmp
//!   remote:
//!     url: http://localhost:3001/mcp  # plain http: no TLS is compiled in
//!     headers: {Authorization: "Bearer ..."}
//!     lazyStart: false          # harness extras, all optional
//!     callTimeoutSeconds: 60
//!     startTimeoutSeconds: 30
//! ```
//!
//! Every problem is reported at its file, line and column, all at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::profile::rows::kind;
use crate::profile::{Problem, Problems, ProfileError};
use crate::yaml::LocatedValue;
use lazy_tools::suggest::did_you_mean;

/// The servers file in a profile folder.
pub const MCP_FILE: &str = "mcp.yml";

/// A server's name becomes the prefix of its tools (`<server>__<tool>`) and a
/// cache file name, so it is kept to what is safe in both.
const MAX_NAME: usize = 64;
/// Bounds on what a file may ask for; far above any real use.
const MAX_SERVERS: usize = 256;
const MAX_TEXT: usize = 8 * 1024;
const MAX_ITEMS: usize = 256;
const MAX_TIMEOUT_SECONDS: u64 = 24 * 60 * 60;
/// A shorter timeout is a typo (`1e-10`), and would round to no time at all.
const MIN_TIMEOUT_SECONDS: f64 = 0.001;

pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);

const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "lazyStart",
    "callTimeoutSeconds",
    "startTimeoutSeconds",
];

/// How the harness reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One declared server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub launch: Launch,
    /// `None`: the default (lazy when lazy-tools defers every tool of it).
    pub lazy_start: Option<bool>,
    pub call_timeout: Duration,
    pub start_timeout: Duration,
}

impl ServerConfig {
    /// A stdio server with the defaults.
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> Self {
        Self {
            name: name.to_string(),
            launch: Launch::Stdio {
                command: command.to_string(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
            lazy_start: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            start_timeout: DEFAULT_START_TIMEOUT,
        }
    }

    /// A hash of everything that decides which tools the server offers (its
    /// launch), so that a changed command invalidates the cached tool list.
    pub fn launch_hash(&self) -> String {
        let mut hasher = Sha256::new();
        let text = match &self.launch {
            Launch::Stdio {
                command,
                args,
                env,
                cwd,
            } => serde_json::json!({"command": command, "args": args, "env": env, "cwd": cwd}),
            Launch::Http { url, headers } => serde_json::json!({"url": url, "headers": headers}),
        };
        hasher.update(text.to_string().as_bytes());
        let digest = hasher.finalize();
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The servers of a profile, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpConfig {
    pub servers: Vec<ServerConfig>,
}

impl McpConfig {
    /// Reads `<profile>/mcp.yml`; no file means no servers. A relative `cwd` is the profile
    /// folder's, wherever the harness was started.
    pub fn load(profile_dir: &Path) -> Result<Self, ProfileError> {
        let path = profile_dir.join(MCP_FILE);
        let text = match crate::yaml::read_bounded(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(cause) => return Err(ProfileError::Unreadable { path, cause }),
        };
        let mut config = Self::parse(&path, &text)?;
        let base = std::path::absolute(profile_dir).unwrap_or_else(|_| profile_dir.into());
        for server in &mut config.servers {
            if let Launch::Stdio { cwd: Some(cwd), .. } = &mut server.launch
                && cwd.is_relative()
            {
                *cwd = base.join(&*cwd);
            }
        }
        Ok(config)
    }

    /// Parses `text`, read from `file` (used in messages only).
    pub fn parse(file: &Path, text: &str) -> Result<Self, Problems> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let doc = LocatedValue::parse(file, text)
            .map_err(|e| Problems(vec![Problem::new(e.place, e.message)]))?;
        Self::from_doc(&doc)
    }

    pub fn from_doc(doc: &LocatedValue) -> Result<Self, Problems> {
        let mut problems = Vec::new();
        let mut servers = Vec::new();
        let mut problem = |pointer: &str, message: String| {
            problems.push(Problem::new(doc.place(pointer), message));
        };
        let root = match &doc.value {
            Value::Null => return Ok(Self::default()),
            Value::Object(root) => root,
            other => {
                problem(
                    "",
                    format!(
                        "expected a mapping with `mcpServers`, found {}",
                        kind(other)
                    ),
                );
                return Err(Problems(problems));
            }
        };
        for key in root.keys().filter(|k| *k != "mcpServers") {
            let hint = did_you_mean(key, ["mcpServers"]);
            problem(
                &pointer(&["", key]),
                format!("unknown key `{key}`{hint}; the servers go under `mcpServers`"),
            );
        }
        match root.get("mcpServers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(entries)) => {
                if entries.len() > MAX_SERVERS {
                    problem(
                        "/mcpServers",
                        format!("{} servers; at most {MAX_SERVERS}", entries.len()),
                    );
                }
                for (name, entry) in entries.iter().take(MAX_SERVERS) {
                    let at = pointer(&["", "mcpServers", name]);
                    match server(name, entry, &at) {
                        Ok(server) => servers.push(server),
                        Err(found) => {
                            for (pointer, message) in found {
                                problem(&pointer, format!("server `{name}`: {message}"));
                            }
                        }
                    }
                }
            }
            Some(other) => problem(
                "/mcpServers",
                format!(
                    "`mcpServers` must map server names to servers, found {}",
                    kind(other)
                ),
            ),
        }
        if problems.is_empty() {
            Ok(Self { servers })
        } else {
            Err(Problems(problems))
        }
    }

    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }
}

type Found = Vec<(String, String)>;

fn server(name: &str, entry: &Value, at: &str) -> Result<ServerConfig, Found> {
    let mut found: Found = Vec::new();
    if let Err(message) = check_name(name) {
        found.push((at.to_string(), message));
    }
    let Value::Object(entry) = entry else {
        found.push((
            at.to_string(),
            format!(
                "expected a mapping (`command` or `url`), found {}",
                kind(entry)
            ),
        ));
        return Err(found);
    };
    for key in entry.keys() {
        if !SERVER_KEYS.contains(&key.as_str()) {
            let hint = did_you_mean(key, SERVER_KEYS.iter().copied());
            found.push((pointer(&[at, key]), format!("unknown key `{key}`{hint}")));
        }
    }
    let field = |key: &str| (entry.get(key), pointer(&[at, key]));
    let (command, command_at) = field("command");
    let (url, url_at) = field("url");
    let launch = match (command, url) {
        (Some(_), Some(_)) => {
            found.push((
                url_at,
                "has both `command` (stdio) and `url` (HTTP); keep one".into(),
            ));
            None
        }
        (None, None) => {
            found.push((
                at.to_string(),
                "needs `command` (stdio) or `url` (HTTP)".into(),
            ));
            None
        }
        (Some(command), None) => {
            for key in ["headers"] {
                if entry.contains_key(key) {
                    found.push((pointer(&[at, key]), format!("`{key}` is for `url` servers")));
                }
            }
            let command = text(command, &command_at, &mut found);
            if command.as_deref() == Some("") {
                found.push((command_at.clone(), "`command` is empty".into()));
            }
            let args = list(entry.get("args"), &pointer(&[at, "args"]), &mut found);
            let env = string_map(entry.get("env"), &pointer(&[at, "env"]), &mut found);
            // The process would get `A=B=1` for a key `A=B`, and `=1` for an empty one.
            for key in env
                .keys()
                .filter(|k| k.is_empty() || k.contains(['=', '\0']))
            {
                found.push((
                    pointer(&[at, "env", key]),
                    "an environment variable's name is not empty and holds no `=` or NUL".into(),
                ));
            }
            let cwd = match entry.get("cwd") {
                None | Some(Value::Null) => None,
                Some(value) => text(value, &pointer(&[at, "cwd"]), &mut found).map(PathBuf::from),
            };
            command.map(|command| Launch::Stdio {
                command,
                args,
                env,
                cwd,
            })
        }
        (None, Some(url)) => {
            for key in ["args", "env", "cwd"] {
                if entry.contains_key(key) {
                    found.push((
                        pointer(&[at, key]),
                        format!("`{key}` is for `command` servers"),
                    ));
                }
            }
            let url = text(url, &url_at, &mut found);
            match &url {
                Some(url) if url.starts_with("https://") => found.push((
                    url_at.clone(),
                    format!(
                        "`{url}` is an https:// URL, and this harness is built without TLS: \
                         only http:// URLs work (a local server, or a local proxy)"
                    ),
                )),
                Some(url) if !url.starts_with("http://") => {
                    found.push((url_at.clone(), format!("`{url}` is not an http:// URL")))
                }
                // What the client would refuse only when the server starts, with its own words.
                Some(url) => {
                    if let Err(e) = url::Url::parse(url) {
                        found.push((url_at.clone(), format!("`{url}` is not a URL: {e}")));
                    }
                }
                None => {}
            }
            let headers = string_map(entry.get("headers"), &pointer(&[at, "headers"]), &mut found);
            for (key, value) in &headers {
                let name_ok = !key.is_empty()
                    && key
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
                // Visible ASCII, spaces and tabs: what the HTTP client sends as it is.
                let value_ok = value
                    .bytes()
                    .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
                let problem = match (name_ok, value_ok) {
                    (false, _) => Some(format!(
                        "header `{key}` is not a valid HTTP header name (letters, digits, `-` \
                         and `_`)"
                    )),
                    (true, false) => Some(format!(
                        "header `{key}`: its value holds a character other than visible ASCII, \
                         space and tab"
                    )),
                    (true, true) => None,
                };
                if let Some(problem) = problem {
                    found.push((pointer(&[at, "headers", key]), problem));
                }
            }
            url.map(|url| Launch::Http { url, headers })
        }
    };
    let lazy_start = match entry.get("lazyStart") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            found.push((
                pointer(&[at, "lazyStart"]),
                format!("`lazyStart` must be true or false, found {}", kind(other)),
            ));
            None
        }
    };
    let call_timeout = seconds(
        entry,
        at,
        "callTimeoutSeconds",
        DEFAULT_CALL_TIMEOUT,
        &mut found,
    );
    let start_timeout = seconds(
        entry,
        at,
        "startTimeoutSeconds",
        DEFAULT_START_TIMEOUT,
        &mut found,
    );
    match launch {
        Some(launch) if found.is_empty() => Ok(ServerConfig {
            name: name.to_string(),
            launch,
            lazy_start,
            call_timeout,
            start_timeout,
        }),
        _ => Err(found),
    }
}

/// Tool names are `<server>__<tool>`: a server name holds no `__` and only
/// characters that are safe in tool names and file names.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!("a server name has 1 to {MAX_NAME} characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err("a server name holds only letters, digits, `-` and `_`".into());
    }
    if name.contains("__") || name.starts_with('_') || name.ends_with('_') {
        return Err(
            "a server name cannot hold `__` or start or end with `_`: its tools are `<server>__<tool>`"
                .into(),
        );
    }
    Ok(())
}

fn seconds(
    entry: &serde_json::Map<String, Value>,
    at: &str,
    key: &str,
    default: Duration,
    found: &mut Found,
) -> Duration {
    match entry.get(key) {
        None | Some(Value::Null) => default,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if (MIN_TIMEOUT_SECONDS..=MAX_TIMEOUT_SECONDS as f64).contains(&s) => {
                Duration::from_secs_f64(s)
            }
            _ => {
                found.push((
                    pointer(&[at, key]),
                    format!("`{key}` must be at least {MIN_TIMEOUT_SECONDS} (1 ms) and at most {MAX_TIMEOUT_SECONDS}, found {n}"),
                ));
                default
            }
        },
        Some(other) => {
            found.push((
                pointer(&[at, key]),
                format!("`{key}` must be a number of seconds, found {}", kind(other)),
            ));
            default
        }
    }
}

fn text(value: &Value, at: &str, found: &mut Found) -> Option<String> {
    match value {
        Value::String(s) if s.len() > MAX_TEXT => {
            found.push((at.to_string(), format!("longer than {MAX_TEXT} bytes")));
            None
        }
        Value::String(s) if s.contains('\0') => {
            found.push((at.to_string(), "holds a NUL character".into()));
            None
        }
        Value::String(s) => Some(s.clone()),
        // Numbers and booleans are common in args and env (`PORT: 8080`).
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        other => {
            found.push((
                at.to_string(),
                format!("expected a string, found {}", kind(other)),
            ));
            None
        }
    }
}

fn list(value: Option<&Value>, at: &str, found: &mut Found) -> Vec<String> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.len() > MAX_ITEMS => {
            found.push((at.to_string(), format!("more than {MAX_ITEMS} items")));
            Vec::new()
        }
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| text(item, &format!("{at}/{i}"), found))
            .collect(),
        Some(other) => {
            found.push((
                at.to_string(),
                format!("expected a list of strings, found {}", kind(other)),
            ));
            Vec::new()
        }
    }
}

fn string_map(value: Option<&Value>, at: &str, found: &mut Found) -> BTreeMap<String, String> {
    match value {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(map)) if map.len() > MAX_ITEMS => {
            found.push((at.to_string(), format!("more than {MAX_ITEMS} entries")));
            BTreeMap::new()
        }
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| text(v, &pointer(&[at, k]), found).map(|v| (k.clone(), v)))
            .collect(),
        Some(other) => {
            found.push((
                at.to_string(),
                format!("expected a mapping of strings, found {}", kind(other)),
            ));
            BTreeMap::new()
        }
    }
}

/// A JSON pointer from `base` and keys (escaped).
fn pointer(parts: &[&str]) -> String {
    let (base, keys) = parts.split_first().expect("a base");
    let mut at = base.to_string();
    for key in keys {
        at.push('/');
        at.push_str(&key.replace('~', "~0").replace('/', "~1"));
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpConfig, String> {
        McpConfig::parse(Path::new("mcp.yml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_shape_users_write() {
        let config = parse(
            "mcpServers:\n  memory:\n    command: npx\n    args: [-y, server-memory]\n    env: {PORT: 8080}\n    cwd: /tmp\n  remote:\n    url: http://example.com/mcp\n    headers: {Authorization: Bearer x}\n    lazyStart: false\n    callTimeoutSeconds: 2.5\n",
        )
        .unwrap();
        assert_eq!(config.servers.len(), 2);
        let memory = config.server("memory").unwrap();
        assert_eq!(
            memory.launch,
            Launch::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server-memory".into()],
                env: [("PORT".to_string(), "8080".to_string())].into(),
                cwd: Some("/tmp".into()),
            }
        );
        assert_eq!(memory.lazy_start, None);
        assert_eq!(memory.call_timeout, DEFAULT_CALL_TIMEOUT);
        let remote = config.server("remote").unwrap();
        assert!(
            matches!(&remote.launch, Launch::Http { url, .. } if url == "http://example.com/mcp")
        );
        assert_eq!(remote.lazy_start, Some(false));
        assert_eq!(remote.call_timeout, Duration::from_millis(2500));
    }

    #[test]
    fn every_problem_is_located() {
        let err = parse(
            "mcpServers:\n  a__b:\n    command: x\n  web:\n    url: ftp://x\n    args: [a]\n  bad:\n    command: x\n    lazyStart: yes\n    callTimeoutSeconds: 0\n    comand: y\n  none: {}\n  tls:\n    url: https://example.com/mcp\n    startTimeoutSeconds: 1e-10\n",
        )
        .unwrap_err();
        let expected = [
            "mcp.yml:2:3: server `a__b`: a server name cannot hold `__`",
            "mcp.yml:6:5: server `web`: `args` is for `command` servers",
            "mcp.yml:5:5: server `web`: `ftp://x` is not an http:// URL",
            "mcp.yml:11:5: server `bad`: unknown key `comand`; did you mean `command`?",
            "mcp.yml:9:5: server `bad`: `lazyStart` must be true or false, found a string",
            "mcp.yml:10:5: server `bad`: `callTimeoutSeconds` must be at least 0.001 (1 ms)",
            "mcp.yml:14:5: server `tls`: `https://example.com/mcp` is an https:// URL, and this \
             harness is built without TLS: only http:// URLs work",
            "mcp.yml:15:5: server `tls`: `startTimeoutSeconds` must be at least 0.001 (1 ms) and \
             at most 86400, found 1e-10",
            "mcp.yml:12:3: server `none`: needs `command` (stdio) or `url` (HTTP)",
        ];
        for line in expected {
            assert!(
                err.lines().any(|l| l.starts_with(line)),
                "missing {line:?} in:\n{err}"
            );
        }
        assert_eq!(err.lines().count(), expected.len(), "{err}");
    }

    /// A URL or header the HTTP client would refuse is refused at its place when the file is
    /// read, not when the server starts, in the client's words and with no place.
    #[test]
    fn a_url_or_header_the_client_would_refuse_is_located() {
        let err = parse(
            "mcpServers:\n  a: {url: \"http://exa mple/mcp\"}\n  b:\n    url: http://127.0.0.1:1/x\n    headers: {X-A: \"v\\x01\", X-B: \"caf\u{e9}\", X-C: \"ok\\tvalue\"}\n  c: {url: \"http://\"}\n",
        )
        .unwrap_err();
        let expected = [
            "mcp.yml:2:7: server `a`: `http://exa mple/mcp` is not a URL: invalid international domain name",
            "mcp.yml:5:15: server `b`: header `X-A`: its value holds a character other than visible ASCII",
            "mcp.yml:5:29: server `b`: header `X-B`: its value holds a character other than visible ASCII",
            "mcp.yml:6:7: server `c`: `http://` is not a URL: empty host",
        ];
        for line in expected {
            assert!(
                err.lines().any(|l| l.starts_with(line)),
                "missing {line:?} in:\n{err}"
            );
        }
        assert_eq!(err.lines().count(), expected.len(), "{err}");
    }

    #[test]
    fn an_environment_variable_needs_a_name_without_equals() {
        let err = parse("mcpServers:\n  s:\n    command: x\n    env:\n      A=B: 1\n      \"\": 2\n      OK: 3\n")
            .unwrap_err();
        let expected = "an environment variable's name is not empty and holds no `=` or NUL";
        assert_eq!(
            err.lines().collect::<Vec<_>>(),
            [
                format!("mcp.yml:6:7: server `s`: {expected}"),
                format!("mcp.yml:5:7: server `s`: {expected}"),
            ],
            "{err}"
        );
    }

    #[test]
    fn no_file_or_an_empty_one_means_no_servers() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(McpConfig::load(dir.path()).unwrap(), McpConfig::default());
        assert_eq!(parse("").unwrap(), McpConfig::default());
        assert!(
            parse("servers: {}\n")
                .unwrap_err()
                .contains("did you mean `mcpServers`?")
        );
    }

    #[test]
    fn the_launch_hash_follows_the_launch_only() {
        let a = ServerConfig::stdio("a", "node", &["x.js"]);
        let mut b = a.clone();
        b.call_timeout = Duration::from_secs(1);
        assert_eq!(a.launch_hash(), b.launch_hash());
        let c = ServerConfig::stdio("a", "node", &["y.js"]);
        assert_ne!(a.launch_hash(), c.launch_hash());
    }

    /// A relative `cwd` is the profile folder's: the same server starts in the same folder
    /// whatever folder the harness was started in.
    #[test]
    fn a_relative_cwd_is_the_profile_folders() {
        let profile = tempfile::tempdir().unwrap();
        std::fs::write(
            profile.path().join(MCP_FILE),
            "mcpServers:\n  a: {command: srv, cwd: data}\n  b: {command: srv, cwd: /srv}\n",
        )
        .unwrap();
        let config = McpConfig::load(profile.path()).unwrap();
        let cwds: Vec<Option<PathBuf>> = (config.servers.iter())
            .map(|server| match &server.launch {
                Launch::Stdio { cwd, .. } => cwd.clone(),
                Launch::Http { .. } => None,
            })
            .collect();
        assert_eq!(
            cwds,
            [Some(profile.path().join("data")), Some("/srv".into())]
        );
    }
}
