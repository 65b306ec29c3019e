//! What changed in the plugin's registry copy, load by load. An agent's view refreshed from
//! the host's delta (WIT 0.3.0 `allowed-changes`) re-examines these names too: the copy may
//! have changed a definition (a fingerprint, a token cost) after the view was computed.

use std::collections::VecDeque;

use crate::registry::Origin;

/// How many changed names the log keeps; a view further behind is computed whole.
pub const MAX_CHANGES: usize = 4096;

/// A name's definitions at one time: their origins and token costs, in registration order
/// (what an agent's budget counts for the name).
pub type Definitions = Vec<(Origin, u32)>;

/// One name a load changed, with its definitions before and after: patching a thousand views
/// then costs no schema's fingerprint again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyChange {
    pub epoch: u64,
    pub name: String,
    pub before: Definitions,
    pub after: Definitions,
}

#[derive(Debug, Default)]
pub struct CopyLog {
    /// Bumped by every load of the registry.
    epoch: u64,
    /// A view computed before this epoch cannot be patched: something the log does not name
    /// changed since (a first fetch, a new config, changes dropped from the log).
    complete_from: u64,
    changes: VecDeque<CopyChange>,
}

impl CopyLog {
    /// The epoch of the copy now: a view computed now is stamped with it.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A load that changed the named tools, each with its definitions before and after.
    pub fn record(&mut self, changed: Vec<(String, Definitions, Definitions)>) {
        self.epoch += 1;
        if changed.len() > MAX_CHANGES {
            self.reset_at(self.epoch);
            return;
        }
        for (name, before, after) in changed {
            self.changes.push_back(CopyChange {
                epoch: self.epoch,
                name,
                before,
                after,
            });
        }
        while self.changes.len() > MAX_CHANGES {
            if let Some(dropped) = self.changes.pop_front() {
                self.complete_from = self.complete_from.max(dropped.epoch);
            }
        }
    }

    /// A change the log cannot name: every view is computed whole next time.
    pub fn reset(&mut self) {
        self.epoch += 1;
        self.reset_at(self.epoch);
    }

    fn reset_at(&mut self, epoch: u64) {
        self.complete_from = epoch;
        self.changes.clear();
    }

    /// The changes made after `epoch`, oldest first; `None` when the log does not reach back.
    pub fn since(&self, epoch: u64) -> Option<impl Iterator<Item = &CopyChange>> {
        if epoch < self.complete_from || epoch > self.epoch {
            return None;
        }
        let first = self.changes.partition_point(|c| c.epoch <= epoch);
        Some(self.changes.range(first..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<'a>(changes: impl Iterator<Item = &'a CopyChange>) -> Vec<&'a str> {
        changes.map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn a_view_sees_the_names_changed_after_it_while_the_log_reaches_back() {
        let mut log = CopyLog::default();
        log.reset();
        let start = log.epoch();
        log.record(vec![("a".into(), Vec::new(), Vec::new())]);
        log.record(vec![("b".into(), vec![(Origin::Builtin, 7)], Vec::new())]);
        assert_eq!(names(log.since(start).unwrap()), ["a", "b"]);
        assert_eq!(names(log.since(start + 1).unwrap()), ["b"]);
        assert!(log.since(log.epoch()).unwrap().next().is_none());
        assert!(log.since(start - 1).is_none(), "before the reset");
        assert!(log.since(log.epoch() + 1).is_none(), "ahead");
        let at = log.epoch();
        log.record(
            (0..=MAX_CHANGES)
                .map(|i| (format!("t{i}"), Vec::new(), Vec::new()))
                .collect(),
        );
        assert!(log.since(at).is_none(), "too many to name");
        let at = log.epoch();
        for i in 0..MAX_CHANGES {
            log.record(vec![(format!("u{i}"), Vec::new(), Vec::new())]);
        }
        assert_eq!(log.since(at).unwrap().count(), MAX_CHANGES);
        log.record(vec![("last".into(), Vec::new(), Vec::new())]);
        assert!(log.since(at).is_none(), "the oldest was dropped");
        assert_eq!(log.since(at + 1).unwrap().count(), MAX_CHANGES);
    }
}
