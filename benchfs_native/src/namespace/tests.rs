use super::*;

fn ns() -> Namespace {
    Namespace::new(IdSource::new(0, 7), 100, 1000, 1000)
}

const ME: (u32, u32) = (1000, 100);

/// A removal of a name that was its file's only one.
fn plain(id: u64) -> Removed {
    Removed {
        id,
        linked: false,
        took_name: true,
        no_data: false,
    }
}

#[test]
fn the_root_always_exists_as_a_directory() {
    let n = ns();
    let r = n.get("").unwrap();
    assert_eq!((r.kind, r.ino, r.nlink()), (Kind::Dir, ROOT_INO, 2));
    assert_eq!(n.check_parent(""), Ok(()));
    assert!(n.is_empty());
}

#[test]
fn create_and_mkdir_refuse_existing_names() {
    let mut n = ns();
    let (f, made) = n.create("a", 0o4755, ME, true, 5).unwrap();
    assert!(made);
    assert_eq!(f.mode, 0o4755, "set-user-ID is kept");
    assert_eq!((f.uid, f.gid, f.mtime), (1000, 100, 5));
    assert_eq!(n.create("a", 0o644, ME, true, 6), Err(libc::EEXIST));
    assert_eq!(n.create("a", 0o644, ME, false, 6), Ok((f, false)));
    assert_eq!(n.mkdir("a", 0o755, ME, 6), Err(libc::EEXIST));
    let d = n.mkdir("d", 0o1777, ME, 6).unwrap();
    assert_eq!(d.mode, 0o1777, "sticky is kept");
    assert_ne!(d.ino, f.ino);
    assert_eq!(n.create("d", 0o644, ME, false, 6), Err(libc::EISDIR));
    assert_eq!(n.len(), 2);
}

#[test]
fn ids_are_unique_per_node_and_never_the_root() {
    let mut a = IdSource::new(0, 0);
    let mut b = IdSource::new(1, 0);
    let x: Vec<u64> = (0..1000).map(|_| a.next_id()).collect();
    let y: Vec<u64> = (0..1000).map(|_| b.next_id()).collect();
    let all: BTreeSet<u64> = x.iter().chain(&y).copied().collect();
    assert_eq!(all.len(), 2000);
    assert!(!all.contains(&ROOT_INO));
    assert!(!all.contains(&0));
}

#[test]
fn check_parent_names_what_is_wrong() {
    let mut n = ns();
    n.create("f", 0o644, ME, true, 1).unwrap();
    n.mkdir("d", 0o755, ME, 1).unwrap();
    assert_eq!(n.check_parent("d"), Ok(()));
    assert_eq!(n.check_parent("f"), Err(libc::ENOTDIR));
    assert_eq!(n.check_parent("x"), Err(libc::ENOENT));
    n.rmdir_mark("d").unwrap();
    assert_eq!(n.check_parent("d"), Err(libc::ENOENT), "being removed");
}

#[test]
fn rmdir_steps() {
    let mut n = ns();
    n.mkdir("d", 0o755, ME, 1).unwrap();
    n.create("f", 0o644, ME, true, 1).unwrap();
    assert_eq!(n.rmdir_mark(""), Err(libc::EBUSY));
    assert_eq!(n.rmdir_mark("f"), Err(libc::ENOTDIR));
    assert_eq!(n.rmdir_mark("x"), Err(libc::ENOENT));
    assert_eq!(n.rmdir_commit("d"), Err(libc::ENOENT), "not marked");
    n.rmdir_mark("d").unwrap();
    assert_eq!(n.rmdir_mark("d"), Err(libc::EBUSY));
    n.rmdir_unmark("d").unwrap();
    assert_eq!(n.check_parent("d"), Ok(()));
    n.rmdir_mark("d").unwrap();
    n.rmdir_commit("d").unwrap();
    assert!(n.get("d").is_none());
    let d = n.mkdir("e", 0o755, ME, 1).unwrap();
    assert_eq!(n.rmdir_undo("e", d.ino + 1), Err(libc::ENOENT));
    n.rmdir_undo("e", d.ino).unwrap();
    assert!(n.get("e").is_none());
}

