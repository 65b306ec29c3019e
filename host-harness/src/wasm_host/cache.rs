//! Precompiled components on disk, so a component is compiled once and then
//! loaded in well under a millisecond.
//!
//! An entry is keyed by the component's sha256 and the engine's
//! compatibility hash (wasmtime's `precompile_compatibility_hash`: its
//! version, target and compilation settings), so a component that changed or
//! an engine that changed never finds an old entry. Loading precompiled code
//! is unsafe (it is machine code, mapped executable), so an entry is used only
//! when its check file carries a valid MAC: a keyed BLAKE3 hash, under a
//! secret key kept outside the cache (`$DSH_HOME/cache.key`, 32 random bytes,
//! owner-only). Whoever can write the cache but not read the key cannot make
//! an entry pass: a copied entry (another home's, another component's) or a
//! patched one is rejected and recompiled. The check also holds a BLAKE3 hash
//! of the component's bytes, so a component file changed after it was
//! compiled (even to one of the same size) never runs the old code.
//!
//! Hashing 6 MB of code and 3 MB of component on every load costs more than
//! mapping the code, so, once both files have settled (unchanged for
//! [`DEFAULT_SETTLE`]), a load that verified them in full signs their
//! identities into the check: device, inode, size, modification and change
//! time. Later loads that find both files with exactly those identities skip
//! the hashing. The change time (ctime) is set by the kernel on every write,
//! rename or link and cannot be set by a user program, and a settled file's
//! recorded ctime is older than any write that can follow; so a file with an
//! unchanged identity holds the bytes that were hashed. A file that differs in
//! anything is verified in full again. (Git's index trusts the same fields,
//! with the same rule for files changed too recently.)
//!
//! An entry is two files: `<sha256>-<engine>.cwasm`, the code exactly as
//! `Engine::precompile_component` made it (so wasmtime can map it straight
//! from the file: copying it into memory first costs over a millisecond),
//! and `<sha256>-<engine>.check`, written after it (integers little-endian):
//!
//! ```text
//! magic "lazy-tools/cwasm" | format u32 | component sha256 (64 hex) |
//! engine key (64 hex) | component size u64 | component BLAKE3 [32] |
//! code length u64 | code MAC [32] = keyed BLAKE3 of the code |
//! component identity [48] | code identity [48] (all zero: not recorded) |
//! MAC [32] = keyed BLAKE3 of everything before it
//! ```
//!
//! Both are only ever replaced by a rename, never changed in place, which
//! is what mapping the code from its file requires.

use std::hash::Hasher;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use anyhow::Result;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::atomic_write::write_atomic;

const MAGIC: &[u8; 16] = b"lazy-tools/cwasm";
/// Bumped whenever the layout above changes.
const FORMAT: u32 = 4;
const IDENTITY_LEN: usize = 48;
const CHECK_LEN: usize = 16 + 4 + 64 + 64 + 8 + 32 + 8 + 32 + 2 * IDENTITY_LEN + 32;
/// The bytes of the check the MAC covers (with the code after them).
const SIGNED_LEN: usize = CHECK_LEN - 32;
const KEY_LEN: usize = 32;

/// How long a file must have been unchanged before its identity is trusted
/// in place of its bytes: longer than the coarsest timestamp granularity of
/// common file systems (one second), so any later write gets a later ctime.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(2);

/// The engine's compatibility hash as a sha256 hex string: stable across
/// runs (wasmtime's `Hash` impl feeds only settings and versions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineKey(String);

