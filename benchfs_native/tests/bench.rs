//! The bulk benchmark, small and buffered (fast anywhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use benchfs_native::Error;
use benchfs_native::bench::{BenchConfig, Pattern, run};
use benchfs_native::trace::format::parse;
use benchfs_native::trace::{Kind, TraceConfig};
use common::{TempDir, watchdog};

#[test]
fn every_pattern_runs_and_counts() {
    watchdog(120, || {
        let dir = TempDir::new("bench");
        let cfg = |pattern, block_size, direct| BenchConfig {
            root: dir.path().to_path_buf(),
            pattern,
            block_size,
            queue_depth: 8,
            total_bytes: 8 << 20,
            files: 2,
            direct,
            trace: None,
        };
        // Reading before writing names the problem.
        assert!(matches!(
            run(&cfg(Pattern::Read, 65536, false)),
            Err(Error::InvalidArgument { .. } | Error::Os { .. })
        ));
        for (p, bs) in [
            (Pattern::Write, 65536),
            (Pattern::Read, 65536),
            (Pattern::RandWrite, 4096),
            (Pattern::RandRead, 4096),
        ] {
            let r = run(&cfg(p, bs, false)).unwrap();
            assert_eq!(r.ops, (8 << 20) / bs as u64, "{r:?}");
            assert_eq!(r.bytes, 8 << 20);
            assert_eq!(r.latency.count, r.ops);
            assert!(r.iops > 0.0 && r.mib_per_s > 0.0 && r.io_depth_mean >= 1.0);
            assert!(r.latency.p50_ns <= r.latency.p99_ns && r.latency.p99_ns <= r.latency.max_ns);
        }
        assert_eq!(
            std::fs::metadata(dir.path().join("bench.1")).unwrap().len(),
            4 << 20
        );
    });
}

#[test]
fn bench_trace_counts_every_op() {
    watchdog(120, || {
        let dir = TempDir::new("bench-trace");
        let tdir = dir.path().join("trace");
        let r = run(&BenchConfig {
            root: dir.path().join("data"),
            pattern: Pattern::RandWrite,
            block_size: 4096,
            queue_depth: 16,
            total_bytes: 4 << 20,
            files: 1,
            direct: false,
            trace: Some(TraceConfig {
                dir: tdir.clone(),
                node: "benchnode".into(),
                node_id: 3,
            }),
        })
        .unwrap();
        let f = std::fs::read_dir(&tdir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let p = parse(&std::fs::read(f).unwrap()).unwrap();
        let ops = p
            .records
            .iter()
            .filter(|r| r.kind == Kind::StorageOp as u8)
            .count() as u64;
        let sqes: u64 = p
            .records
            .iter()
            .filter(|r| r.kind == Kind::Submit as u8)
            .map(|r| r.d0)
            .sum();
        assert_eq!(ops, r.ops);
        assert_eq!(sqes, r.ops);
        assert!(p.header_json.contains("\"process\": \"bench\""));
    });
}
