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
    /// Rename each directory onto the previous one's name, mdtest's chain
    /// (`-U`): directories only.
    Rename,
}

impl MetadataOp {
    /// Its name in the Python API: `create`, `stat`, `read`, `remove`.
    pub fn name(self) -> &'static str {
        match self {
            MetadataOp::Create => "create",
            MetadataOp::Stat => "stat",
            MetadataOp::Read => "read",
            MetadataOp::Remove => "remove",
            MetadataOp::Rename => "rename",
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
            "rename" => MetadataOp::Rename,
            other => {
                return Err(Error::invalid(
                    "phase",
                    format!("{other:?} is not one of create, stat, read, remove, rename"),
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
    /// Directories: mkdir, stat, rename, rmdir (mdtest `-D`); no read phase.
    Dir,
    /// The directories of the rank's tree (mdtest `-z`, `-b`): create
    /// makes them top down, remove takes them bottom up.
    Tree,
}

impl ItemKind {
    /// Its name in the Python API: `file`, `dir`.
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::File => "file",
            ItemKind::Dir => "dir",
            ItemKind::Tree => "tree",
        }
    }
}

impl std::str::FromStr for ItemKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<ItemKind> {
        match s {
            "file" => Ok(ItemKind::File),
            "dir" => Ok(ItemKind::Dir),
            "tree" => Ok(ItemKind::Tree),
            other => Err(Error::invalid(
                "kind",
                format!("{other:?} is not one of file, dir, tree"),
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
    /// Levels of directories below the rank's directory (mdtest `-z`).
    pub tree_depth: u32,
    /// Subdirectories of each directory above the last level (mdtest `-b`).
    pub branch_factor: u32,
    /// Items in each directory of the tree, item `i` in directory
    /// `i / items_per_dir` (mdtest's rule); 0: every item in the rank's
    /// directory (a tree of depth 0).
    pub items_per_dir: u64,
}

/// The most directories a tree may have (its order is held in memory).
pub const MAX_TREE_DIRS: u64 = 1 << 24;

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
            tree_depth: 0,
            branch_factor: 1,
            items_per_dir: 0,
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
        if self.op == MetadataOp::Rename && self.kind != ItemKind::Dir {
            return bad("phase", "rename is a directory phase only".to_owned());
        }
        if self.op == MetadataOp::Rename && self.items == 1 {
            // mdtest renames nothing either: the chain needs two names.
            return bad("items", "rename needs 2 items or more".to_owned());
        }
        if self.kind == ItemKind::Tree
            && !matches!(self.op, MetadataOp::Create | MetadataOp::Remove)
        {
            return bad("phase", "a tree has create and remove only".to_owned());
        }
        if self.branch_factor == 0 {
            return bad("branch_factor", "is 0; at least 1".to_owned());
        }
        let dirs = self.tree_dirs().filter(|d| *d <= MAX_TREE_DIRS).ok_or_else(|| {
            Error::invalid(
                "tree_depth",
                format!(
                    "a tree of depth {} and branch factor {} has more than {MAX_TREE_DIRS} directories",
                    self.tree_depth, self.branch_factor
                ),
            )
        })?;
        if self.kind == ItemKind::Tree && self.items > dirs {
            return bad(
                "items",
                format!("{} > the tree's {dirs} directories", self.items),
            );
        }
        if self.tree_depth > 0 && self.kind != ItemKind::Tree && self.items_per_dir == 0 {
            return bad(
                "items_per_dir",
                "is 0 with a tree below the rank's directory".to_owned(),
            );
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

    /// The directories of the tree (mdtest's `sum(b^i, i = 0..=z)`),
    /// None if that overflows.
    pub fn tree_dirs(&self) -> Option<u64> {
        let b = u64::from(self.branch_factor);
        let mut level = 1u64;
        let mut total = 1u64;
        for _ in 0..self.tree_depth {
            level = level.checked_mul(b)?;
            total = total.checked_add(level)?;
        }
        Some(total)
    }

    /// The path of the tree's directory `d`, numbered as mdtest numbers
    /// them (0 the rank's directory, `b*d+1..=b*d+b` the children of `d`):
    /// `{dir}/tree.{rank}.{a}/.../tree.{rank}.{d}` (`tree.shared.{..}`
    /// in the shared directory).
    pub fn tree_dir_path(&self, d: u64) -> String {
        let dir = self.dir();
        let base = dir.rsplit('/').next().unwrap_or("tree").to_owned();
        let b = u64::from(self.branch_factor.max(1));
        let mut chain = Vec::new();
        let mut at = d;
        while at > 0 {
            chain.push(at);
            at = (at - 1) / b;
        }
        chain
            .iter()
            .rev()
            .fold(dir, |path, n| format!("{path}/{base}.{n}"))
    }

    /// The tree's directories in the order the phase takes them: create
    /// top down (each directory before its children, mdtest's recursion),
    /// remove bottom up (each directory after its children).
    pub fn tree_order(&self) -> Vec<u64> {
        let mut out = Vec::new();
        self.walk_tree(0, 0, &mut out);
        out
    }

    fn walk_tree(&self, d: u64, level: u32, out: &mut Vec<u64>) {
        let top_down = self.op == MetadataOp::Create;
        if top_down {
            out.push(d);
        }
        if level < self.tree_depth {
            let b = u64::from(self.branch_factor);
            for child in b * d + 1..=b * d + b {
                self.walk_tree(child, level + 1, out);
            }
        }
        if !top_down {
            out.push(d);
        }
    }

    /// The path of item `i` of this rank: `{parent}/file.mdtest.{rank}.{i}`
    /// or `{parent}/dir.mdtest.{rank}.{i}` (mdtest's names, so that ranks
    /// never collide in a shared directory), the parent being the tree's
    /// directory `i / items_per_dir` (the rank's directory without a tree).
    /// A tree's item `i` is its directory `i`.
    pub fn path(&self, i: u64) -> String {
        let what = match self.kind {
            ItemKind::File => "file",
            ItemKind::Dir => "dir",
            ItemKind::Tree => return self.tree_dir_path(i),
        };
        let parent = match i.checked_div(self.items_per_dir) {
            Some(d) => self.tree_dir_path(d),
            None => self.dir(),
        };
        format!("{parent}/{what}.mdtest.{}.{i}", self.rank)
    }

    /// Rename item `i` of `items` from the first path to the second:
    /// mdtest's chain, each directory onto the name the previous one left,
    /// the first parked under `-XX` and moved last, so that every name is
    /// there again at the end.
    pub fn rename_paths(&self, i: u64) -> (String, String) {
        let parked = format!("{}-XX", self.path(0));
        let from = if i + 1 == self.items && i > 0 {
            parked.clone()
        } else {
            self.path(i)
        };
        let to = if i == 0 { parked } else { self.path(i - 1) };
        (from, to)
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
    fn tree_shape_order_and_item_places_follow_mdtest() {
        let mut s = MetadataSpec {
            rank: 1,
            ranks: 2,
            items: 13,
            tree_depth: 2,
            branch_factor: 3,
            kind: ItemKind::Tree,
            ..MetadataSpec::default()
        };
        assert!(s.check().is_ok());
        assert_eq!(s.tree_dirs(), Some(13));
        assert_eq!(s.tree_dir_path(0), "mdtest/tree.1");
        assert_eq!(s.tree_dir_path(3), "mdtest/tree.1/tree.1.3");
        // The children of 2 are 7, 8, 9.
        assert_eq!(s.tree_dir_path(8), "mdtest/tree.1/tree.1.2/tree.1.8");
        assert_eq!(s.tree_order(), [0, 1, 4, 5, 6, 2, 7, 8, 9, 3, 10, 11, 12]);
        s.op = MetadataOp::Remove;
        assert_eq!(s.tree_order(), [4, 5, 6, 1, 7, 8, 9, 2, 10, 11, 12, 3, 0]);
        s.items = 14;
        assert!(s.check().unwrap_err().to_string().contains("items"));
        s.op = MetadataOp::Stat;
        s.items = 3;
        assert!(
            s.check()
                .unwrap_err()
                .to_string()
                .contains("create and remove")
        );
        // Files: 76 per directory of the 13 (mdtest -n 988 -z 2 -b 3).
        s.kind = ItemKind::File;
        s.items = 988;
        s.items_per_dir = 76;
        assert!(s.check().is_ok());
        assert_eq!(s.path(75), "mdtest/tree.1/file.mdtest.1.75");
        assert_eq!(s.path(76), "mdtest/tree.1/tree.1.1/file.mdtest.1.76");
        assert_eq!(
            s.path(987),
            "mdtest/tree.1/tree.1.3/tree.1.12/file.mdtest.1.987"
        );
        s.items_per_dir = 0;
        assert!(s.check().unwrap_err().to_string().contains("items_per_dir"));
        s.branch_factor = 0;
        assert!(s.check().unwrap_err().to_string().contains("branch_factor"));
        s.branch_factor = 1000;
        s.tree_depth = 9;
        assert!(s.check().unwrap_err().to_string().contains("tree_depth"));
        // A linear tree: depth + 1 directories.
        let line = MetadataSpec {
            tree_depth: 4,
            ..MetadataSpec::default()
        };
        assert_eq!(line.tree_dirs(), Some(5));
        assert_eq!(line.tree_dir_path(2), "mdtest/tree.0/tree.0.1/tree.0.2");
    }

    #[test]
    fn rename_chain_is_mdtests() {
        let s = MetadataSpec {
            op: MetadataOp::Rename,
            kind: ItemKind::Dir,
            items: 3,
            ..MetadataSpec::default()
        };
        assert!(s.check().is_ok());
        let d = |i: u64| s.path(i);
        let parked = format!("{}-XX", d(0));
        assert_eq!(s.rename_paths(0), (d(0), parked.clone()));
        assert_eq!(s.rename_paths(1), (d(1), d(0)));
        assert_eq!(s.rename_paths(2), (parked, d(1)));
        let one = MetadataSpec {
            items: 1,
            ..s.clone()
        };
        assert!(one.check().unwrap_err().to_string().contains("2 items"));
        let files = MetadataSpec {
            kind: ItemKind::File,
            ..s
        };
        assert!(
            files
                .check()
                .unwrap_err()
                .to_string()
                .contains("directory phase only")
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
