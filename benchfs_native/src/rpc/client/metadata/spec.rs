//! One rank's metadata phase as mdtest describes it, and what it measured.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::latency::LatencySummary;
use crate::rpc::client::ops::MAX_IO;
use crate::rpc::client::pattern::{BLOCK, Pattern};

/// The operation a metadata phase does on each of its items (for a
/// directory: create is mkdir, remove is rmdir).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataOp {
    /// Create the file, write `write_bytes` to it, close it.
    Create,
    /// Stat the file.
    Stat,
    /// Open the file, read `read_bytes` of it, close it.
    Read,
    /// Unlink the file.
    Remove,
}

impl MetadataOp {
    /// Its name in the Python API: `create`, `stat`, `read`, `remove`.
    pub fn name(self) -> &'static str {
        match self {
            MetadataOp::Create => "create",
            MetadataOp::Stat => "stat",
            MetadataOp::Read => "read",
            MetadataOp::Remove => "remove",
        }
    }
}

impl std::str::FromStr for MetadataOp {
    type Err = Error;

    fn from_str(s: &str) -> Result<MetadataOp> {
        Ok(match s {
            "create" => MetadataOp::Create,
            "stat" => MetadataOp::Stat,
            "read" => MetadataOp::Read,
            "remove" => MetadataOp::Remove,
            other => {
                return Err(Error::invalid(
                    "phase",
                    format!("{other:?} is not one of create, stat, read, remove"),
                ));
            }
        })
    }
}

/// What a metadata phase's items are: mdtest's files or its directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ItemKind {
    /// Files: create, stat, read, remove (mdtest `-F`).
    #[default]
    File,
    /// Directories: mkdir, stat, rmdir (mdtest `-D`); no read phase.
    Dir,
}

impl ItemKind {
    /// Its name in the Python API: `file`, `dir`.
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::File => "file",
            ItemKind::Dir => "dir",
        }
    }
}

impl std::str::FromStr for ItemKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<ItemKind> {
        match s {
            "file" => Ok(ItemKind::File),
            "dir" => Ok(ItemKind::Dir),
            other => Err(Error::invalid(
                "kind",
                format!("{other:?} is not one of file, dir"),
            )),
        }
    }
}

/// What one rank does in one metadata phase: items `first_item..items`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataSpec {
    /// The operation.
    pub op: MetadataOp,
    /// Files or directories.
    pub kind: ItemKind,
    /// The directory every item lives under.
    pub prefix: String,
    /// This rank.
    pub rank: u32,
    /// Ranks in the job.
    pub ranks: u32,
    /// Items of this rank (the end of the range).
    pub items: u64,
    /// First item (to continue after a stonewall: mdtest's wear-out).
    pub first_item: u64,
    /// A directory of its own per rank (mdtest `-u`), else one for all.
    pub unique_dir: bool,
    /// Bytes written to each file after creating it (mdtest `-w`).
    pub write_bytes: u64,
    /// Bytes read from each file in the read phase (mdtest `-e`).
    pub read_bytes: u64,
    /// Stop starting new items after this long (mdtest `-W`).
    pub stonewall: Option<Duration>,
    /// Check the bytes read against what the create wrote (mdtest `-X`).
    pub verify: bool,
    /// Seed of the files' data pattern (the same for create and read).
    pub seed: u64,
    /// Rewrite `(bytes done u64 LE, items done u64 LE)` here about every
    /// 200 ms.
    pub progress_path: Option<PathBuf>,
}

impl Default for MetadataSpec {
    fn default() -> Self {
        MetadataSpec {
            op: MetadataOp::Create,
            kind: ItemKind::File,
            prefix: "mdtest".to_owned(),
            rank: 0,
            ranks: 1,
            items: 1,
            first_item: 0,
            unique_dir: true,
            write_bytes: 0,
            read_bytes: 0,
            stonewall: None,
            verify: false,
            seed: 0,
            progress_path: None,
        }
    }
}

/// What one metadata phase did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetadataResult {
    /// The directory of this rank's items.
    pub dir: String,
    /// Items done.
    pub ops: u64,
    /// The item index reached (`first_item` + items done).
    pub items_reached: u64,
    /// Bytes written (create) or read (read).
    pub bytes: u64,
    /// Wall clock (`CLOCK_REALTIME`, ns) before the first item.
    pub start_unix_ns: u64,
    /// Wall clock after the last item.
    pub end_unix_ns: u64,
    /// Seconds from before the first item to after the last.
    pub elapsed_s: f64,
    /// Per-item latency (start of its first call to end of its last), in
    /// item order.
    pub latency_ns: Vec<u64>,
    /// Their summary.
    pub latency: LatencySummary,
    /// Whether the stonewall stopped the phase before its last item.
    pub stonewalled: bool,
    /// Items read (with `verify`) whose bytes were short or not the data
    /// their create wrote; mdtest counts them and goes on.
    pub verify_errors: u64,
    /// The first such item.
    pub first_bad_item: Option<u64>,
    /// RPCs finished.
    pub rpcs: u64,
    /// RPC repetitions.
    pub retries: u64,
}

impl MetadataSpec {
    /// The spec's own consistency, or an error naming the argument.
    pub fn check(&self) -> Result<()> {
        let bad = |name: &'static str, m: String| Err(Error::invalid(name, m));
        if self.ranks == 0 || self.rank >= self.ranks {
            return bad("rank", format!("{} is not in 0..{}", self.rank, self.ranks));
        }
        if self.first_item > self.items {
            return bad(
                "first_item",
                format!("{} > {} items", self.first_item, self.items),
            );
        }
        for (name, v) in [
            ("write_bytes", self.write_bytes),
            ("read_bytes", self.read_bytes),
        ] {
            if v > MAX_IO as u64 {
                return bad(name, format!("{v} is more than {MAX_IO}"));
            }
        }
        if self.kind == ItemKind::Dir && self.op == MetadataOp::Read {
            // mdtest's "Directory read" does nothing either.
            return bad("phase", "read has no directory phase".to_owned());
        }
        if self.prefix.is_empty() {
            return bad("prefix", "is empty".to_owned());
        }
        crate::storage::layout::validate(&self.dir())
            .map_err(|e| Error::invalid("prefix", e.to_string()))?;
        Ok(())
    }