impl EngineKey {
    pub fn of(engine: &Engine) -> Self {
        let mut hasher = Sha256Hasher(Sha256::new());
        std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
        Self(super::hex(&hasher.0.finalize()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Feeds a `Hash` impl's bytes to sha256: `DefaultHasher` is not promised to
/// be stable between Rust releases, and the key names files that outlive
/// this binary.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        unreachable!("only the full digest is used")
    }
}

/// Why a cache entry was not used.
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    #[error("no entry")]
    Missing,
    #[error("reading it failed: {0}")]
    Unreadable(std::io::Error),
    #[error("it was not written by this program (unknown header)")]
    Foreign,
    #[error("it was written for another component or engine")]
    OtherKey,
    #[error(
        "its MAC does not match: it is truncated, corrupt, or was not written with this home's cache key"
    )]
    Corrupt,
    #[error("the component changed since it was precompiled")]
    ComponentChanged,
    #[error("the cache key cannot be used: {0}")]
    NoKey(String),
    #[error("it was replaced while it was being loaded")]
    Replaced,
    #[error("wasmtime refused it: {0}")]
    Refused(String),
}

/// A precompiled entry that passed every check.
pub struct Cached {
    pub component: Component,
    /// The size of the component it was compiled from.
    pub component_size: u64,
    /// How its files were checked.
    pub verified: Verified,
}

/// How a load made sure the code and the component are the ones signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// Both files were hashed (the MAC of the code, the component's hash).
    Hashed,
    /// Both files still have the identities signed into the check after an
    /// earlier load hashed them.
    ByIdentity,
}

/// The cache folder and the key its entries are signed with.
#[derive(Debug, Clone)]
pub struct CompiledCache {
    dir: PathBuf,
    key_file: PathBuf,
    /// Read (or created) on first use, once per process.
    key: Arc<OnceLock<Result<[u8; KEY_LEN], String>>>,
    /// How long files must be unchanged before their identities are signed;
    /// `None`: never, every load hashes both files.
    settle: Option<Duration>,
}