#[test]
fn unlink_removes_files_only_and_checks_the_id() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    n.mkdir("d", 0o755, ME, 1).unwrap();
    assert_eq!(n.unlink("d", 0), Err(libc::EISDIR));
    assert_eq!(n.unlink("f", f.ino + 1), Err(libc::ENOENT));
    let never_written = Removed {
        no_data: true,
        ..plain(f.ino)
    };
    assert_eq!(n.unlink("f", f.ino), Ok(never_written));
    assert_eq!(n.unlink("f", 0), Err(libc::ENOENT));
}

#[test]
fn the_home_knows_which_of_its_files_were_never_written() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    let (g, _) = n.create("g", 0o644, ME, true, 1).unwrap();
    assert!(n.holds_no_data(n.get("f").unwrap()));
    n.mark_data(f.ino).unwrap();
    assert!(!n.holds_no_data(n.get("f").unwrap()));
    assert!(n.holds_no_data(n.get("g").unwrap()));
    // Directories, links and other daemons' ids are never known empty,
    // nor the root; a mark of another daemon's id is refused.
    let d = n.mkdir("d", 0o755, ME, 1).unwrap();
    assert!(!n.holds_no_data(&d));
    let l = n.symlink("l", "t", ME, 1).unwrap();
    assert!(!n.holds_no_data(&l));
    let mut moved_in = *n.get("g").unwrap();
    moved_in.ino = IdSource::new(1, 7).next_id();
    n.link("h", moved_in, None, true, 2).unwrap();
    assert!(!n.holds_no_data(n.get("h").unwrap()));
    assert_eq!(n.mark_data(moved_in.ino), Err(libc::EINVAL));
    // Nor one of this daemon's ids from before its restart (another start).
    let mut before_restart = *n.get("g").unwrap();
    before_restart.ino = IdSource::new(0, 8).next_id();
    n.link("k", before_restart, None, true, 2).unwrap();
    assert!(!n.holds_no_data(n.get("k").unwrap()));
    assert_eq!(n.mark_data(ROOT_INO), Err(libc::EINVAL));
    // A second name makes the file unknown (its names' counts decide).
    n.mark_linked("g", g.ino).unwrap();
    assert!(!n.holds_no_data(n.get("g").unwrap()));
    // A rename moves the record (the old name's unlink by id) and keeps
    // what the home knows; a removal forgets it with the file.
    let rec = *n.get("f").unwrap();
    n.link("f2", rec, None, false, 3).unwrap();
    let moved = n.unlink("f", f.ino).unwrap();
    assert!(!moved.no_data);
    assert!(!n.holds_no_data(n.get("f2").unwrap()));
    assert!(!n.unlink("f2", 0).unwrap().no_data);
    assert!(!n.written.contains(&f.ino));
}

#[test]
fn readdir_pages_the_entries_of_one_directory() {
    let mut n = ns();
    n.mkdir("d", 0o755, ME, 1).unwrap();
    for i in 0..10 {
        n.create(&format!("d/f{i}"), 0o644, ME, true, 1).unwrap();
    }
    n.create("top", 0o644, ME, true, 1).unwrap();
    let p = n.readdir("d", 0, 4);
    let names: Vec<_> = p.entries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["f0", "f1", "f2", "f3"]);
    assert!(!p.eof);
    let p2 = n.readdir("d", p.next_cursor, 100);
    assert_eq!(p2.entries.len(), 6);
    assert!(p2.eof);
    let root: Vec<_> = n
        .readdir("", 0, 100)
        .entries
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(root, ["d", "top"]);
    let empty = n.readdir("nothing", 0, 10);
    assert!(empty.entries.is_empty() && empty.eof);
    n.unlink("d/f3", 0).unwrap();
    assert_eq!(n.readdir("d", 0, 100).entries.len(), 9);
}

#[test]
fn link_replaces_a_file_but_not_a_directory() {
    let mut n = ns();
    let (a, _) = n.create("a", 0o600, ME, true, 1).unwrap();
    let (b, _) = n.create("b", 0o644, ME, true, 1).unwrap();
    n.mkdir("d", 0o755, ME, 1).unwrap();
    assert_eq!(n.link("d", a, None, false, 9), Err(libc::EISDIR));
    assert_eq!(n.link("b", a, None, false, 9), Ok(plain(b.ino)));
    let moved = n.get("b").unwrap();
    assert_eq!((moved.ino, moved.mode, moved.ctime), (a.ino, 0o600, 9));
    // Nothing there: no id and no name taken.
    assert_eq!(n.link("c", a, None, false, 9), Ok(Removed::default()));
}

