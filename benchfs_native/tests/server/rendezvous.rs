//! Requests posted together whose data comes by rendezvous (the window
//! `bench rpc`'s 1 MiB case keeps in flight): each is answered once, and
//! a write's data lands whole.

use crate::harness::*;

const WINDOW: u64 = 8;

#[test]
fn a_window_of_rendezvous_requests() {
    watchdog(120, || {
        let mut d = Daemon::start("rndv-window", |cfg| cfg.max_concurrency = 8);
        let mut c = RawClient::connect(&d.record);
        let ping = Request::Ping {
            len: MIB as u64,
            echo: false,
        };
        let mut posted: Vec<u64> = (0..WINDOW)
            .map(|i| c.post(&ping, pattern(MIB, i)))
            .collect();
        let mut answered: Vec<u64> = (0..WINDOW)
            .map(|_| {
                let got = c.recv();
                assert!(
                    matches!(got.ok(), Reply::Ping { len: 0, .. }),
                    "a one-way ping is answered without its payload"
                );
                got.request_id()
            })
            .collect();
        posted.sort_unstable();
        answered.sort_unstable();
        assert_eq!(answered, posted, "every ping answered once");
        let stats = c.stats();
        assert_eq!(stats["bytes_in"], WINDOW * MIB as u64, "{stats}");

        let writes: Vec<(u64, Vec<u8>)> = (0..WINDOW)
            .map(|i| {
                let data = pattern(MIB, 100 + i);
                let id = c.post(
                    &Request::Write {
                        path: "rndv/file",
                        chunk: i,
                        offset: 0,
                        len: MIB as u64,
                        sync: false,
                    },
                    data.clone(),
                );
                (id, data)
            })
            .collect();
        for _ in 0..WINDOW {
            let got = c.recv();
            assert!(writes.iter().any(|(id, _)| *id == got.request_id()));
            match got.ok() {
                Reply::Write { written } => assert_eq!(written, MIB as u64),
                r => panic!("{r:?}"),
            }
        }
        for (i, (_, data)) in writes.iter().enumerate() {
            let got = c.read("rndv/file", i as u64, 0, MIB as u64);
            assert!(got.payload == *data, "chunk {i} differs from its write");
        }
        c.shutdown(false);
        let summary = d.join();
        assert!(summary.drained);
        assert_eq!(summary.requests["ping"], WINDOW);
    });
}