    /// The directory of this rank's items: `{prefix}/tree.{rank}` with a
    /// directory per rank, else `{prefix}/tree.shared`.
    pub fn dir(&self) -> String {
        if self.unique_dir {
            format!("{}/tree.{}", self.prefix, self.rank)
        } else {
            format!("{}/tree.shared", self.prefix)
        }
    }

    /// The path of item `i` of this rank: `{dir}/file.mdtest.{rank}.{i}`
    /// or `{dir}/dir.mdtest.{rank}.{i}` (mdtest's names, so that ranks
    /// never collide in a shared directory).
    pub fn path(&self, i: u64) -> String {
        let what = match self.kind {
            ItemKind::File => "file",
            ItemKind::Dir => "dir",
        };
        format!("{}/{what}.mdtest.{}.{i}", self.dir(), self.rank)
    }

    /// The data pattern of this rank's files: item `i` holds the pattern's
    /// bytes at [`MetadataSpec::item_offset`], so each file's bytes name
    /// its writer rank and its item (as mdtest's `-G` signed pattern).
    pub fn pattern(&self) -> Pattern {
        Pattern::new(self.rank, self.seed)
    }

    /// Where item `i`'s bytes sit in the pattern: whole blocks apart.
    pub fn item_offset(&self, i: u64) -> u64 {
        let len = self.write_bytes.max(self.read_bytes).max(1);
        i.saturating_mul(len.div_ceil(BLOCK as u64) * BLOCK as u64)
    }

    /// Fills `buf` with the bytes the create writes to item `i`.
    pub fn fill_item(&self, pattern: &Pattern, i: u64, buf: &mut [u8]) {
        pattern.fill(buf, self.item_offset(i));
    }

    /// Whether `got`, read from item `i`, is all `read_bytes` of what its
    /// create wrote (a short read is an error, as mdtest counts it).
    pub fn item_is_intact(&self, pattern: &Pattern, i: u64, got: &[u8]) -> bool {
        got.len() as u64 == self.read_bytes && pattern.check(got, self.item_offset(i)).is_none()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn names_per_rank_and_shared() {
        let mut s = MetadataSpec {
            rank: 2,
            ranks: 4,
            items: 10,
            ..MetadataSpec::default()
        };
        assert!(s.check().is_ok());
        assert_eq!(s.path(7), "mdtest/tree.2/file.mdtest.2.7");
        s.unique_dir = false;
        assert_eq!(s.path(7), "mdtest/tree.shared/file.mdtest.2.7");
        s.kind = ItemKind::Dir;
        assert_eq!(s.path(7), "mdtest/tree.shared/dir.mdtest.2.7");
    }

    #[test]
    fn bad_specs_name_the_argument() {
        let ok = MetadataSpec {
            ranks: 2,
            items: 3,
            ..MetadataSpec::default()
        };
        let mut s = ok.clone();
        s.rank = 2;
        assert!(s.check().unwrap_err().to_string().contains("rank"));
        let mut s = ok.clone();
        s.first_item = 4;
        assert!(s.check().unwrap_err().to_string().contains("first_item"));
        let mut s = ok.clone();
        s.write_bytes = 2 << 30;
        assert!(s.check().unwrap_err().to_string().contains("write_bytes"));
        let mut s = ok.clone();
        s.prefix = "/abs".to_owned();
        assert!(s.check().unwrap_err().to_string().contains("prefix"));
        let mut s = ok.clone();
        s.kind = ItemKind::Dir;
        s.op = MetadataOp::Read;
        assert!(
            s.check()
                .unwrap_err()
                .to_string()
                .contains("no directory phase")
        );
        let mut s = ok;
        s.prefix = String::new();
        assert!(s.check().unwrap_err().to_string().contains("prefix"));
        assert_eq!("stat".parse::<MetadataOp>().unwrap(), MetadataOp::Stat);
        assert!("mkdir".parse::<MetadataOp>().is_err());
        assert_eq!("dir".parse::<ItemKind>().unwrap(), ItemKind::Dir);
        assert!(
            "dirs"
                .parse::<ItemKind>()
                .unwrap_err()
                .to_string()
                .contains("kind")
        );
    }

    #[test]
    fn each_item_has_its_own_bytes() {
        let s = MetadataSpec {
            rank: 1,
            ranks: 2,
            items: 3,
            write_bytes: 3901,
            read_bytes: 3901,
            seed: 9,
            ..MetadataSpec::default()
        };
        let p = s.pattern();
        let mut one = vec![0u8; 3901];
        s.fill_item(&p, 1, &mut one);
        assert!(s.item_is_intact(&p, 1, &one));
        // Another item's, another rank's or torn bytes are not item 1's.
        assert!(!s.item_is_intact(&p, 2, &one));
        let other = MetadataSpec {
            rank: 0,
            ..s.clone()
        };
        assert!(!other.item_is_intact(&other.pattern(), 1, &one));
        let mut torn = one.clone();
        torn[3900] ^= 1;
        assert!(!s.item_is_intact(&p, 1, &torn));
        assert!(!s.item_is_intact(&p, 1, &one[..3900]));
    }
}
