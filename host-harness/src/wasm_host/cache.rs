//! Precompiled components on disk, so a component is compiled once and then
//! loaded in well under a millisecond.
//!
//! An entry is keyed by the component's sha256 and the engine's
//! compatibility hash (wasmtime's `precompile_compatibility_hash`: its
//! version, target and compilation settings), so a component that changed or
//! an engine that changed never finds an old entry. Loading precompiled code
//! is unsafe (it is machine code, mapped executable), so an entry is used only
//! when its check file says this program wrote it for exactly this component
//! and engine and the checksum of its code matches; anything else is reported
//! as a [`Rejection`] and the caller recompiles and overwrites it.
//!
//! An entry is two files: `<sha256>-<engine>.cwasm`, the code exactly as
//! `Engine::precompile_component` made it (so wasmtime can map it straight
//! from the file: copying it into memory first costs over a millisecond),
//! and `<sha256>-<engine>.check`, written after it (integers little-endian):
//!
//! ```text
//! magic "lazy-tools/cwasm" | format u32 | component sha256 (64 hex) |
//! engine key (64 hex) | component size u64 | code length u64 |
//! xxh3-128 of the code u128
//! ```
//!
//! Both are only ever replaced by a rename, never changed in place, which
//! is what mapping the code from its file requires.

use std::hash::Hasher;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::atomic_write::write_atomic;

const MAGIC: &[u8; 16] = b"lazy-tools/cwasm";
/// Bumped whenever the layout above changes.
const FORMAT: u32 = 2;
const CHECK_LEN: usize = 16 + 4 + 64 + 64 + 8 + 8 + 16;

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
    #[error("it is truncated or corrupt (its checksum does not match)")]
    Corrupt,
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
}

/// The cache folder.
#[derive(Debug, Clone)]
pub struct CompiledCache {
    dir: PathBuf,
}

impl CompiledCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
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

    /// The entry for component `sha256` on this engine, if it can be trusted.
    pub fn load(
        &self,
        engine: &Engine,
        key: &EngineKey,
        sha256: &str,
    ) -> Result<Cached, Rejection> {
        let check = match std::fs::read(self.check_path(sha256, key)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Rejection::Missing),
            Err(e) => return Err(Rejection::Unreadable(e)),
        };
        let check = Check::parse(&check)?;
        if check.sha256 != fixed_hex(sha256) || check.engine != fixed_hex(key.as_str()) {
            return Err(Rejection::OtherKey);
        }
        let path = self.entry_path(sha256, key);
        let (code, identity) = read_with_identity(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Rejection::Corrupt,
            _ => Rejection::Unreadable(e),
        })?;
        if code.len() as u64 != check.code_len
            || xxhash_rust::xxh3::xxh3_128(&code) != check.checksum
        {
            return Err(Rejection::Corrupt);
        }
        // SAFETY: the file holds code produced by `Engine::precompile_component`
        // on an engine with this compatibility key (checked above), written by
        // `store` and unchanged since (checksum); entries are replaced only by
        // renames, never written in place, so the mapping stays as verified.
        // wasmtime checks its own header and version again.
        let component = unsafe { Component::deserialize_file(engine, &path) }
            .map_err(|e| Rejection::Refused(format!("{e:#}")))?;
        // What wasmtime mapped must be the file that was verified, not one
        // renamed into its place in between.
        if identity_of(&path).ok() != Some(identity) {
            return Err(Rejection::Replaced);
        }
        Ok(Cached {
            component,
            component_size: check.component_size,
        })
    }

    /// Writes the entry for component `sha256`: the code, then its check
    /// file, each atomically, so a reader never trusts half an entry.
    pub fn store(
        &self,
        key: &EngineKey,
        sha256: &str,
        component_size: u64,
        code: &[u8],
    ) -> Result<PathBuf> {
        let path = self.entry_path(sha256, key);
        write_atomic(&path, code)?;
        let mut check = Vec::with_capacity(CHECK_LEN);
        check.extend_from_slice(MAGIC);
        check.extend_from_slice(&FORMAT.to_le_bytes());
        check.extend_from_slice(&fixed_hex(sha256));
        check.extend_from_slice(&fixed_hex(key.as_str()));
        check.extend_from_slice(&component_size.to_le_bytes());
        check.extend_from_slice(&(code.len() as u64).to_le_bytes());
        check.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(code).to_le_bytes());
        write_atomic(&self.check_path(sha256, key), &check)?;
        Ok(path)
    }
}

/// Which file a path named: device, inode, size and modification time.
#[derive(Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt as _;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        Self {
            dev,
            ino,
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

fn identity_of(path: &Path) -> std::io::Result<Identity> {
    Ok(Identity::of(&std::fs::metadata(path)?))
}

/// The file's bytes and the identity of the file they were read from.
fn read_with_identity(path: &Path) -> std::io::Result<(Vec<u8>, Identity)> {
    let mut file = std::fs::File::open(path)?;
    let identity = Identity::of(&file.metadata()?);
    let mut bytes = Vec::with_capacity(identity.len as usize);
    file.read_to_end(&mut bytes)?;
    Ok((bytes, identity))
}

struct Check<'a> {
    sha256: &'a [u8],
    engine: &'a [u8],
    component_size: u64,
    code_len: u64,
    checksum: u128,
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
        let (_magic, rest) = bytes.split_at(16);
        let (format, rest) = rest.split_at(4);
        if format != FORMAT.to_le_bytes() {
            return Err(Rejection::Foreign);
        }
        let (sha256, rest) = rest.split_at(64);
        let (engine, rest) = rest.split_at(64);
        let (component_size, rest) = rest.split_at(8);
        let (code_len, checksum) = rest.split_at(8);
        let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        Ok(Self {
            sha256,
            engine,
            component_size: u64_of(component_size),
            code_len: u64_of(code_len),
            checksum: u128::from_le_bytes(checksum.try_into().expect("16 bytes")),
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
