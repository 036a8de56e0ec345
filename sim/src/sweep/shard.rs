//! Shards: the interleaved slices of a seed range that CI jobs or cluster pods each sweep, and
//! whose summaries merge into the summary of the whole range.

use serde::{Deserialize, Serialize};

/// One of `count` interleaved slices of a seed range (see the [sweep module](super) documentation):
/// shard `index` (from 1) of `count` holds the seeds `s` of `start..start + seeds` with
/// `(s - start) % count == index - 1`.
///
/// *Guarantees*: for any range, the shards `1..=count` are disjoint and their seeds together are
/// the range; a shard holds `seeds / count` or one more seeds (none when `index > seeds`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    /// From 1 to `count`.
    pub index: u64,
    /// How many shards the range is split into, at least 1.
    pub count: u64,
}

impl Shard {
    /// Shard `index` of `count`, if `1 <= index <= count`.
    pub fn new(index: u64, count: u64) -> Result<Shard, String> {
        if count == 0 {
            return Err(format!("shard {index}/0: a range cannot be split into 0 shards; N is at least 1"));
        }
        if index == 0 || index > count {
            return Err(format!("shard {index}/{count}: K counts from 1 to N, so give 1/{count} to {count}/{count}"));
        }
        Ok(Shard { index, count })
    }

    /// `K/N`, as `--shard` takes it: `2/8` is the second of 8 shards.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("{text:?} is not a shard: write it as K/N, e.g. 2/8 for the second of 8 shards");
        let (index, count) = text.trim().split_once('/').ok_or_else(bad)?;
        let index = index.trim().parse().map_err(|_| bad())?;
        let count = count.trim().parse().map_err(|_| bad())?;
        Shard::new(index, count)
    }

    /// How many of the `seeds` seeds of a range this shard holds.
    pub fn len_of(self, seeds: u64) -> u64 {
        // The shard's seeds are at offsets index - 1, index - 1 + count, ... below `seeds`.
        if seeds < self.index { 0 } else { (seeds - self.index) / self.count + 1 }
    }

    /// The `i`-th seed (from 0) this shard holds of `start..start + seeds`, if it holds that many.
    pub fn nth_seed(self, start: u64, seeds: u64, i: u64) -> Option<u64> {
        // Below len_of, (index - 1) + i * count < seeds: no overflow while start + seeds fits.
        (i < self.len_of(seeds)).then(|| start + (self.index - 1) + i * self.count)
    }

    /// The seeds this shard holds of `start..start + seeds`, in order.
    pub fn seeds(self, start: u64, seeds: u64) -> impl Iterator<Item = u64> {
        (0..self.len_of(seeds)).map(move |i| start + (self.index - 1) + i * self.count)
    }

    /// Whether `seed` is one of this shard's (ignoring the range's end).
    pub fn holds(self, start: u64, seed: u64) -> bool {
        seed >= start && (seed - start) % self.count == self.index - 1
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(text: &str) -> Result<Shard, String> {
        Shard::parse(text)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn shards_are_disjoint_and_cover_their_range() {
        let cases =
            [(0, 10, 3), (5, 1, 4), (100, 7, 7), (0, 0, 2), (3, 60, 8), (0, 2, 5), (9, 61, 1), (u64::MAX - 5, 5, 2)];
        for (start, seeds, count) in cases {
            let mut all = Vec::new();
            let sizes: Vec<u64> = (1..=count)
                .map(|index| {
                    let shard = Shard::new(index, count).unwrap();
                    let mine: Vec<u64> = shard.seeds(start, seeds).collect();
                    assert_eq!(mine.len() as u64, shard.len_of(seeds));
                    for (i, seed) in mine.iter().enumerate() {
                        assert_eq!(shard.nth_seed(start, seeds, i as u64), Some(*seed));
                        assert!(shard.holds(start, *seed));
                        let others = (1..=count).filter(|k| Shard::new(*k, count).unwrap().holds(start, *seed)).count();
                        assert_eq!(others, 1, "seed {seed} is in exactly one shard");
                    }
                    assert_eq!(shard.nth_seed(start, seeds, mine.len() as u64), None);
                    all.extend(mine);
                    shard.len_of(seeds)
                })
                .collect();
            all.sort_unstable();
            let range: Vec<u64> = (start..start + seeds).collect();
            assert_eq!(all, range, "shards of {start}+{seeds} in {count}");
            let (least, most) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(most - least <= 1, "{sizes:?}");
        }
    }

    #[test]
    fn shards_parse_as_k_of_n() {
        assert_eq!(Shard::parse("2/8"), Ok(Shard { index: 2, count: 8 }));
        assert_eq!(Shard::parse(" 1 / 1 "), Ok(Shard { index: 1, count: 1 }));
        assert_eq!("3/3".parse::<Shard>().unwrap().to_string(), "3/3");
        for (bad, says) in [
            ("0/3", "K counts from 1"),
            ("4/3", "K counts from 1"),
            ("1/0", "0 shards"),
            ("x/y", "write it as K/N"),
            ("3", "write it as K/N"),
            ("-1/3", "write it as K/N"),
            ("1/3/4", "write it as K/N"),
        ] {
            let error = Shard::parse(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