#[test]
fn setattr_keeps_special_bits_and_stamps_ctime() {
    let mut n = ns();
    n.create("f", 0o644, ME, true, 1).unwrap();
    n.mkdir("d", 0o755, ME, 1).unwrap();
    let c = Changes {
        mode: Some(0o106_755),
        uid: Some(7),
        mtime: Some(3),
        ..Changes::default()
    };
    let r = n.setattr("f", &c, 50).unwrap();
    assert_eq!(
        (r.mode, r.uid, r.gid, r.mtime, r.ctime),
        (0o6755, 7, 100, 3, 50),
        "type bits go, set-user-ID and set-group-ID given with the owner stay"
    );
    let chown = Changes {
        gid: Some(8),
        ..Changes::default()
    };
    assert_eq!(n.setattr("f", &chown, 51).unwrap().mode, 0o755);
    let sgid_no_exec = Changes {
        mode: Some(0o2640),
        ..Changes::default()
    };
    n.setattr("f", &sgid_no_exec, 52).unwrap();
    assert_eq!(n.setattr("f", &chown, 53).unwrap().mode, 0o2640);
    let sticky_dir = Changes {
        mode: Some(0o3777),
        ..Changes::default()
    };
    n.setattr("d", &sticky_dir, 54).unwrap();
    assert_eq!(n.setattr("d", &chown, 55).unwrap().mode, 0o3777);
    let resized = Changes {
        resized: true,
        ..Changes::default()
    };
    assert_eq!(n.setattr("f", &resized, 60).unwrap().mtime, 60);
    assert_eq!(n.setattr("d", &resized, 60), Err(libc::EISDIR));
    assert_eq!(n.setattr("x", &c, 60), Err(libc::ENOENT));
    assert_eq!(n.setattr("", &c, 60).unwrap().mode, 0o6755);
}

#[test]
fn a_symlink_keeps_its_target_and_size_and_is_never_followed() {
    let mut n = ns();
    n.mkdir("d", 0o755, ME, 1).unwrap();
    let (f, _) = n.create("d/f", 0o644, ME, true, 1).unwrap();
    let l = n.symlink("d/l", "../x/y", (7, 8), 5).unwrap();
    assert_eq!(
        (
            l.kind,
            l.mode,
            l.uid,
            l.gid,
            l.mtime,
            l.target_len,
            l.nlink()
        ),
        (Kind::Symlink, 0o777, 7, 8, 5, 6, 1)
    );
    assert_ne!(l.ino, f.ino);
    assert_eq!(n.readlink("d/l"), Ok((l, "../x/y")));
    assert_eq!(n.readlink("d/f"), Err(libc::EINVAL));
    assert_eq!(n.readlink("d"), Err(libc::EINVAL));
    assert_eq!(n.readlink("d/nope"), Err(libc::ENOENT));
    // The name is taken, whatever the target.
    assert_eq!(n.symlink("d/l", "z", ME, 6), Err(libc::EEXIST));
    assert_eq!(n.symlink("d/f", "z", ME, 6), Err(libc::EEXIST));
    assert_eq!(n.symlink("d", "z", ME, 6), Err(libc::EEXIST));
    assert_eq!(n.create("d/l", 0o644, ME, false, 6), Err(libc::EEXIST));
    assert_eq!(n.mkdir("d/l", 0o755, ME, 6), Err(libc::EEXIST));
    // A link is not a directory: it takes no entries, is not rmdir'ed.
    assert_eq!(n.check_parent("d/l"), Err(libc::ENOTDIR));
    assert_eq!(n.rmdir_mark("d/l"), Err(libc::ENOTDIR));
    let listed = n.readdir("d", 0, 10);
    let kinds: Vec<_> = listed
        .entries
        .iter()
        .map(|(m, r)| (m.as_str(), r.kind))
        .collect();
    assert_eq!(kinds, [("f", Kind::File), ("l", Kind::Symlink)]);
}