impl CompiledCache {
    /// The cache in `dir`, signed with the key in `key_file` (created on
    /// first use); `key_file` must not be in `dir`, where whoever writes
    /// entries could replace it.
    pub fn new(dir: impl Into<PathBuf>, key_file: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            key_file: key_file.into(),
            key: Arc::new(OnceLock::new()),
            settle: Some(DEFAULT_SETTLE),
        }
    }

    /// The same cache with another settle time (`None`: hash on every load).
    pub fn with_settle(mut self, settle: Option<Duration>) -> Self {
        self.settle = settle;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn key_file(&self) -> &Path {
        &self.key_file
    }

    /// The entry's code (`.cwasm`).
    pub fn entry_path(&self, sha256: &str, engine: &EngineKey) -> PathBuf {
        // 16 hex digits of the engine key keep names short; the check file
        // holds the whole key and is compared on load.
        self.dir
            .join(format!("{sha256}-{}.cwasm", &engine.as_str()[..16]))
    }

    /// The entry's check file.
    pub fn check_path(&self, sha256: &str, engine: &EngineKey) -> PathBuf {
        self.entry_path(sha256, engine).with_extension("check")
    }

    fn key(&self) -> Result<&[u8; KEY_LEN], Rejection> {
        self.key
            .get_or_init(|| load_or_create_key(&self.key_file))
            .as_ref()
            .map_err(|e| Rejection::NoKey(e.clone()))
    }

    /// The entry for component `sha256` on this engine, if it can be
    /// trusted and the component at `component` is still the one it was
    /// compiled from.
    pub fn load(
        &self,
        engine: &Engine,
        key: &EngineKey,
        sha256: &str,
        component: &Path,
    ) -> Result<Cached, Rejection> {
        let check_bytes = match read_check(&self.check_path(sha256, key)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Rejection::Missing),
            Err(e) => return Err(Rejection::Unreadable(e)),
        };
        let check = Check::parse(&check_bytes)?;
        if check.sha256 != fixed_hex(sha256) || check.engine != fixed_hex(key.as_str()) {
            return Err(Rejection::OtherKey);
        }
        let mac_key = self.key()?;
        if keyed_hash(mac_key, check.signed) != check.mac {
            return Err(Rejection::Corrupt);
        }
        let path = self.entry_path(sha256, key);
        let code_now = identity_of(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Rejection::Corrupt,
            _ => Rejection::Unreadable(e),
        })?;
        let component_now = identity_of(component).map_err(Rejection::Unreadable)?;
        let (code_identity, verified) = if check.code_identity.as_ref() == Some(&code_now)
            && check.component_identity.as_ref() == Some(&component_now)
        {
            (code_now, Verified::ByIdentity)
        } else {
            (
                self.verify_by_hashing(&check, &path, component)?,
                Verified::Hashed,
            )
        };
        // SAFETY: the file holds code produced by `Engine::precompile_component`
        // on an engine with this compatibility key (checked above), written by
        // `store` with this home's key and unchanged since (its MAC, or its
        // identity signed after a MAC check); entries are replaced only by
        // renames, never written in place, so the mapping stays as verified.
        // wasmtime checks its own header and version again.
        let loaded = unsafe { Component::deserialize_file(engine, &path) }
            .map_err(|e| Rejection::Refused(format!("{e:#}")))?;
        // What wasmtime mapped must be the file that was verified, not one
        // renamed into its place in between.
        if identity_of(&path).ok() != Some(code_identity) {
            return Err(Rejection::Replaced);
        }
        Ok(Cached {
            component: loaded,
            component_size: check.component_size,
            verified,
        })
    }

    /// Hashes the code and the component against the check; when both files
    /// have settled, signs their identities into a new check so that the
    /// next loads need not hash them (best effort: a read-only cache just
    /// keeps hashing). Returns the identity of the code file it hashed.
    fn verify_by_hashing(
        &self,
        check: &Check<'_>,
        path: &Path,
        component: &Path,
    ) -> Result<Identity, Rejection> {
        let mac_key = self.key()?;
        // Taken before the files are read: a write after this gets a later ctime.
        let now = SystemTime::now();
        let (code, code_identity) =
            read_with_identity(path, check.code_len, "a precompiled component").map_err(
                |e| match e.kind() {
                    std::io::ErrorKind::NotFound => Rejection::Corrupt,
                    _ => Rejection::Unreadable(e),
                },
            )?;
        if code.len() as u64 != check.code_len || keyed_hash(mac_key, &code) != check.code_mac {
            return Err(Rejection::Corrupt);
        }
        drop(code);
        // The check is genuine: now the component must be what it hashed.
        let (component_bytes, component_identity) =
            read_with_identity(component, check.component_size, "a plugin component")
                .map_err(Rejection::Unreadable)?;
        if component_bytes.len() as u64 != check.component_size
            || blake3::hash(&component_bytes).as_bytes() != check.component_hash
        {
            return Err(Rejection::ComponentChanged);
        }
        if let Some(settle) = self.settle
            && code_identity.settled(now, settle)
            && component_identity.settled(now, settle)
        {
            let mut signed = check.signed[..SIGNED_LEN - 2 * IDENTITY_LEN].to_vec();
            signed.extend_from_slice(&component_identity.encode());
            signed.extend_from_slice(&code_identity.encode());
            let mac = keyed_hash(mac_key, &signed);
            signed.extend_from_slice(&mac);
            let check_path = path.with_extension("check");
            if let Err(e) = write_atomic(&check_path, &signed) {
                tracing::debug!("could not sign the files' identities into the check: {e:#}");
            }
        }
        Ok(code_identity)
    }

    /// Writes the entry for `component` (whose sha256 is `sha256`): the
    /// code, then its signed check file, each atomically, so a reader never
    /// trusts half an entry. The files' identities are signed in later, by
    /// the first load after they settled.
    pub fn store(
        &self,
        key: &EngineKey,
        sha256: &str,
        component: &[u8],
        code: &[u8],
    ) -> Result<PathBuf> {
        let mac_key = self.key().map_err(|e| anyhow::anyhow!("{e}"))?;
        let path = self.entry_path(sha256, key);
        write_atomic(&path, code)?;
        let mut check = Vec::with_capacity(CHECK_LEN);
        check.extend_from_slice(MAGIC);
        check.extend_from_slice(&FORMAT.to_le_bytes());
        check.extend_from_slice(&fixed_hex(sha256));
        check.extend_from_slice(&fixed_hex(key.as_str()));
        check.extend_from_slice(&(component.len() as u64).to_le_bytes());
        check.extend_from_slice(blake3::hash(component).as_bytes());
        check.extend_from_slice(&(code.len() as u64).to_le_bytes());
        check.extend_from_slice(&keyed_hash(mac_key, code));
        check.extend_from_slice(&[0; 2 * IDENTITY_LEN]);
        let signature = keyed_hash(mac_key, &check);
        check.extend_from_slice(&signature);
        debug_assert_eq!(check.len(), CHECK_LEN);
        write_atomic(&self.check_path(sha256, key), &check)?;
        Ok(path)
    }
}

