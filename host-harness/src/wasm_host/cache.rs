//! Precompiled components on disk, so a component is compiled once and then
//! loaded in well under a millisecond.
//!
//! An entry is keyed by the component's sha256 and the engine's
//! compatibility hash (wasmtime's `precompile_compatibility_hash`: its
//! version, target and compilation settings), so a component that changed or
//! an engine that changed never finds an old entry. Loading precompiled code
//! is unsafe (it is machine code, mapped executable), so an entry is used only
//! when its header says this program wrote it for exactly this component and
//! engine and the checksum of its code matches; anything else is reported as a
//! [`Rejection`] and the caller recompiles and overwrites it.
//!
//! Layout of an entry (integers little-endian):
//!
//! ```text
//! magic "lazy-tools/cwasm" | format u32 | component sha256 (64 hex) |
//! engine key (64 hex) | component size u64 | code length u64 |
//! xxh3-128 of the code u128 | code (Engine::precompile_component)
//! ```

use std::hash::Hasher;
use std::path::{Path, PathBuf};

use anyhow::Result;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::atomic_write::write_atomic;

const MAGIC: &[u8; 16] = b"lazy-tools/cwasm";
/// Bumped whenever the layout above changes.
const FORMAT: u32 = 1;
const HEADER_LEN: usize = 16 + 4 + 64 + 64 + 8 + 8 + 16;

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

    pub fn entry_path(&self, sha256: &str, engine: &EngineKey) -> PathBuf {
        // 16 hex digits of the engine key keep names short; the header holds
        // the whole key and is checked on load.
        self.dir
            .join(format!("{sha256}-{}.cwasm", &engine.as_str()[..16]))
    }

    /// The entry for component `sha256` on this engine, if it can be trusted.
    pub fn load(
        &self,
        engine: &Engine,
        key: &EngineKey,
        sha256: &str,
    ) -> Result<Cached, Rejection> {
        let path = self.entry_path(sha256, key);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Rejection::Missing),
            Err(e) => return Err(Rejection::Unreadable(e)),
        };
        let header = Header::parse(&bytes)?;
        if header.sha256 != fixed_hex(sha256) || header.engine != fixed_hex(key.as_str()) {
            return Err(Rejection::OtherKey);
        }
        let code = &bytes[HEADER_LEN..];
        if code.len() as u64 != header.code_len
            || xxhash_rust::xxh3::xxh3_128(code) != header.checksum
        {
            return Err(Rejection::Corrupt);
        }
        // SAFETY: the code was produced by `Engine::precompile_component` on
        // an engine with this compatibility key (checked above), written by
        // `store` and unchanged since (checksum). wasmtime checks its own
        // header and version again.
        let component = unsafe { Component::deserialize(engine, code) }
            .map_err(|e| Rejection::Refused(format!("{e:#}")))?;
        Ok(Cached {
            component,
            component_size: header.component_size,
        })
    }

    /// Writes the entry for component `sha256` (atomically: a reader never
    /// sees half an entry).
    pub fn store(
        &self,
        key: &EngineKey,
        sha256: &str,
        component_size: u64,
        code: &[u8],
    ) -> Result<PathBuf> {
        let mut bytes = Vec::with_capacity(HEADER_LEN + code.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT.to_le_bytes());
        bytes.extend_from_slice(&fixed_hex(sha256));
        bytes.extend_from_slice(&fixed_hex(key.as_str()));
        bytes.extend_from_slice(&component_size.to_le_bytes());
        bytes.extend_from_slice(&(code.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(code).to_le_bytes());
        bytes.extend_from_slice(code);
        let path = self.entry_path(sha256, key);
        write_atomic(&path, &bytes)?;
        Ok(path)
    }
}

struct Header<'a> {
    sha256: &'a [u8],
    engine: &'a [u8],
    component_size: u64,
    code_len: u64,
    checksum: u128,
}

impl<'a> Header<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Self, Rejection> {
        if bytes.len() < HEADER_LEN {
            return Err(if bytes.starts_with(MAGIC) {
                Rejection::Corrupt
            } else {
                Rejection::Foreign
            });
        }
        let (magic, rest) = bytes.split_at(16);
        let (format, rest) = rest.split_at(4);
        if magic != MAGIC || format != FORMAT.to_le_bytes() {
            return Err(Rejection::Foreign);
        }
        let (sha256, rest) = rest.split_at(64);
        let (engine, rest) = rest.split_at(64);
        let (component_size, rest) = rest.split_at(8);
        let (code_len, rest) = rest.split_at(8);
        let checksum = &rest[..16];
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