#[test]
fn unlinking_a_symlink_frees_its_target_and_names_no_data() {
    let mut n = ns();
    let l = n.symlink("l", "t", ME, 1).unwrap();
    assert_eq!(n.unlink("l", l.ino + 1), Err(libc::ENOENT));
    assert_eq!(n.unlink("l", l.ino), Ok(plain(0)));
    assert_eq!(n.readlink("l"), Err(libc::ENOENT));
    assert!(n.is_empty() && n.targets.is_empty());
    // A new link under the old name has its own target.
    n.symlink("l", "u", ME, 2).unwrap();
    assert_eq!(n.readlink("l").unwrap().1, "u");
}

#[test]
fn link_moves_a_symlink_and_replaces_links_and_files() {
    let mut n = ns();
    let l = n.symlink("l", "target", ME, 1).unwrap();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    // rename l -> m: the record and target under the new name, then the
    // old name removed by id.
    assert_eq!(
        n.link("m", l, Some("target"), false, 9),
        Ok(Removed::default())
    );
    assert_eq!(n.unlink("l", l.ino), Ok(plain(0)));
    let (moved, t) = n.readlink("m").unwrap();
    assert_eq!((moved.ino, moved.ctime, t), (l.ino, 9, "target"));
    // A link over a file names the file's data; a file over a link none,
    // though it took the link's name.
    assert_eq!(
        n.link("f", moved, Some("target"), false, 10),
        Ok(plain(f.ino))
    );
    assert_eq!(n.readlink("f").unwrap().1, "target");
    assert_eq!(n.link("f", f, None, false, 11), Ok(plain(0)));
    assert_eq!(
        n.get("f").map(|r| (r.kind, r.target_len)),
        Some((Kind::File, 0))
    );
    assert_eq!(n.readlink("f"), Err(libc::EINVAL));
    assert_eq!(n.targets.len(), 1);
}

#[test]
fn setattr_of_a_symlink_keeps_its_mode_and_refuses_a_size() {
    let mut n = ns();
    n.symlink("l", "t", ME, 1).unwrap();
    let c = Changes {
        mode: Some(0o600),
        uid: Some(7),
        mtime: Some(3),
        ..Changes::default()
    };
    let r = n.setattr("l", &c, 50).unwrap();
    assert_eq!((r.mode, r.uid, r.mtime, r.ctime), (0o777, 7, 3, 50));
    let resized = Changes {
        resized: true,
        ..Changes::default()
    };
    assert_eq!(n.setattr("l", &resized, 60), Err(libc::EINVAL));
}

#[test]
fn split_parent_of_nested_and_top_level_paths() {
    assert_eq!(split_parent("a/b/c"), ("a/b", "c"));
    assert_eq!(split_parent("a"), ("", "a"));
}

/// The count a step leaves on `n`'s table, at time 7.
fn count(n: &mut Namespace, ino: u64, step: CountStep) -> Result<u32, Errno> {
    n.link_count(ino, step, 7).map(|c| c.count)
}

/// The shared attributes of a file made by `ME` with mode 0644 at time 1.
fn made() -> SharedAttrs {
    SharedAttrs {
        mode: 0o644,
        uid: ME.0,
        gid: ME.1,
        atime: 1,
        mtime: 1,
        ctime: 1,
    }
}

#[test]
fn link_counts_live_on_the_home_daemon_and_start_at_one() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    let add = CountStep::Add(made());
    assert_eq!(count(&mut n, f.ino, CountStep::Get), Ok(1));
    assert_eq!(count(&mut n, f.ino, add), Ok(2));
    assert_eq!(count(&mut n, f.ino, add), Ok(3));
    assert_eq!(count(&mut n, f.ino, CountStep::Get), Ok(3));
    assert_eq!(count(&mut n, f.ino, CountStep::Drop), Ok(2));
    assert_eq!(count(&mut n, f.ino, CountStep::Drop), Ok(1));
    assert_eq!(n.counts.len(), 1, "a count back at 1 keeps the attributes");
    assert_eq!(count(&mut n, f.ino, CountStep::Drop), Ok(0));
    assert!(n.counts.is_empty(), "the last name takes the entry");
    assert_eq!(count(&mut n, ROOT_INO, CountStep::Get), Err(libc::EINVAL));
    let other = IdSource::new(3, 1).next_id();
    assert_eq!(count(&mut n, other, add), Err(libc::EINVAL));
    assert_eq!(home_node(other), Some(3));
    assert_eq!(home_node(f.ino), Some(0));
    assert_eq!(home_node(ROOT_INO), None);
}