/// The keyed BLAKE3 hash (a MAC under the home's key) of `bytes`.
fn keyed_hash(key: &[u8; KEY_LEN], bytes: &[u8]) -> [u8; 32] {
    *blake3::keyed_hash(key, bytes).as_bytes()
}

/// The key in `path`, created (32 random bytes, owner-only) when there is
/// none. A key others can read or write is refused: with it, anyone could
/// sign code.
fn load_or_create_key(path: &Path) -> Result<[u8; KEY_LEN], String> {
    let shown = crate::terminal::escape(&path.display().to_string()).into_owned();
    match std::fs::symlink_metadata(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_key(path).map_err(|e| format!("creating {shown}: {e}"))?;
        }
        Err(e) => return Err(format!("reading {shown}: {e}")),
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("reading {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a plain file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{shown} is accessible to other users (mode {:o}); make it owner-only \
                 (chmod 600) or delete it",
                meta.mode() & 0o777
            ));
        }
    }
    let bytes = std::fs::read(path).map_err(|e| format!("reading {shown}: {e}"))?;
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| format!("{shown} holds {} bytes, not {KEY_LEN}", b.len()))
}

/// Writes a fresh key to a temporary file with owner-only permissions, then
/// links it into place, so two processes never see half a key, and one that
/// loses the race uses the other's.
fn create_key(path: &Path) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(std::io::Error::other)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let temp = parent.join(format!(".cache-key-{}", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let mut file = options.open(&temp)?;
    std::io::Write::write_all(&mut file, &key)?;
    file.sync_all()?;
    drop(file);
    let linked = std::fs::hard_link(&temp, path);
    let _ = std::fs::remove_file(&temp);
    match linked {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Which file a path named, and whether it was written since: device,
/// inode, size, modification and change time (`changed` is `None` where the
/// platform has no ctime: such identities are never signed).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, u32),
    changed: Option<(i64, u32)>,
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (dev, ino, modified, changed) = {
            use std::os::unix::fs::MetadataExt as _;
            (
                meta.dev(),
                meta.ino(),
                (meta.mtime(), meta.mtime_nsec() as u32),
                Some((meta.ctime(), meta.ctime_nsec() as u32)),
            )
        };
        #[cfg(not(unix))]
        let (dev, ino, modified, changed) = {
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map_or((0, 0), |d| (d.as_secs() as i64, d.subsec_nanos()));
            (0, 0, modified, None)
        };
        Self {
            dev,
            ino,
            len: meta.len(),
            modified,
            changed,
        }
    }

    /// Unchanged for at least `settle` before `now`: a write after `now`
    /// cannot leave the change time as it is.
    fn settled(&self, now: SystemTime, settle: Duration) -> bool {
        let Some((secs, nanos)) = self.changed else {
            return false;
        };
        let Ok(secs) = u64::try_from(secs) else {
            return false;
        };
        let changed = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
        now.duration_since(changed)
            .is_ok_and(|unchanged| unchanged >= settle)
    }

    fn encode(&self) -> [u8; IDENTITY_LEN] {
        let (changed_secs, changed_nanos) = self.changed.unwrap_or((0, 0));
        let mut out = [0u8; IDENTITY_LEN];
        let fields = [
            self.dev.to_le_bytes(),
            self.ino.to_le_bytes(),
            self.len.to_le_bytes(),
            self.modified.0.to_le_bytes(),
            changed_secs.to_le_bytes(),
        ];
        for (slot, field) in out.chunks_exact_mut(8).zip(fields) {
            slot.copy_from_slice(&field);
        }
        out[40..44].copy_from_slice(&self.modified.1.to_le_bytes());
        out[44..48].copy_from_slice(&changed_nanos.to_le_bytes());
        out
    }

    /// `None` for the all-zero field (not recorded).
    fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.iter().all(|&b| b == 0) {
            return None;
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        Some(Self {
            dev: u64_at(0),
            ino: u64_at(8),
            len: u64_at(16),
            modified: (u64_at(24) as i64, u32_at(40)),
            changed: Some((u64_at(32) as i64, u32_at(44))),
        })
    }
}

fn identity_of(path: &Path) -> std::io::Result<Identity> {
    Ok(Identity::of(&std::fs::metadata(path)?))
}

/// A check file's bytes, at most one more than a check holds (a longer one is not a check).
/// Anyone who can write the cache could put a FIFO or a huge file there.
fn read_check(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = crate::bounded::open_regular(path, "a cache check file")?;
    let mut bytes = Vec::with_capacity(CHECK_LEN + 1);
    file.take(CHECK_LEN as u64 + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The regular file's bytes (at most one more than `expected`, the length the check says it
/// has) and the identity of the file they were read from, unchanged while they were read.
fn read_with_identity(
    path: &Path,
    expected: u64,
    what: &str,
) -> std::io::Result<(Vec<u8>, Identity)> {
    let mut file = crate::bounded::open_regular(path, what)?;
    let identity = Identity::of(&file.metadata()?);
    let mut bytes = Vec::with_capacity(identity.len.min(expected + 1) as usize);
    (&mut file).take(expected + 1).read_to_end(&mut bytes)?;
    if Identity::of(&file.metadata()?) != identity {
        return Err(std::io::Error::other("it changed while it was being read"));
    }
    Ok((bytes, identity))
}

struct Check<'a> {
    sha256: &'a [u8],
    engine: &'a [u8],
    component_size: u64,
    component_hash: &'a [u8],
    code_len: u64,
    code_mac: &'a [u8],
    component_identity: Option<Identity>,
    code_identity: Option<Identity>,
    /// The fields the MAC covers.
    signed: &'a [u8],
    mac: [u8; 32],
}

impl<'a> Check<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Self, Rejection> {
        if bytes.len() != CHECK_LEN || !bytes.starts_with(MAGIC) {
            return Err(if bytes.starts_with(MAGIC) {
                Rejection::Corrupt
            } else {
                Rejection::Foreign
            });
        }
        let (signed, mac) = bytes.split_at(SIGNED_LEN);
        let (_magic, rest) = signed.split_at(16);
        let (format, rest) = rest.split_at(4);
        if format != FORMAT.to_le_bytes() {
            return Err(Rejection::Foreign);
        }
        let (sha256, rest) = rest.split_at(64);
        let (engine, rest) = rest.split_at(64);
        let (component_size, rest) = rest.split_at(8);
        let (component_hash, rest) = rest.split_at(32);
        let (code_len, rest) = rest.split_at(8);
        let (code_mac, identities) = rest.split_at(32);
        let (component_identity, code_identity) = identities.split_at(IDENTITY_LEN);
        let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        Ok(Self {
            sha256,
            engine,
            component_size: u64_of(component_size),
            component_hash,
            code_len: u64_of(code_len),
            code_mac,
            component_identity: Identity::decode(component_identity),
            code_identity: Identity::decode(code_identity),
            signed,
            mac: mac.try_into().expect("32 bytes"),
        })
    }
}

/// A 64-character hex field; shorter keys are padded so the layout stays
/// fixed (they then never match a real key).
fn fixed_hex(text: &str) -> [u8; 64] {
    let mut field = [b' '; 64];
    let len = text.len().min(64);
    field[..len].copy_from_slice(&text.as_bytes()[..len]);
    field
}
