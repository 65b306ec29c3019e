//! Tool names as small numbers, so that per-agent state is a few bit sets
//! instead of sets of strings: with 10,000 tools a set of names costs
//! about 1.25 KB as bits and about 400 KB as strings, and a shell runs
//! hundreds of agents.

use crate::keyed_hash::KeyedMap as HashMap;
use std::rc::Rc;

use bit_set::BitSet;

/// A name's number in a [`NameTable`]; meaningful only with that table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NameId(u32);

impl NameId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// Every tool name the plugin has seen, each numbered once. It only grows
/// while it is in use (a number stays valid for the agents holding it);
/// [`NameTable::needs_compaction`] says when to start a new one.
#[derive(Debug, Default)]
pub struct NameTable {
    ids: HashMap<Rc<str>, NameId>,
    names: Vec<Rc<str>>,
}

impl NameTable {
    /// The name's number, numbering it if it is new.
    pub fn intern(&mut self, name: &str) -> NameId {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        // More than 4 billion distinct names cannot fit a shell's memory
        // anyway; saturating keeps the plugin from trapping on the way.
        let id = NameId(u32::try_from(self.names.len()).unwrap_or(u32::MAX));
        let name: Rc<str> = Rc::from(name);
        self.names.push(Rc::clone(&name));
        self.ids.insert(name, id);
        id
    }

    /// The name's number, if it has one.
    pub fn get(&self, name: &str) -> Option<NameId> {
        self.ids.get(name).copied()
    }

    /// The name numbered `id` (empty for a number this table never gave).
    pub fn name(&self, id: NameId) -> &str {
        self.names.get(id.index()).map_or("", |n| n)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether names that left the registry take more room than those in
    /// it: then the owner starts a new table and renumbers.
    pub fn needs_compaction(&self, live: usize) -> bool {
        self.names.len() > 2 * live + 1_024
    }
}

/// A set of names as bits, indexed by [`NameId`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NameSet {
    bits: BitSet,
    len: usize,
}

impl NameSet {
    pub fn insert(&mut self, id: NameId) -> bool {
        let added = self.bits.insert(id.index());
        self.len += usize::from(added);
        added
    }

    pub fn remove(&mut self, id: NameId) -> bool {
        let removed = self.bits.remove(id.index());
        self.len -= usize::from(removed);
        removed
    }

    pub fn contains(&self, id: NameId) -> bool {
        self.bits.contains(id.index())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the set and keeps its memory, for refilling.
    pub fn make_empty(&mut self) {
        self.bits.make_empty();
        self.len = 0;
    }

    /// Empties the set and gives its memory back.
    pub fn clear(&mut self) {
        self.bits.reset();
        self.len = 0;
    }

    /// The members in number order.
    pub fn iter(&self) -> impl Iterator<Item = NameId> + '_ {
        self.bits.iter().map(|i| NameId(i as u32))
    }
}

/// A [`NameSet`] read by name. Asking whether a name is in it hashes the name once; a
/// `BTreeSet<&str>` of an agent's 100,000 deferred names compared strings 17 times a
/// question, and was sorted first.
#[derive(Debug, Clone, Copy)]
pub struct NamesIn<'a> {
    table: &'a NameTable,
    set: &'a NameSet,
}

impl<'a> NamesIn<'a> {
    pub fn new(table: &'a NameTable, set: &'a NameSet) -> Self {
        Self { table, set }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.table.get(name).is_some_and(|id| self.set.contains(id))
    }

    /// Every name of the set, in number order.
    pub fn names(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        let table = self.table;
        self.set.iter().map(move |id| table.name(id))
    }

    /// Every name of the set, sorted.
    pub fn sorted(&self) -> Vec<&'a str> {
        let names: Vec<&str> = self.names().collect();
        sorted_by_name(&names, |name| name)
    }
}