#[test]
fn an_undone_link_whose_source_was_never_marked_leaves_no_entry() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    let add = CountStep::Add(made());
    // Two links under way; the source goes before either marks it.
    assert_eq!(count(&mut n, f.ino, add), Ok(2));
    assert_eq!(count(&mut n, f.ino, add), Ok(3));
    n.unlink("f", f.ino).unwrap();
    assert_eq!(n.mark_linked("f", f.ino), Err(libc::ENOENT));
    assert_eq!(count(&mut n, f.ino, CountStep::Undo), Ok(2));
    assert_eq!(n.counts.len(), 1, "the other link is still under way");
    let last = n.link_count(f.ino, CountStep::Undo, 7).unwrap();
    assert_eq!((last.count, last.shared), (1, None));
    assert!(n.counts.is_empty(), "no name ever read the entry");
}

#[test]
fn an_undo_keeps_the_entry_once_a_marked_name_showed_itself() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    let add = CountStep::Add(made());
    // A link that marked its source and failed after: its drop.
    assert_eq!(count(&mut n, f.ino, add), Ok(2));
    assert_eq!(count(&mut n, f.ino, CountStep::Drop), Ok(1));
    // A second one whose mark found the source gone: the source was
    // marked, so its unlink drops the count itself.
    assert_eq!(count(&mut n, f.ino, add), Ok(2));
    assert_eq!(count(&mut n, f.ino, CountStep::Undo), Ok(1));
    assert_eq!(n.counts.len(), 1, "the marked name reads it");
    assert_eq!(count(&mut n, f.ino, CountStep::Drop), Ok(0));
    assert!(n.counts.is_empty());
    // A get or a set come from a marked name too.
    for seen in [CountStep::Get, CountStep::Set(Changes::default())] {
        let (g, _) = n.create("g", 0o644, ME, true, 1).unwrap();
        assert_eq!(count(&mut n, g.ino, add), Ok(2));
        assert_eq!(count(&mut n, g.ino, add), Ok(3));
        count(&mut n, g.ino, seen).unwrap();
        assert_eq!(count(&mut n, g.ino, CountStep::Undo), Ok(2));
        assert_eq!(count(&mut n, g.ino, CountStep::Drop), Ok(1));
        assert_eq!(n.counts.len(), 1, "{seen:?}");
        assert_eq!(count(&mut n, g.ino, CountStep::Drop), Ok(0));
        n.unlink("g", 0).unwrap();
    }
    // An undo of an id the table does not hold: the last name's.
    assert_eq!(count(&mut n, f.ino, CountStep::Undo), Ok(0));
}

#[test]
fn the_first_link_takes_in_the_attributes_and_later_ones_keep_them() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    let before = n.link_count(f.ino, CountStep::Get, 5).unwrap();
    assert_eq!(before.shared, None, "one name: the record is the file's");
    let first = n.link_count(f.ino, CountStep::Add(made()), 5).unwrap();
    let linked = SharedAttrs { ctime: 5, ..made() };
    assert_eq!(first.shared, Some(linked), "a link changes ctime");
    let other = SharedAttrs {
        mode: 0o600,
        ..made()
    };
    let second = n.link_count(f.ino, CountStep::Add(other), 6).unwrap();
    assert_eq!(second.shared.map(|s| (s.mode, s.ctime)), Some((0o644, 6)));
}

