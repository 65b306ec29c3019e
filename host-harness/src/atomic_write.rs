//! Writes that never leave a half-written file: the bytes go to a temporary
//! file in the target's own folder (so the rename stays on one filesystem),
//! are flushed to disk, then renamed over the target.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

/// Refuses a target that exists and is not a regular file: the rename would replace a FIFO,
/// a device or a symbolic link with a file of its own (what the link points at is never
/// written). Checked before the work whose result goes there, so that a bad target is said
/// first rather than once the work would be lost.
pub fn check_target(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(meta) => bail!(
            "{} is {}, not a regular file: writing it would replace it with one (name a regular \
             file, or a path that does not exist yet)",
            path.display(),
            kind(&meta.file_type())
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("checking {}", path.display())),
    }
}

/// What a file that is not a regular one is, for a person.
fn kind(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "a device";
        }
    }
    if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_dir() {
        "a folder"
    } else {
        "not a file"
    }
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".tmp-");
    // The new file gets the old one's permissions, or the usual ones for a
    // new file (a temporary file alone would be private to its owner).
    match std::fs::metadata(path) {
        Ok(meta) => {
            builder.permissions(meta.permissions());
        }
        Err(_) => new_file_permissions(&mut builder),
    }
    let mut temp = builder
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .with_context(|| format!("writing {}", temp.path().display()))?;
    temp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}

#[cfg(unix)]
fn new_file_permissions(builder: &mut tempfile::Builder) {
    use std::os::unix::fs::PermissionsExt as _;
    // Like any new file: readable by all, subject to the umask.
    builder.permissions(std::fs::Permissions::from_mode(0o644));
}

#[cfg(not(unix))]
fn new_file_permissions(_: &mut tempfile::Builder) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/file.yml");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["file.yml"]);
    }

    #[cfg(unix)]
    #[test]
    fn keeps_the_permissions_of_the_file_it_replaces() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cordis.yml");
        write_atomic(&path, b"one").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // New files are not private to their owner (umask aside).
        assert_ne!(mode(&path) & 0o044, 0);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(mode(&path), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_target_that_is_not_a_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        check_target(&file).unwrap();
        std::fs::write(&file, "{}").unwrap();
        check_target(&file).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        for (path, kind) in [
            (&link, "a symbolic link"),
            (&fifo, "a FIFO"),
            (&dir.path().to_path_buf(), "a folder"),
        ] {
            let err = check_target(path).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "{} is {kind}, not a regular file: writing it would replace it with one \
                     (name a regular file, or a path that does not exist yet)",
                    path.display()
                )
            );
        }
        // Still there, as they were.
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}
