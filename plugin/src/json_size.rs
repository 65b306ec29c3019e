//! How many bytes a value takes as compact JSON, counted without writing it anywhere: what
//! a result or a saved state will hold, measured before either is written.

use serde::Serialize;

/// The bytes of `value` as serde_json writes it, compact.
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counted = ByteCount(0);
    // Writing to a counter cannot fail, and a value that cannot be serialized counts what
    // was written of it.
    let _ = serde_json::to_writer(&mut counted, value);
    counted.0
}

/// A writer that only counts the bytes written to it.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::json_len;

    #[test]
    fn counts_what_serde_json_writes() {
        for text in ["", "plain", "a\"b\\c", "\u{1}\u{7f}é\u{2028}"] {
            assert_eq!(json_len(text), serde_json::to_string(text).unwrap().len());
        }
        let value = serde_json::json!({"k": [1e15, "x"]});
        assert_eq!(json_len(&value), value.to_string().len());
    }
}