#[test]
fn a_set_changes_the_shared_attributes_until_the_last_name_goes() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    let set = CountStep::Set(Changes {
        mode: Some(0o4700),
        uid: Some(9),
        atime: Some(3),
        mtime: Some(4),
        ..Changes::default()
    });
    // Not linked: nothing kept, the name's record is changed instead.
    assert_eq!(
        n.link_count(f.ino, set, 8),
        Ok(Counted {
            count: 1,
            shared: None
        })
    );
    assert!(n.counts.is_empty());
    n.link_count(f.ino, CountStep::Add(made()), 5).unwrap();
    let want = SharedAttrs {
        mode: 0o4700,
        uid: 9,
        gid: ME.1,
        atime: 3,
        mtime: 4,
        ctime: 8,
    };
    assert_eq!(n.link_count(f.ino, set, 8).unwrap().shared, Some(want));
    // The name it was set through goes: the last name still reads it.
    let one = n.link_count(f.ino, CountStep::Drop, 9).unwrap();
    assert_eq!(
        (one.count, one.shared),
        (1, Some(SharedAttrs { ctime: 9, ..want }))
    );
    let resized = CountStep::Set(Changes {
        resized: true,
        ..Changes::default()
    });
    let r = n.link_count(f.ino, resized, 10).unwrap().shared.unwrap();
    assert_eq!((r.mode, r.mtime, r.ctime), (0o4700, 10, 10));
    assert_eq!(count(&mut n, f.ino, CountStep::Drop), Ok(0));
    assert_eq!(
        n.link_count(f.ino, CountStep::Get, 11).unwrap().shared,
        None
    );
}

#[test]
fn link_counts_stop_at_the_limit() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    for _ in 1..MAX_LINKS {
        count(&mut n, f.ino, CountStep::Add(made())).unwrap();
    }
    assert_eq!(
        count(&mut n, f.ino, CountStep::Add(made())),
        Err(libc::EMLINK)
    );
    assert_eq!(count(&mut n, f.ino, CountStep::Get), Ok(MAX_LINKS));
}

#[test]
fn a_hard_link_is_a_second_linked_record_of_the_same_id() {
    let mut n = ns();
    let (f, _) = n.create("f", 0o644, ME, true, 1).unwrap();
    n.mkdir("d", 0o755, ME, 1).unwrap();
    assert_eq!(n.mark_linked("d", 0), Err(libc::EPERM));
    assert_eq!(n.mark_linked("f", f.ino + 1), Err(libc::ENOENT));
    assert_eq!(n.mark_linked("x", f.ino), Err(libc::ENOENT));
    assert_eq!(n.mark_linked("f", f.ino), Ok(()));
    let mut second = *n.get("f").unwrap();
    assert!(second.linked);
    assert_eq!(n.link("f", second, None, true, 2), Err(libc::EEXIST));
    assert_eq!(n.link("d", second, None, true, 2), Err(libc::EEXIST));
    second.ino = f.ino;
    assert_eq!(n.link("g", second, None, true, 2), Ok(Removed::default()));
    assert_eq!(n.get("g").map(|r| (r.ino, r.linked)), Some((f.ino, true)));
    // A rename of one name onto the other changes nothing.
    let same = Removed {
        id: f.ino,
        linked: true,
        took_name: true,
        no_data: false,
    };
    assert_eq!(n.link("g", second, None, false, 3), Ok(same));
    assert_eq!(n.get("g").map(|r| r.ctime), Some(2));
    // Removing a linked name names the id and says it was linked.
    assert_eq!(n.unlink("f", 0), Ok(same));
    assert_eq!(n.unlink("g", f.ino), Ok(same));
}

#[test]
fn a_linked_symlink_names_its_id_though_it_has_no_data() {
    let mut n = ns();
    let l = n.symlink("l", "t", ME, 1).unwrap();
    n.mark_linked("l", l.ino).unwrap();
    let rec = *n.get("l").unwrap();
    assert_eq!(n.link("m", rec, Some("t"), true, 2), Ok(Removed::default()));
    assert_eq!(n.readlink("m").unwrap().1, "t");
    let linked = Removed {
        id: l.ino,
        linked: true,
        took_name: true,
        no_data: false,
    };
    assert_eq!(n.unlink("l", 0), Ok(linked));
    assert_eq!(n.unlink("m", 0), Ok(linked));
    assert!(n.targets.is_empty());
}

