//! What the interactive session reads: the person's lines and Ctrl-C, in one queue.
//!
//! Lines are read on a thread of their own, so that Ctrl-C ends the session at once even
//! while the read waits for a line (the terminal would restart it after the signal): the
//! session then saves its state as after `quit` (see [`crate::commands::signals`]).

use std::io::{BufRead, Read as _};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};

use crate::commands::signals::Ending;

/// The longest line read as a command. `call` takes its JSON arguments on one line, and a
/// person pastes a file's content for `write` at most: 1 MiB holds that many times over,
/// while a line that never ends (a binary piped in by mistake) would grow without bound.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One thing the session reads.
#[derive(Debug)]
pub enum Input {
    Line(Line),
    /// The end of the input.
    End,
    /// The person pressed Ctrl-C (or the harness got SIGTERM or SIGHUP).
    Interrupted,
}

/// A line of the input.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Text(String),
    /// Longer than [`MAX_LINE_BYTES`]; the rest of it was skipped.
    TooLong,
    /// Not UTF-8 from this byte on.
    NotUtf8(usize),
}

/// The queue the session reads from.
pub struct Inputs {
    queue: Receiver<std::io::Result<Input>>,
    /// Ctrl-C and the other ending signals: the lines read ahead of one are not run.
    ending: Option<Arc<Ending>>,
}

impl Inputs {
    /// Reads `input`'s lines on a thread of their own, at most one line ahead of the session;
    /// the thread ends once the queue is gone. With the `ending` signals caught (Ctrl-C,
    /// SIGTERM, SIGHUP), one is put in the queue too: the first ends the session as `quit`
    /// does (one that came before is the next input), and a second stops the harness as
    /// Ctrl-C always does.
    pub fn read(input: impl BufRead + Send + 'static, ending: Option<Arc<Ending>>) -> Self {
        // Room for a line read ahead and a Ctrl-C: neither sender waits for the other.
        let (sender, queue) = sync_channel(2);
        if let Some(ending) = &ending {
            let wake = sender.clone();
            // Wakes a session waiting for a line; a full queue wakes it anyway.
            ending.wake_with(move || {
                let _ = wake.try_send(Ok(Input::Interrupted));
            });
        }
        std::thread::spawn(move || {
            let mut input = input;
            loop {
                let next = read_line(&mut input);
                let last = !matches!(next, Ok(Input::Line(_)));
                if sender.send(next).is_err() || last {
                    return;
                }
            }
        });
        Self { queue, ending }
    }

    /// A queue that holds `inputs`, then ends (for tests).
    #[cfg(test)]
    pub fn of(inputs: Vec<Input>) -> Self {
        let (sender, queue) = sync_channel(inputs.len().max(1));
        for input in inputs {
            sender.send(Ok(input)).unwrap();
        }
        Self {
            queue,
            ending: None,
        }
    }

    /// The next input; [`Input::End`] once nothing can send any.
    pub fn next(&self) -> std::io::Result<Input> {
        if self.ending.as_ref().is_some_and(|e| e.signalled()) {
            return Ok(Input::Interrupted);
        }
        let next = self.queue.recv().unwrap_or(Ok(Input::End));
        if self.ending.as_ref().is_some_and(|e| e.signalled()) {
            return Ok(Input::Interrupted);
        }
        next
    }
}

/// Reads the next line: at most [`MAX_LINE_BYTES`] of it are kept, and a longer one is
/// skipped to its end.
fn read_line(input: &mut impl BufRead) -> std::io::Result<Input> {
    let mut buf = Vec::new();
    let limit = MAX_LINE_BYTES as u64 + 1;
    if (&mut *input).take(limit).read_until(b'\n', &mut buf)? == 0 {
        return Ok(Input::End);
    }
    if buf.len() > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
        skip_line(input)?;
        return Ok(Input::Line(Line::TooLong));
    }
    Ok(Input::Line(match String::from_utf8(buf) {
        Ok(text) => Line::Text(text),
        Err(e) => Line::NotUtf8(e.utf8_error().valid_up_to()),
    }))
}

/// Consumes the input up to the next newline (or its end), keeping none of it.
fn skip_line(input: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(at) => {
                input.consume(at + 1);
                return Ok(());
            }
            None => {
                let all = available.len();
                input.consume(all);
            }
        }
    }
}
