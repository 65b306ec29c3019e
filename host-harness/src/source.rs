//! Where `plugin add` gets a plugin bundle: `git:<url>[#<rev>]` or
//! `link:<path>`, as the shell's plugin command writes them.
//!
//! Everything here reaches git's command line, so a source is validated
//! before anything runs: the URL must be one of the forms below, and the
//! revision a ref name or commit id (never an option).
//!
//! | written                         | git is given                       |
//! |---------------------------------|------------------------------------|
//! | `git:host/owner/repo`           | `https://host/owner/repo`          |
//! | `git:https://host/owner/repo`   | as written (also `http`, `ssh`, `git`) |
//! | `git:git@host:owner/repo.git`   | as written (scp-like ssh)          |
//! | `git:file:///path/to/repo`      | as written                         |
//! | `git:/path/to/repo`             | `file:///path/to/repo`, percent-encoded |

use std::fmt;
use std::path::PathBuf;

use crate::terminal::escape;

/// The URL schemes git may be given (also enforced with
/// `GIT_ALLOW_PROTOCOL` when git runs): no `ext::`, which runs commands.
pub const SCHEMES: &[&str] = &["https", "http", "ssh", "git", "file"];

/// Longest source accepted: longer is a mistake or an attack.
pub const MAX_SOURCE_LEN: usize = 4096;
/// Longest revision accepted (git's own limit on a ref name is similar).
pub const MAX_REV_LEN: usize = 255;

/// The forms `plugin add` accepts, for `--help` and error messages.
pub const FORMS: &str = "git:host/owner/repo (https), git:https://host/owner/repo, \
     git:git@host:owner/repo.git, git:file:///path/to/repo, each with an optional \
     #<branch, tag or commit>; or link:<path> (a local folder, built in place)";

/// A bundle's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A git repository, cloned shallowly; `url` is what git is given and
    /// `rev` is a branch, a tag or a full commit id (default: the remote's
    /// HEAD).
    Git { url: String, rev: Option<String> },
    /// A folder used in place.
    Link { path: PathBuf },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("`{}` is not a plugin source: write git:<url>[#<rev>] or link:<path> ({FORMS})", escape(.0))]
    UnknownScheme(String),
    #[error("`{}` has no URL after `git:`", escape(.0))]
    EmptyUrl(String),
    #[error("`{}` has an empty revision after `#`: drop the `#` or name a branch, tag or commit", escape(.0))]
    EmptyRev(String),
    #[error("`{}` has no path after `link:`", escape(.0))]
    EmptyPath(String),
    #[error("the source is {0} bytes long; at most {MAX_SOURCE_LEN} are accepted")]
    TooLong(usize),
    #[error("`{}` contains a control or formatting character (U+{:04X})", shown(.text), u32::from(*.found))]
    Unprintable { text: String, found: char },
    #[error("`{}`: the revision `{}` {reason}; name a branch, tag or commit id", escape(.text), escape(.rev))]
    BadRev {
        text: String,
        rev: String,
        reason: String,
    },
    #[error("`{}`: {reason}; write {FORMS}", escape(.text))]
    BadUrl { text: String, reason: String },
}