/// `a.cmp(b)`, eight bytes at a time: in the component `str::cmp` calls wasi-libc's `memcmp`,
/// which compares byte by byte, and an index build sorts ten thousand names that share their
/// server's prefix.
pub fn compare(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    while let (Some((x, rest_a)), Some((y, rest_b))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        if x != y {
            return u64::from_be_bytes(*x).cmp(&u64::from_be_bytes(*y));
        }
        (a, b) = (rest_a, rest_b);
    }
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// `items` sorted by `name` (as [`compare`] orders names; equal names keep their order),
/// each moved once. The sort compares
/// each name's first 16 bytes as one number held beside its index, so that it reads no string
/// out of place; only names that share those bytes are compared whole. Sorting an agent's
/// 100,000 deferred names by comparing strings took most of a short call in the component.
pub fn sorted_by_name<T: Copy>(items: &[T], name: impl Fn(&T) -> &str) -> Vec<T> {
    let prefix = |text: &str| {
        let mut bytes = [0u8; 16];
        let head = &text.as_bytes()[..text.len().min(16)];
        bytes[..head.len()].copy_from_slice(head);
        u128::from_be_bytes(bytes)
    };
    let mut keys: Vec<(u128, usize)> = items
        .iter()
        .enumerate()
        .map(|(at, item)| (prefix(name(item)), at))
        .collect();
    keys.sort_unstable();
    // Runs that share a prefix: padding zeros tie "ab" with "ab\0", so compare them whole.
    let mut start = 0;
    while start < keys.len() {
        let end = start + keys[start..].partition_point(|k| k.0 == keys[start].0);
        if end - start > 1 {
            keys[start..end].sort_unstable_by(|a, b| {
                compare(name(&items[a.1]), name(&items[b.1])).then(a.1.cmp(&b.1))
            });
        }
        start = end;
    }
    keys.into_iter().map(|(_, at)| items[at]).collect()
}

/// `a == b`, eight bytes at a time (see [`compare`]).
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && compare(a, b).is_eq()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn sorting_by_name_sorts_as_str_does(
            names in proptest::collection::vec("(github__create_|a|ab\\x00|)[a-z_\\x00é]{0,20}", 0..60)
        ) {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let mut expected = names.clone();
            expected.sort();
            proptest::prop_assert_eq!(sorted_by_name(&names, |n| n), expected);
        }
    }

    #[test]
    fn names_in_a_set_are_asked_by_name_and_listed_sorted() {
        let mut table = NameTable::default();
        let mut set = NameSet::default();
        for name in ["zeta", "alpha", "github__create_pr", "github__create_issue"] {
            set.insert(table.intern(name));
        }
        table.intern("not_in_the_set");
        let names = NamesIn::new(&table, &set);
        assert!(names.contains("zeta") && names.contains("github__create_pr"));
        assert!(!names.contains("not_in_the_set") && !names.contains("never_seen"));
        assert_eq!(
            names.sorted(),
            ["alpha", "github__create_issue", "github__create_pr", "zeta"]
        );
    }

    #[test]
    fn compare_orders_and_same_compares_as_str_does() {
        let names = [
            "",
            "a",
            "ab",
            "abcdefgh",
            "abcdefgha",
            "abcdefgh_",
            "abcdefghi",
            "abcdefgg",
            "github__create_issue",
            "github__create_issues",
            "github__create_pr",
            "gitlab__x",
            "héllo",
            "hello",
            "股票__价格",
            "股票__",
            "\u{7f}",
            "\u{80}",
        ];
        for a in names {
            for b in names {
                assert_eq!(compare(a, b), a.cmp(b), "{a:?} {b:?}");
                assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn a_name_keeps_its_number_and_numbers_give_names_back() {
        let mut table = NameTable::default();
        let a = table.intern("github__create_issue");
        let b = table.intern("bash");
        assert_ne!(a, b);
        assert_eq!(table.intern("github__create_issue"), a);
        assert_eq!(table.get("bash"), Some(b));
        assert_eq!(table.get("missing"), None);
        assert_eq!(table.name(a), "github__create_issue");
    }

    #[test]
    fn a_set_counts_its_members_and_iterates_in_number_order() {
        let mut table = NameTable::default();
        let ids: Vec<NameId> = (0..200).map(|i| table.intern(&format!("t{i}"))).collect();
        let mut set = NameSet::default();
        assert!(set.insert(ids[150]) && set.insert(ids[3]));
        assert!(!set.insert(ids[3]));
        assert_eq!(set.len(), 2);
        assert_eq!(set.iter().collect::<Vec<_>>(), [ids[3], ids[150]]);
        assert!(set.remove(ids[150]) && !set.remove(ids[150]));
        assert!(!set.contains(ids[199]));
        set.clear();
        assert!(set.is_empty());
    }

    #[test]
    fn compaction_is_due_when_departed_names_dominate() {
        let mut table = NameTable::default();
        for i in 0..3_000 {
            table.intern(&format!("t{i}"));
        }
        assert!(!table.needs_compaction(1_000));
        assert!(table.needs_compaction(900));
    }
}
