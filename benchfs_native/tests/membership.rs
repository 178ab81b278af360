//! The membership registry on a real directory.

use std::fs;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use benchfs_native::Error;
use benchfs_native::membership::{
    Expected, Record, WaitOptions, clear, is_alive_here, read_all, register, unregister,
    unregister_own, wait_for, wait_for_with,
};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "benchfs-membership-{tag}-{}-{}",
            std::process::id(),
            Record::now_unix_ns()
        ));
        let _ = fs::remove_dir_all(&p);
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn record(name: &str, id: u32) -> Record {
    Record {
        node_name: name.to_owned(),
        node_id: id,
        daemon_index: 0,
        // Above the kernel's pid_max (at most 2^22): never a live process of
        // this machine, so re-registering a name is never refused as held.
        pid: 4_000_000_000 + id,
        host: format!("host-{name}"),
        worker_address: vec![0, 1, 0xab, 0xff, id as u8],
        data_dir: format!("/local/benchfs/{name}"),
        start_time_unix_ns: Record::now_unix_ns(),
        protocol_version: 1,
    }
}

fn names(n: u32) -> Vec<String> {
    (0..n).map(|i| format!("node{i:02}")).collect()
}

fn fast() -> WaitOptions {
    WaitOptions {
        poll_interval: Duration::from_millis(10),
        ..WaitOptions::default()
    }
}

#[test]
fn records_round_trip_and_sort_by_node_id() {
    let d = TempDir::new("roundtrip");
    let mut want = Vec::new();
    for (i, n) in names(4).iter().enumerate().rev() {
        let r = record(n, i as u32);
        let path = register(&d.0, &r).unwrap();
        assert!(path.ends_with(format!("{n}.json")));
        want.push(r);
    }
    want.reverse();
    assert_eq!(read_all(&d.0).unwrap(), want);
    // The address is hex in the JSON, readable by other tools.
    let text = fs::read_to_string(d.0.join("node01.json")).unwrap();
    assert!(
        text.contains("\"worker_address\": \"0001abff01\""),
        "{text}"
    );
    // Re-registering replaces the record.
    let mut r = record("node01", 1);
    r.pid = 7;
    register(&d.0, &r).unwrap();
    assert_eq!(read_all(&d.0).unwrap()[1].pid, 7);
}

#[test]
fn late_daemon_within_the_deadline_is_waited_for() {
    let d = TempDir::new("late");
    for (i, n) in names(3).iter().enumerate() {
        register(&d.0, &record(n, i as u32)).unwrap();
    }
    let dir = d.0.clone();
    // Late by a moment; whenever it lands, node03 is in the answer only if the wait saw it.
    let late = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        register(&dir, &record("node03", 3))
    });
    let got = wait_for_with(
        &d.0,
        &Expected::Names(names(4)),
        Instant::now() + Duration::from_secs(60),
        &fast(),
    )
    .unwrap();
    late.join().unwrap().unwrap();
    let got: Vec<&str> = got.iter().map(|r| r.node_name.as_str()).collect();
    assert_eq!(got, ["node00", "node01", "node02", "node03"]);

    // By count too.
    let by_count = wait_for(&d.0, &Expected::Count(4), Instant::now()).unwrap();
    assert_eq!(by_count.len(), 4);
}

#[test]
fn deadline_error_names_the_missing_daemons() {
    let d = TempDir::new("missing");
    let all = names(16);
    for (i, n) in all.iter().enumerate().take(8) {
        register(&d.0, &record(n, i as u32)).unwrap();
    }
    let t0 = Instant::now();
    let err = wait_for_with(
        &d.0,
        &Expected::Names(all.clone()),
        Instant::now() + Duration::from_millis(200),
        &fast(),
    )
    .unwrap_err();
    assert!(t0.elapsed() >= Duration::from_millis(200));
    // Only a hang guard: it gives up at the deadline, not some time later.
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert_eq!(err.errno(), Some(libc::ETIMEDOUT));
    let msg = err.to_string();
    assert!(msg.contains("8 of 16 expected daemons registered"), "{msg}");
    for n in &all[8..] {
        assert!(msg.contains(n.as_str()), "{n} missing from: {msg}");
    }
    for n in &all[..8] {
        assert!(
            !msg.contains(&format!("{n},")),
            "{n} listed as missing: {msg}"
        );
    }

    // By count: says how many.
    let err = wait_for_with(&d.0, &Expected::Count(10), Instant::now(), &fast()).unwrap_err();
    assert!(err.to_string().contains("8 of 10"), "{err}");

    // A partial membership only when asked for.
    let partial = wait_for_with(
        &d.0,
        &Expected::Names(all.clone()),
        Instant::now(),
        &WaitOptions {
            allow_partial: true,
            ..fast()
        },
    )
    .unwrap();
    assert_eq!(partial.len(), 8);
}

