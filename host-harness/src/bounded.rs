//! Reading a file the user names, within a size: a path can name `/dev/zero`, a FIFO or a file
//! of gigabytes, and reading it whole would hang the harness or exhaust its memory.

use std::io::Read as _;
use std::path::Path;

/// The most a catalog file may hold: a catalog of 100,000 real tools is about 100 MB.
pub const MAX_CATALOG_BYTES: u64 = 256 << 20;
/// The most a query file may hold.
pub const MAX_QUERY_FILE_BYTES: u64 = 64 << 20;
/// The most a component file may hold: lazy-tools' is about 3 MB.
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// The regular file at `path`, opened for reading; anything else (a FIFO, a device, a folder)
/// is refused. `what` names the file in the error (`a catalog`).
pub fn open_regular(path: &Path, what: &str) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Opening a FIFO for reading waits for a writer: without O_NONBLOCK the open itself
    // would hang before the file's type could be checked. A regular file ignores the flag.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a regular file; {what} must be one"),
        ));
    }
    Ok(file)
}

/// The bytes of the regular file at `path`, refused when it is not a regular file or holds
/// more than `limit` bytes (without reading more than that). `what` names the file in the
/// error (`a catalog`).
pub fn read(path: &Path, limit: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path, what)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "the file is larger than {} MiB, the most {what} may have",
                limit >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// The line and column, both from 1, of byte offset `at` of `text`, the column in characters
/// as an editor shows it (a Chinese character is three bytes and one column).
pub fn line_and_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// [`read`] as UTF-8 text; text that is not UTF-8 is refused at the line and column of its
/// first bad byte, as an editor shows them.
pub fn read_text(path: &Path, limit: u64, what: &str) -> std::io::Result<String> {
    String::from_utf8(read(path, limit, what)?).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..at]).unwrap_or_default();
        let (line, column) = line_and_column(valid, valid.len());
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text at line {line}, column {column} (byte {at})"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_counts_the_characters_before_it_on_its_line() {
        assert_eq!(line_and_column("ab\n描述x", "ab\n描述".len()), (2, 3));
        assert_eq!(line_and_column("ab", 0), (1, 1));
    }

    #[test]
    fn a_file_too_large_or_not_regular_is_refused_without_reading_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x".repeat(2 << 20)).unwrap();
        assert_eq!(read(&path, 2 << 20, "a test file").unwrap().len(), 2 << 20);
        let err = read(&path, 1 << 20, "a test file").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the file is larger than 1 MiB, the most a test file may have"
        );
        // A device that never ends, and a folder.
        let err = read(Path::new("/dev/zero"), 1 << 20, "a catalog").unwrap_err();
        assert_eq!(err.to_string(), "not a regular file; a catalog must be one");
        assert!(read(dir.path(), 1 << 20, "a catalog").is_err());
        // A FIFO with no writer: refused at once, where a plain open would wait for one.
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = read(&fifo, 1 << 20, "a catalog").unwrap_err();
        assert_eq!(err.to_string(), "not a regular file; a catalog must be one");
        std::fs::write(&path, b"ok \xff").unwrap();
        assert_eq!(
            read_text(&path, 1 << 20, "a test file")
                .unwrap_err()
                .to_string(),
            "not UTF-8 text at line 1, column 4 (byte 3)"
        );
        // Columns count characters; lines are the file's.
        std::fs::write(
            &path,
            "a\n  é: x\n      name: "
                .bytes()
                .chain([0xff])
                .collect::<Vec<u8>>(),
        )
        .unwrap();
        assert_eq!(
            read_text(&path, 1 << 20, "a test file")
                .unwrap_err()
                .to_string(),
            "not UTF-8 text at line 3, column 13 (byte 22)"
        );
    }
}