#[test]
fn names_over_255_bytes_and_paths_of_4096_are_refused_before_insert() {
    let mut n = ns();
    let long = "n".repeat(256);
    let max = "n".repeat(255);
    assert_eq!(n.create(&long, 0o644, ME, true, 1), Err(libc::ENAMETOOLONG));
    assert_eq!(n.mkdir(&long, 0o755, ME, 1), Err(libc::ENAMETOOLONG));
    assert_eq!(n.symlink(&long, "t", ME, 1), Err(libc::ENAMETOOLONG));
    let (f, _) = n.create(&max, 0o644, ME, true, 1).unwrap();
    assert_eq!(n.link(&long, f, None, true, 2), Err(libc::ENAMETOOLONG));
    assert!(
        n.is_empty() || n.len() == 1,
        "only the 255-byte name is there"
    );
    let deep = format!("{}x", "d/".repeat(2046));
    assert_eq!(deep.len(), 4093);
    assert_eq!(check_name_lengths(&deep), Ok(()));
    let full = format!("{deep}yyy");
    assert_eq!(full.len(), 4096);
    assert_eq!(check_name_lengths(&full), Err(libc::ENAMETOOLONG));
    assert_eq!(n.create(&full, 0o644, ME, true, 1), Err(libc::ENAMETOOLONG));
    assert_eq!(n.len(), 1);
    let page = n.readdir("", 0, 10);
    assert_eq!(page.entries.len(), 1);
}

#[test]
fn fifos_and_sockets_are_names_without_data() {
    let mut n = ns();
    let (p, made) = n.create("p", libc::S_IFIFO | 0o640, ME, true, 1).unwrap();
    assert!(made);
    assert_eq!(
        (p.kind, p.mode, p.nlink(), p.data_id()),
        (Kind::Fifo, 0o640, 1, 0)
    );
    let (s, _) = n.create("s", libc::S_IFSOCK | 0o755, ME, true, 1).unwrap();
    assert_eq!(s.kind, Kind::Socket);
    assert_eq!(n.create("p", 0o644, ME, false, 2), Err(libc::EEXIST));
    assert_eq!(
        n.create("f", libc::S_IFDIR | 0o600, ME, true, 2),
        Err(libc::EINVAL)
    );
    let resized = Changes {
        resized: true,
        ..Changes::default()
    };
    assert_eq!(n.setattr("p", &resized, 3), Err(libc::EINVAL));
    // A rename keeps the kind; the removal names no data.
    assert_eq!(n.link("q", p, None, false, 4), Ok(Removed::default()));
    assert_eq!(n.get("q").map(|r| r.kind), Some(Kind::Fifo));
    let gone = n.unlink("q", 0).unwrap();
    assert_eq!((gone.id, gone.took_name), (0, true));
}

#[test]
fn device_nodes_keep_their_number_through_a_rename() {
    let mut n = ns();
    let (b, made) = n
        .create_node("b", libc::S_IFBLK | 0o644, 0x0102, ME, true, 1)
        .unwrap();
    assert!(made);
    assert_eq!(
        (b.kind, b.mode, b.target_len, b.nlink(), b.data_id()),
        (Kind::BlockDev, 0o644, 0x0102, 1, 0)
    );
    let (c, _) = n
        .create_node("c", libc::S_IFCHR | 0o600, 7, ME, true, 1)
        .unwrap();
    assert_eq!((c.kind, c.target_len), (Kind::CharDev, 7));
    // A file's create ignores a number.
    let (f, _) = n.create_node("f", 0o600, 9, ME, true, 1).unwrap();
    assert_eq!((f.kind, f.target_len), (Kind::File, 0));
    assert_eq!(
        n.create_node("b", libc::S_IFCHR | 0o600, 1, ME, true, 2),
        Err(libc::EEXIST)
    );
    assert_eq!(n.link("d", b, None, false, 3), Ok(Removed::default()));
    let d = n.get("d").copied().unwrap();
    assert_eq!((d.kind, d.target_len), (Kind::BlockDev, 0x0102));
    let gone = n.unlink("d", 0).unwrap();
    assert_eq!((gone.id, gone.took_name), (0, true));
}

#[test]
fn an_id_source_knows_the_ids_of_its_own_start() {
    let mut ids = IdSource::new(3, u64::MAX);
    let before = ids.clone();
    let first = ids.next_id();
    let second = ids.next_id();
    assert!(!before.handed_out(first), "not yet handed out");
    assert!(ids.handed_out(first) && ids.handed_out(second));
    assert!(
        !ids.handed_out(ids.clone().next_id()),
        "the next one is not out yet"
    );
    assert!(
        !ids.handed_out(IdSource::new(3, 5).next_id()),
        "another start's"
    );
    assert!(
        !ids.handed_out(IdSource::new(4, u64::MAX).next_id()),
        "another daemon's"
    );
}
