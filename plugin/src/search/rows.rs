//! Rows of values end to end in one vector: an index holds thousands of short lists (per term,
//! its postings; per tool, its terms), and a vector each would be an allocation each.

use std::ops::Index;

#[derive(Debug, Clone)]
pub struct Rows<T> {
    /// Where each row starts in `items`, then where the last one ends.
    starts: Vec<u32>,
    items: Vec<T>,
}

impl<T> Default for Rows<T> {
    fn default() -> Self {
        Self {
            starts: vec![0],
            items: Vec::new(),
        }
    }
}

impl<T> Rows<T> {
    /// Room for `rows` rows of `items` items in all, allocated once: in the component a
    /// vector that doubles as it grows copies itself and touches fresh pages each time.
    pub fn with_capacity(rows: usize, items: usize) -> Self {
        let mut starts = Vec::with_capacity(rows + 1);
        starts.push(0);
        Self {
            starts,
            items: Vec::with_capacity(items),
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: impl IntoIterator<Item = T>) {
        self.items.extend(row);
        self.starts.push(self.items.len() as u32);
    }

    /// How many items all rows hold.
    pub fn items_len(&self) -> usize {
        self.items.len()
    }

    /// How many rows there are.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Row `row`, or no items past the last row (an index grown by an update has terms its
    /// older segments never saw).
    pub fn row(&self, row: usize) -> &[T] {
        match (self.starts.get(row), self.starts.get(row + 1)) {
            (Some(&start), Some(&end)) => &self.items[start as usize..end as usize],
            _ => &[],
        }
    }

    /// Empties the rows from `first` on that `keep` does not keep, freeing their items for
    /// rows pushed later; the rows themselves stay, so later rows keep their numbers.
    pub fn empty_rows_from(&mut self, first: usize, keep: impl Fn(usize) -> bool)
    where
        T: Copy,
    {
        let Some(&start) = self.starts.get(first) else {
            return;
        };
        let (mut read, mut write) = (start as usize, start as usize);
        for row in first..self.len() {
            let end = self.starts[row + 1] as usize;
            if keep(row) {
                self.items.copy_within(read..end, write);
                write += end - read;
            }
            read = end;
            self.starts[row + 1] = write as u32;
        }
        self.items.truncate(write);
    }

    pub fn iter(&self) -> impl Iterator<Item = &[T]> {
        self.starts
            .windows(2)
            .map(|w| &self.items[w[0] as usize..w[1] as usize])
    }
}

/// Fills rows whose lengths are known, rows in any order, each row's items in order.
pub struct Gather<T> {
    rows: Rows<T>,
    /// Where each row's next item goes.
    next: Vec<u32>,
}

impl<T: Copy + Default> Gather<T> {
    pub fn new(lengths: &[u32]) -> Self {
        let mut starts = Vec::with_capacity(lengths.len() + 1);
        let mut total = 0;
        starts.push(0);
        for &length in lengths {
            total += length;
            starts.push(total);
        }
        Self {
            next: starts[..lengths.len()].to_vec(),
            rows: Rows {
                starts,
                items: vec![T::default(); total as usize],
            },
        }
    }

    /// Appends `item` to row `row`.
    pub fn push(&mut self, row: u32, item: T) {
        let next = &mut self.next[row as usize];
        self.rows.items[*next as usize] = item;
        *next += 1;
    }

    pub fn finish(self) -> Rows<T> {
        self.rows
    }
}

impl<T> Index<usize> for Rows<T> {
    type Output = [T];

    fn index(&self, row: usize) -> &[T] {
        &self.items[self.starts[row] as usize..self.starts[row + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_pushed_or_gathered_read_back() {
        let mut rows = Rows::default();
        rows.push([1, 2]);
        rows.push([]);
        rows.push([3]);
        assert_eq!(rows.iter().count(), 3);
        assert_eq!(
            (&rows[0], &rows[1], &rows[2]),
            (&[1, 2][..], &[][..], &[3][..])
        );
        assert_eq!(rows.len(), 3);
        assert_eq!((rows.row(2), rows.row(3)), (&[3][..], &[][..]));

        let mut gather = Gather::new(&[2, 0, 1]);
        for (row, item) in [(0, 'a'), (2, 'c'), (0, 'b')] {
            gather.push(row, item);
        }
        let gathered = gather.finish();
        assert_eq!(
            gathered.iter().collect::<Vec<_>>(),
            [&['a', 'b'][..], &[], &['c']]
        );
        assert_eq!(Rows::<u8>::default().iter().count(), 0);

        let mut rows = Rows::default();
        for row in [&[1, 2][..], &[3], &[4, 5], &[], &[6]] {
            rows.push(row.iter().copied());
        }
        rows.empty_rows_from(1, |row| row != 2 && row != 4);
        assert_eq!(
            rows.iter().collect::<Vec<_>>(),
            [&[1, 2][..], &[3], &[], &[], &[]]
        );
        assert_eq!(rows.items_len(), 3);
    }
}