#[test]
fn missing_directory_times_out_instead_of_failing_early() {
    let d = TempDir::new("nodir");
    let err = wait_for_with(
        &d.0,
        &Expected::Names(names(2)),
        Instant::now() + Duration::from_millis(50),
        &fast(),
    )
    .unwrap_err();
    assert_eq!(err.errno(), Some(libc::ETIMEDOUT));
    assert!(err.to_string().contains("node00, node01"), "{err}");
    // Nothing registered: partial does not help.
    let opts = WaitOptions {
        allow_partial: true,
        ..fast()
    };
    assert!(wait_for_with(&d.0, &Expected::Count(1), Instant::now(), &opts).is_err());
}

#[test]
fn temp_and_foreign_files_are_ignored() {
    let d = TempDir::new("temp");
    register(&d.0, &record("node00", 0)).unwrap();
    // A half-written record under a temp name, and unrelated files.
    fs::write(d.0.join(".node01.json.tmp.123.0"), b"{\"node_name\": \"no").unwrap();
    fs::write(d.0.join("README"), b"not a record").unwrap();
    fs::write(d.0.join(".hidden.json"), b"garbage").unwrap();
    let all = read_all(&d.0).unwrap();
    assert_eq!(all.len(), 1);
    // clear removes records and temp files only.
    assert_eq!(clear(&d.0).unwrap(), 2);
    assert!(d.0.join("README").exists());
    assert!(read_all(&d.0).unwrap().is_empty());
    assert_eq!(clear(&d.0.join("absent")).unwrap(), 0);
}

#[test]
fn corrupt_record_is_an_error_naming_the_file() {
    let d = TempDir::new("corrupt");
    register(&d.0, &record("node00", 0)).unwrap();
    fs::write(d.0.join("node01.json"), b"{\"node_name\": \"node01\", ").unwrap();
    let err = read_all(&d.0).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("node01.json"), "{msg}");
    assert!(matches!(err, Error::InvalidArgument { .. }));
    // wait_for fails at once rather than waiting out the deadline.
    let t0 = Instant::now();
    let err = wait_for_with(
        &d.0,
        &Expected::Count(2),
        Instant::now() + Duration::from_secs(600),
        &fast(),
    )
    .unwrap_err();
    // Far below the 600 s deadline: it failed at once (a generous bound, not a speed claim).
    assert!(t0.elapsed() < Duration::from_secs(300));
    assert!(err.to_string().contains("node01.json"), "{err}");

    // Bad hex, wrong name inside, duplicate node ids.
    let mut bad = serde_json_text(&record("node01", 1));
    bad = bad.replace("0001abff01", "zz");
    fs::write(d.0.join("node01.json"), bad).unwrap();
    let msg = read_all(&d.0).unwrap_err().to_string();
    assert!(
        msg.contains("node01.json") && msg.contains("worker_address"),
        "{msg}"
    );

    fs::write(
        d.0.join("node01.json"),
        serde_json_text(&record("node09", 1)),
    )
    .unwrap();
    let msg = read_all(&d.0).unwrap_err().to_string();
    assert!(
        msg.contains("node01.json") && msg.contains("node09"),
        "{msg}"
    );

    fs::remove_file(d.0.join("node01.json")).unwrap();
    register(&d.0, &record("other", 0)).unwrap();
    let msg = read_all(&d.0).unwrap_err().to_string();
    assert!(
        msg.contains("node00.json") && msg.contains("other.json"),
        "{msg}"
    );
    assert!(msg.contains("node_id 0"), "{msg}");
}

