//! Where `plugin add` gets a plugin bundle: `git:<url>[#<rev>]` or
//! `link:<path>`, as the shell's plugin command writes them.

use std::fmt;
use std::path::PathBuf;

/// A bundle's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A git repository, cloned shallowly; `rev` is a branch, a tag or a
    /// full commit id (default: the remote's HEAD).
    Git { url: String, rev: Option<String> },
    /// A folder used in place.
    Link { path: PathBuf },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("`{0}` is not a plugin source: write git:<url>[#<rev>] or link:<path>")]
    UnknownScheme(String),
    #[error("`{0}` has no URL after `git:`")]
    EmptyUrl(String),
    #[error("`{0}` has an empty revision after `#`: drop the `#` or name a branch, tag or commit")]
    EmptyRev(String),
    #[error("`{0}` has no path after `link:`")]
    EmptyPath(String),
}

impl Source {
    pub fn parse(text: &str) -> Result<Self, SourceError> {
        if let Some(rest) = text.strip_prefix("git:") {
            let (url, rev) = match rest.rsplit_once('#') {
                Some((url, rev)) => (url, Some(rev)),
                None => (rest, None),
            };
            if url.is_empty() {
                return Err(SourceError::EmptyUrl(text.into()));
            }
            if rev == Some("") {
                return Err(SourceError::EmptyRev(text.into()));
            }
            return Ok(Source::Git {
                url: url.into(),
                rev: rev.map(Into::into),
            });
        }
        if let Some(path) = text.strip_prefix("link:") {
            if path.is_empty() {
                return Err(SourceError::EmptyPath(text.into()));
            }
            return Ok(Source::Link { path: path.into() });
        }
        Err(SourceError::UnknownScheme(text.into()))
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Git { url, rev: None } => write!(f, "git:{url}"),
            Source::Git {
                url,
                rev: Some(rev),
            } => write!(f, "git:{url}#{rev}"),
            Source::Link { path } => write!(f, "link:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shells_forms() {
        assert_eq!(
            Source::parse("git:https://example.com/p.git#v1.2").unwrap(),
            Source::Git {
                url: "https://example.com/p.git".into(),
                rev: Some("v1.2".into())
            }
        );
        assert_eq!(
            Source::parse("git:file:///tmp/r").unwrap().to_string(),
            "git:file:///tmp/r"
        );
        assert_eq!(
            Source::parse("link:../p").unwrap(),
            Source::Link {
                path: "../p".into()
            }
        );
        for (bad, message) in [
            ("https://x", "is not a plugin source"),
            ("git:", "has no URL"),
            ("git:file:///r#", "empty revision"),
            ("link:", "no path"),
        ] {
            let err = Source::parse(bad).unwrap_err().to_string();
            assert!(err.contains(message), "{bad}: {err}");
        }
    }
}
