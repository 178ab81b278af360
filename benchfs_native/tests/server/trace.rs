//! The daemon's trace: one `rpc_server` record per request.

use crate::harness::*;

#[test]
fn rpc_server_records_in_the_daemon_trace() {
    watchdog(120, || {
        let traces = TempDir::new("trace");
        let dir = traces.path().to_path_buf();
        let mut d = Daemon::start("traced", move |c| {
            c.trace_dir = Some(dir);
            c.node_id = 5;
        });
        let mut c = RawClient::connect(&d.record);
        c.write("tr", 0, 0, pattern(MIB, 1)).ok();
        c.read("tr", 0, 0, MIB as u64).ok();
        assert_eq!(c.read("none", 0, 0, 1).errno(), libc::ENOENT);
        c.ping();
        c.shutdown(false);
        let s = d.join();
        let path = s.trace_path.clone().unwrap();
        let p = parse(&std::fs::read(&path).unwrap()).unwrap();
        assert!(
            p.header_json.contains("\"process\": \"daemon\""),
            "{}",
            p.header_json
        );
        let rpc: Vec<_> = p
            .records
            .iter()
            .filter(|r| r.kind == Kind::RpcServer as u8)
            .collect();
        assert_eq!(rpc.len(), 5, "write, read, failed read, ping, shutdown");
        assert!(rpc.iter().all(|r| r.node == 5));
        let write = rpc.iter().find(|r| r.op == 1).unwrap();
        assert_eq!(write.bytes, MIB as u64);
        assert!(write.d1 > 0, "storage time of a write");
        let read = rpc.iter().find(|r| r.op == 2 && r.status == 0).unwrap();
        assert_eq!(read.bytes, MIB as u64);
        assert!(
            rpc.iter()
                .any(|r| r.op == 2 && i32::from(r.status) == libc::ENOENT)
        );
        assert!(p.records.iter().any(|r| r.kind == Kind::StorageOp as u8));
        let _ = d.data_dir;
    });
}