/// A record's JSON as `register` writes it.
fn serde_json_text(r: &Record) -> String {
    let d = TempDir::new("text");
    let path = register(&d.0, r).unwrap_or_default();
    fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn protocol_version_mismatch_names_the_daemon() {
    let d = TempDir::new("version");
    register(&d.0, &record("node00", 0)).unwrap();
    let mut old = record("node01", 1);
    old.protocol_version = 0;
    register(&d.0, &old).unwrap();
    let opts = WaitOptions {
        protocol_version: Some(1),
        ..fast()
    };
    let t0 = Instant::now();
    let err = wait_for_with(
        &d.0,
        &Expected::Count(2),
        Instant::now() + Duration::from_secs(600),
        &opts,
    )
    .unwrap_err();
    // Far below the 600 s deadline: it failed at once (a generous bound, not a speed claim).
    assert!(t0.elapsed() < Duration::from_secs(300));
    let msg = err.to_string();
    assert!(msg.contains("node01") && msg.contains("version 0"), "{msg}");
    // Without the check both are returned.
    assert_eq!(
        wait_for(&d.0, &Expected::Count(2), Instant::now())
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn unregister_and_bad_names() {
    let d = TempDir::new("unreg");
    register(&d.0, &record("node00", 0)).unwrap();
    unregister(&d.0, "node00").unwrap();
    unregister(&d.0, "node00").unwrap();
    assert!(read_all(&d.0).unwrap().is_empty());
    for bad in ["", ".x", "a/b", "a\0b", "a\nb"] {
        let err = register(&d.0, &record(bad, 0)).unwrap_err();
        assert!(err.to_string().contains("node_name"), "{err}");
    }
    assert!(wait_for(&d.0, &Expected::Names(vec!["../x".into()]), Instant::now()).is_err());
}

#[test]
fn concurrent_rewrites_are_never_seen_half_written() {
    let d = TempDir::new("atomic");
    register(&d.0, &record("node00", 0)).unwrap();
    let dir = d.0.clone();
    let writer = thread::spawn(move || {
        for i in 0..200u32 {
            let mut r = record("node00", 0);
            r.data_dir = "x".repeat(1 + (i as usize * 37) % 5000);
            register(&dir, &r)?;
        }
        Ok::<_, Error>(())
    });
    let mut reads = 0;
    while !writer.is_finished() {
        let all = read_all(&d.0).unwrap();
        assert_eq!(all.len(), 1);
        reads += 1;
    }
    writer.join().unwrap().unwrap();
    assert!(reads > 0);
}

fn this_host() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[test]
fn a_name_held_by_a_running_daemon_is_refused_and_kept() {
    let d = TempDir::new("held");
    let host = this_host();
    // pid 1 runs on every host: a live holder of the name.
    let holder = Record {
        pid: 1,
        host: host.clone(),
        ..record("twin", 0)
    };
    assert!(is_alive_here(&holder, &host));
    register(&d.0, &holder).unwrap();
    let second = Record {
        pid: std::process::id(),
        host: host.clone(),
        ..record("twin", 1)
    };
    let err = register(&d.0, &second).unwrap_err().to_string();
    assert!(err.contains("\"twin\"") && err.contains("pid 1"), "{err}");
    assert!(err.contains(&d.0.display().to_string()), "{err}");
    assert_eq!(read_all(&d.0).unwrap(), vec![holder.clone()]);
    // Stopping never removes a record that is not its own.
    assert!(!unregister_own(&d.0, "twin", second.pid, &host).unwrap());
    assert_eq!(read_all(&d.0).unwrap(), vec![holder.clone()]);
    assert!(unregister_own(&d.0, "twin", 1, &host).unwrap());
    assert!(read_all(&d.0).unwrap().is_empty());
}

#[test]
fn a_dead_daemons_record_is_replaced() {
    let d = TempDir::new("stale");
    let host = this_host();
    // Above the kernel's pid_max (at most 2^22): no such process.
    let dead = Record {
        pid: 4_000_000_000,
        host: host.clone(),
        ..record("node00", 0)
    };
    assert!(!is_alive_here(&dead, &host));
    register(&d.0, &dead).unwrap();
    let fresh = Record {
        pid: std::process::id(),
        host,
        ..record("node00", 0)
    };
    register(&d.0, &fresh).unwrap();
    assert_eq!(read_all(&d.0).unwrap(), vec![fresh]);
}
