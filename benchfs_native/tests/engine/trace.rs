//! The store's trace: its header and records parse back.

use benchfs_native::trace::format::{RECORD_SIZE, parse};
use benchfs_native::trace::{Kind, OpCode, TraceConfig};

use crate::common::{TempDir, pattern, small_store, watchdog};

#[test]
fn trace_header_and_records_parse_back() {
    watchdog(60, || {
        let dir = TempDir::new("trace");
        let tdir = dir.path().join("trace");
        let s = small_store(&dir.path().join("store"), |o| {
            o.trace = Some(TraceConfig {
                dir: tdir.clone(),
                node: "node07".into(),
                node_id: 7,
            });
        });
        let writes = 20;
        for i in 0..writes {
            // Each write is one piece (inside one chunk, one buffer).
            s.write("t", i * 4096, &pattern(4096, i)).unwrap();
        }
        for i in 0..writes {
            s.read("t", i * 4096, 100).unwrap();
        }
        s.stat("t").unwrap();
        let _ = s.read("missing", 0, 1);
        s.fsync("t").unwrap();
        let path = s.trace_path().unwrap().to_path_buf();
        s.close().unwrap();
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            format!("trace-node07-{}.bftrace", std::process::id())
        );
        let bytes = std::fs::read(&path).unwrap();
        let p = parse(&bytes).unwrap();
        assert_eq!((bytes.len() - 16 - p.header_json.len()) % RECORD_SIZE, 0);
        for needle in [
            "\"format\": \"benchfs-trace\"",
            "\"version\": 1",
            "\"record_size\": 48",
            "\"node\": \"node07\"",
            "\"node_id\": 7",
            "\"process\": \"store\"",
            "\"1\": {\"name\": \"storage_op\", \"d0\": \"latency_ns\", \"d1\": \"queue_ns\", \"d2\": \"offset\"}",
            "\"13\": \"shutdown\"",
        ] {
            assert!(
                p.header_json.contains(needle),
                "{needle} in {}",
                p.header_json
            );
        }
        let ops: Vec<_> = p
            .records
            .iter()
            .filter(|r| r.kind == Kind::StorageOp as u8)
            .collect();
        let submits: Vec<_> = p
            .records
            .iter()
            .filter(|r| r.kind == Kind::Submit as u8)
            .collect();
        let count = |op: OpCode| ops.iter().filter(|r| r.op == op as u8).count() as u64;
        assert_eq!(count(OpCode::Write), writes);
        assert_eq!(count(OpCode::Read), writes);
        assert_eq!(count(OpCode::Stat), 1);
        assert_eq!(count(OpCode::Fsync), 1);
        assert_eq!(ops.len() as u64, 2 * writes + 2);
        // The failed open of "missing" never reached the ring.
        assert_eq!(submits.iter().map(|r| r.d0).sum::<u64>(), ops.len() as u64);
        assert!(ops.iter().all(|r| r.node == 7 && r.status == 0 && r.d0 > 0));
        let write_bytes: u64 = ops
            .iter()
            .filter(|r| r.op == OpCode::Write as u8)
            .map(|r| r.bytes)
            .sum();
        assert_eq!(write_bytes, writes * 4096);
        let offsets: Vec<u64> = ops
            .iter()
            .filter(|r| r.op == OpCode::Write as u8)
            .map(|r| r.d2)
            .collect();
        assert_eq!(offsets, (0..writes).map(|i| i * 4096).collect::<Vec<_>>());
        assert!(p.records.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    });
}