impl Source {
    pub fn parse(text: &str) -> Result<Self, SourceError> {
        if text.len() > MAX_SOURCE_LEN {
            return Err(SourceError::TooLong(text.len()));
        }
        if let Some(found) = text.chars().find(|&c| c.is_control() || is_formatting(c)) {
            return Err(SourceError::Unprintable {
                text: text.into(),
                found,
            });
        }
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
            if let Some(rev) = rev {
                check_rev(rev).map_err(|reason| SourceError::BadRev {
                    text: text.into(),
                    rev: rev.into(),
                    reason,
                })?;
            }
            let url = git_url(url).map_err(|reason| SourceError::BadUrl {
                text: text.into(),
                reason,
            })?;
            return Ok(Source::Git {
                url,
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

/// Whether the git URLs `a` and `b` name one repository: equal, or two file URLs of one path (a
/// path recorded before paths were percent-encoded, `file:///srv/a b`, is `file:///srv/a%20b`).
pub fn same_git_url(a: &str, b: &str) -> bool {
    let path = |url: &str| {
        url.starts_with("file://")
            .then(|| url::Url::parse(url).ok()?.to_file_path().ok())
            .flatten()
    };
    a == b || path(a).is_some_and(|a| path(b).is_some_and(|b| a == b))
}

/// Unicode's bidirectional controls, the characters that display as nothing
/// ([`crate::terminal::is_default_ignorable`]: zero-width spaces and joiners, soft hyphen, BOM,
/// variation selectors, tags) and the other format characters that print as something else
/// (the line separators, Arabic and Syriac number signs, interlinear annotations): a source
/// holding one is not what it reads as.
fn is_formatting(c: char) -> bool {
    crate::terminal::is_bidi_control(c)
        || crate::terminal::is_default_ignorable(c)
        || matches!(
            c,
            '\u{600}'..='\u{605}' | '\u{6dd}' | '\u{70f}' | '\u{2028}' | '\u{2029}' | '\u{fff9}'..='\u{fffb}'
        )
}

/// `text` with its control and formatting characters escaped (the terminal's escape shows
/// the joiners and variation selectors as written, which a source may not hold).
fn shown(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || is_formatting(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Checks that `rev` is a ref name (git's rules, via gix-validate) or a
/// commit id, and cannot be read as an option or a refspec.
pub fn check_rev(rev: &str) -> Result<(), String> {
    if rev.len() > MAX_REV_LEN {
        return Err(format!(
            "is {} bytes long (at most {MAX_REV_LEN})",
            rev.len()
        ));
    }
    if rev.starts_with('-') {
        return Err("starts with `-`, so git would read it as an option".into());
    }
    // `+x` forces and `x:y` writes a ref: both are refspecs, not names.
    if rev.starts_with('+') || rev.contains(':') {
        return Err("is a refspec, not a name".into());
    }
    gix_validate::reference::name_partial(rev.as_bytes().into())
        .map(drop)
        .map_err(|e| format!("is not a valid ref name ({e})"))
}

/// The URL git is given for what follows `git:`, or why there is none.
fn git_url(url: &str) -> Result<String, String> {
    // Nothing git reads as an option, even after the checks below.
    if url.starts_with('-') {
        return Err("the URL starts with `-`".into());
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        if !SCHEMES.contains(&scheme) {
            return Err(format!(
                "`{}://` is not a scheme git may use here (only {})",
                escape(scheme),
                SCHEMES.join(", ")
            ));
        }
        if scheme != "file" {
            let authority = rest.split(['/', '?']).next().unwrap_or_default();
            let host = match authority.rsplit_once('@') {
                // ssh is given `user@host` as one argument.
                Some((user, _)) if user.starts_with('-') => {
                    return Err(format!(
                        "the user name `{}` starts with `-`, so ssh would read it as an option",
                        escape(user)
                    ));
                }
                Some((_, host)) => host,
                None => authority,
            };
            check_host(host)?;
        } else if !rest.starts_with('/') {
            return Err("a file:// URL needs an absolute path (file:///path)".into());
        }
        return Ok(url.to_string());
    }
    if url.starts_with('/') {
        // Percent-encoded: git decodes a file URL's `%XX`, so `/srv/pc%41t` written as it is
        // would fetch `/srv/pcAt`.
        return url::Url::from_file_path(url)
            .map(String::from)
            .map_err(|()| format!("`{}` is not an absolute path", escape(url)));
    }
    if url.contains("::") {
        return Err("git's `<transport>::` forms run helper programs and are not accepted".into());
    }
    // scp-like ssh: `user@host:path`, as git reads it (a colon before any
    // slash).
    if let Some((before, path)) = url.split_once(':')
        && !before.contains('/')
    {
        let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
        check_host(host)?;
        if path.is_empty() {
            return Err("the ssh form has no path after `:`".into());
        }
        if path.starts_with('-') {
            return Err("the ssh form's path starts with `-`".into());
        }
        return Ok(url.to_string());
    }
    // `host/owner/repo`: https, when the first segment is a host name.
    let (host, path) = url.split_once('/').unwrap_or((url, ""));
    if host.contains('.') && !path.is_empty() && !host.starts_with('.') {
        check_host(host)?;
        return Ok(format!("https://{url}"));
    }
    Err(format!(
        "`{}` is neither a URL nor host/owner/repo (a local repository is git:file:///path, \
         a folder to build in place is link:<path>)",
        escape(url)
    ))
}

/// A host name, or an IPv6 literal in brackets, with an optional port, that
/// ssh cannot read as an option.
fn check_host(host: &str) -> Result<(), String> {
    let (valid_name, port) = match host.strip_prefix('[') {
        // Brackets only around an IPv6 address: `[-oProxyCommand]` is an option.
        Some(rest) => match rest.split_once(']') {
            Some((literal, port)) => (literal.parse::<std::net::Ipv6Addr>().is_ok(), port),
            None => (false, ""),
        },
        None => {
            let (name, port) = host.split_at(host.find(':').unwrap_or(host.len()));
            let valid = !name.is_empty()
                && !name.starts_with('-')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
            (valid, port)
        }
    };
    let valid_port = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    if valid_name && valid_port {
        Ok(())
    } else {
        Err(format!("`{}` is not a host name", escape(host)))
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

    fn url_of(text: &str) -> String {
        match Source::parse(text) {
            Ok(Source::Git { url, .. }) => url,
            other => panic!("{text}: {other:?}"),
        }
    }

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

    #[test]
    fn each_url_form_becomes_the_url_git_is_given() {
        for (written, url) in [
            ("git:github.com/o/r", "https://github.com/o/r"),
            ("git:github.com/o/r#v1", "https://github.com/o/r"),
            (
                "git:https://github.com/o/r.git",
                "https://github.com/o/r.git",
            ),
            ("git:http://example.com:8080/r", "http://example.com:8080/r"),
            ("git:ssh://git@example.com/o/r", "ssh://git@example.com/o/r"),
            ("git:ssh://git@[::1]:22/o/r", "ssh://git@[::1]:22/o/r"),
            ("git:ssh://[2001:db8::1]/r", "ssh://[2001:db8::1]/r"),
            ("git:git@github.com:o/r.git", "git@github.com:o/r.git"),
            ("git:file:///srv/repo", "file:///srv/repo"),
            ("git:/srv/repo", "file:///srv/repo"),
            // A path is not a URL: git decodes `%41` in a file URL, so it is encoded.
            ("git:/srv/pc%41t", "file:///srv/pc%2541t"),
            ("git:/srv/a b/r", "file:///srv/a%20b/r"),
        ] {
            assert_eq!(url_of(written), url, "{written}");
        }
        // What is recorded in cordis.yml reads back to the same URL.
        let recorded = Source::parse("git:github.com/o/r#main")
            .unwrap()
            .to_string();
        assert_eq!(recorded, "git:https://github.com/o/r#main");
        assert_eq!(url_of(&recorded), "https://github.com/o/r");
    }

    #[test]
    fn a_file_url_recorded_before_paths_were_encoded_names_the_same_repository() {
        let now = url_of("git:/srv/a b/r");
        assert!(same_git_url("file:///srv/a b/r", &now));
        assert!(same_git_url(&now, &now));
        // `%41` was read by git as `A`: that repository is not the one named `pc%41t`.
        assert!(!same_git_url(
            "file:///srv/pc%41t",
            &url_of("git:/srv/pc%41t")
        ));
        assert!(!same_git_url("https://h/o/r", "https://h/o/s"));
    }

    #[test]
    fn urls_git_would_misread_are_refused() {
        for (bad, message) in [
            ("git:ext::sh -c touch% x", "`<transport>::` forms"),
            ("git:ext::sh", "`<transport>::` forms"),
            ("git:fd::17", "`<transport>::` forms"),
            ("git:ftp://example.com/r", "`ftp://` is not a scheme"),
            ("git:ssh://-oProxyCommand=x/r", "is not a host name"),
            (
                "git:ssh://-oProxyCommand=x@h.example/r",
                "the user name `-oProxyCommand=x` starts with `-`",
            ),
            ("git:ssh://[-oProxyCommand]/r", "is not a host name"),
            ("git:ssh://[h.example]/r", "is not a host name"),
            ("git:ssh://h.example:-p/r", "is not a host name"),
            ("git:git@h.example:-r", "path starts with `-`"),
            ("git:-oProxyCommand=x:r", "starts with `-`"),
            ("git:--upload-pack=x", "starts with `-`"),
            ("git:foo/bar", "neither a URL nor host/owner/repo"),
            ("git:./repo", "neither a URL nor host/owner/repo"),
            ("git:file://relative/r", "absolute path"),
            (
                "git:https://exa\u{1b}[31mmple.com/r",
                "control or formatting character (U+001B)",
            ),
            // Reads as `.../r.exe` in a terminal: the text after U+202E is shown reversed.
            (
                "git:https://h.example/\u{202e}exe.r",
                "control or formatting character (U+202E)",
            ),
            (
                "git:https://h.example/r\u{200b}",
                "control or formatting character (U+200B)",
            ),
        ] {
            let err = Source::parse(bad).unwrap_err().to_string();
            assert!(err.contains(message), "{bad}: {err}");
            assert!(
                !err.chars().any(|c| c.is_control() || is_formatting(c)),
                "{bad}: {err:?}"
            );
        }
        let long = format!("git:https://h.example/{}", "a".repeat(MAX_SOURCE_LEN));
        assert!(matches!(Source::parse(&long), Err(SourceError::TooLong(_))));
    }

    #[test]
    fn revisions_are_names_never_options() {
        for good in ["main", "v1.2", "feature/x", "0123abcd", &"f".repeat(40)] {
            assert!(check_rev(good).is_ok(), "{good}");
        }
        for (bad, message) in [
            ("-q", "starts with `-`"),
            ("--upload-pack=touch", "starts with `-`"),
            ("+main", "refspec"),
            ("main:refs/heads/x", "refspec"),
            ("a..b", "not a valid ref name"),
            ("x~1", "not a valid ref name"),
            ("x^{}", "not a valid ref name"),
            ("x*", "not a valid ref name"),
            ("x.lock", "not a valid ref name"),
        ] {
            let err = check_rev(bad).unwrap_err();
            assert!(err.contains(message), "{bad}: {err}");
        }
        // The exploit from issue 9, refused before git runs.
        let err = Source::parse("git:/some/repo#--upload-pack=touch pwned; git-upload-pack")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "the revision `--upload-pack=touch pwned; git-upload-pack` starts with `-`"
            ),
            "{err}"
        );
        let err = Source::parse("git:/some/repo#--upload-pack=touch${IFS}pwned")
            .unwrap_err()
            .to_string();
        assert!(err.contains("starts with `-`"), "{err}");
    }
}
