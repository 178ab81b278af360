//! Active messages between two workers: in two threads, and in two
//! processes (default transports and `UCX_TLS=tcp`), plus peer failure and
//! idle sleeping.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use benchfs_ucx::{Context, EndpointOptions, ErrorMode, SendOptions, WorkerAddress};
use common::*;

const MIB: usize = 1 << 20;

/// Entry point of the child peer process (runs only when spawned with
/// `CHILD_ENV` set).
#[test]
#[ignore = "child process entry, spawned by the other tests"]
fn child_peer() {
    if std::env::var(CHILD_ENV).is_ok() {
        child_main();
    }
}

fn mixed_sizes() -> Vec<usize> {
    let mut v: Vec<usize> = (0..200)
        .map(|i| [0, 1, 64, 512, 4096, 8000][i % 6])
        .collect();
    v.extend([MIB, 16 * MIB, 4096, MIB]);
    v
}

fn run_client_against_child(env: &[(&str, &str)], tcp_here: bool) -> (bool, String) {
    let mut b = Context::builder();
    if tcp_here {
        b = b.config("TLS", "tcp");
    }
    let ctx = b.build().unwrap();
    let worker = ctx.create_worker().unwrap();
    let mut peer = ChildPeer::spawn(&worker, env);
    let ep = worker
        .connect(&peer.address, EndpointOptions::default())
        .unwrap();
    let client = Client::new(worker, ep);
    let until = deadline(60);
    // Small eager messages, one at a time, then many in flight.
    client
        .roundtrips(&[8, 4096, 100], 1, SendOptions::eager(), until)
        .unwrap();
    client
        .roundtrips(&vec![4096; 2000], 256, SendOptions::default(), until)
        .unwrap();
    // Bulk: 1 MiB and 16 MiB by rendezvous, verified byte for byte.
    client
        .roundtrips(&[MIB, 16 * MIB], 2, SendOptions::rndv(), until)
        .unwrap();
    client
        .roundtrips(&mixed_sizes(), 32, SendOptions::default(), until)
        .unwrap();
    let shm = client.ep.uses_shared_memory();
    let info = client.ep.info();
    client.stop_peer(until).unwrap();
    peer.wait_success(&client.worker, 20);
    (shm, info)
}

#[test]
fn two_threads_eager_rendezvous_and_many_in_flight() {
    let _w = watchdog("two_threads", 90);
    let ctx = Context::new().unwrap();
    let (addr_tx, addr_rx) = mpsc::channel::<Vec<u8>>();
    let (back_tx, back_rx) = mpsc::channel::<Vec<u8>>();
    let server_ctx = ctx.clone();
    let server = std::thread::spawn(move || {
        let worker = server_ctx.create_worker().unwrap();
        addr_tx
            .send(worker.address().unwrap().as_bytes().to_vec())
            .unwrap();
        let client_addr = WorkerAddress::from_bytes(back_rx.recv().unwrap());
        let ep = worker
            .connect(&client_addr, EndpointOptions::default())
            .unwrap();
        let served = serve(&worker, &ep, deadline(80)).unwrap();
        // Started without a wait, finished by one.
        ep.start_close().wait(deadline(5)).unwrap();
        served
    });
    let worker = ctx.create_worker().unwrap();
    back_tx
        .send(worker.address().unwrap().as_bytes().to_vec())
        .unwrap();
    let peer = WorkerAddress::from_bytes(addr_rx.recv().unwrap());
    let ep = worker.connect(&peer, EndpointOptions::default()).unwrap();
    let client = Client::new(worker, ep);
    let until = deadline(80);
    client
        .roundtrips(&[0, 1, 64, 4096], 1, SendOptions::eager(), until)
        .unwrap();
    client
        .roundtrips(&vec![4096; 1000], 128, SendOptions::default(), until)
        .unwrap();
    client
        .roundtrips(&[MIB, 16 * MIB], 2, SendOptions::rndv(), until)
        .unwrap();
    client
        .roundtrips(&mixed_sizes(), 16, SendOptions::default(), until)
        .unwrap();
    client.stop_peer(until).unwrap();
    let served = server.join().unwrap();
    assert_eq!(served, 4 + 1000 + 2 + mixed_sizes().len() as u64);
}

#[test]
fn two_processes_default_transports() {
    let _w = watchdog("two_processes_default", 100);
    let (shm, info) = run_client_against_child(&[], false);
    assert!(
        shm,
        "default transports on one host should use shared memory:\n{info}"
    );
}

#[test]
fn two_processes_tcp() {
    let _w = watchdog("two_processes_tcp", 100);
    let (shm, info) = run_client_against_child(&[("UCX_TLS", "tcp")], true);
    assert!(!shm, "UCX_TLS=tcp must not use shared memory:\n{info}");
    assert!(info.contains("tcp/"), "expected tcp lanes:\n{info}");
}

/// Kill the peer after a first exchange; the next round trip must fail
/// within its deadline, not hang.
fn dead_peer(
    mode: ErrorMode,
    env: &[(&str, &str)],
    tcp_here: bool,
) -> (benchfs_ucx::Error, Duration) {
    let mut b = Context::builder();
    if tcp_here {
        b = b.config("TLS", "tcp");
    }
    let ctx = b.build().unwrap();
    let worker = ctx.create_worker().unwrap();
    let mut peer = ChildPeer::spawn(&worker, env);
    let ep = worker
        .connect(&peer.address, EndpointOptions::with_error_mode(mode))
        .unwrap();
    let client = Client::new(worker, ep);
    client
        .roundtrips(&[64, MIB], 1, SendOptions::default(), deadline(30))
        .unwrap();
    peer.kill();
    let start = Instant::now();
    let until = start + Duration::from_secs(3);
    let err = client
        .roundtrips(&[4096, MIB], 2, SendOptions::default(), until)
        .expect_err("round trip to a killed peer succeeded");
    let elapsed = start.elapsed();
    eprintln!("dead peer ({mode:?}, {env:?}): {err} after {elapsed:?}");
    (err, elapsed)
}

#[test]
fn dead_peer_deadline_mode_gives_timeout() {
    let _w = watchdog("dead_peer_deadline", 60);
    let (err, elapsed) = dead_peer(ErrorMode::Deadline, &[], false);
    assert!(err.is_timeout() || err.is_peer_failure(), "{err}");
    assert!(elapsed < Duration::from_secs(6), "took {elapsed:?}: {err}");
    assert!(
        err.to_string().contains("echo of an AM_DATA message") || err.is_peer_failure(),
        "{err}"
    );
}

#[test]
fn dead_peer_deadline_mode_tcp_gives_error() {
    let _w = watchdog("dead_peer_deadline_tcp", 60);
    let (err, elapsed) = dead_peer(ErrorMode::Deadline, &[("UCX_TLS", "tcp")], true);
    assert!(err.is_timeout() || err.is_peer_failure(), "{err}");
    assert!(elapsed < Duration::from_secs(6), "took {elapsed:?}: {err}");
}

#[test]
fn dead_peer_peer_mode_tcp_gives_peer_failure() {
    let _w = watchdog("dead_peer_peer_mode", 60);
    let env = [("UCX_TLS", "tcp"), ("BENCHFS_UCX_TEST_ERRMODE", "peer")];
    let (err, elapsed) = dead_peer(ErrorMode::Peer, &env, true);
    assert!(err.is_peer_failure(), "expected a peer failure, got {err}");
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}: {err}");
}

#[test]
fn peer_mode_on_one_host_loses_shared_memory() {
    let _w = watchdog("peer_mode_shm", 60);
    let ctx = Context::new().unwrap();
    let a = ctx.create_worker().unwrap();
    let b = ctx.create_worker().unwrap();
    let b_addr = b.address().unwrap();
    let none = a
        .connect(
            &b_addr,
            EndpointOptions::with_error_mode(ErrorMode::Deadline),
        )
        .unwrap();
    let peer = a
        .connect(&b_addr, EndpointOptions::with_error_mode(ErrorMode::Peer))
        .unwrap();
    // Wire-up completes as both workers progress.
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        a.progress();
        b.progress();
    }
    eprintln!("ErrorMode::Deadline:\n{}", none.info());
    eprintln!("ErrorMode::Peer:\n{}", peer.info());
    assert!(none.uses_shared_memory(), "{}", none.info());
    assert!(!peer.uses_shared_memory(), "{}", peer.info());
}

fn thread_cpu_time() -> Duration {
    // Safety: rusage is plain integers, for which all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // Safety: valid out-pointer.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    assert_eq!(r, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn spin_setting_reads_back() {
    let ctx = Context::new().unwrap();
    let worker = ctx.create_worker().unwrap();
    assert_eq!(
        worker.spin_iterations(),
        benchfs_ucx::DEFAULT_SPIN_ITERATIONS
    );
    worker.set_spin_iterations(200);
    assert_eq!(worker.spin_iterations(), 200);
    assert_eq!(worker.spin_yield(), 0, "a wait yields only when asked");
    worker.set_spin_yield(64);
    assert_eq!(worker.spin_yield(), 64);
}

#[test]
fn idle_worker_sleeps_on_event_fd() {
    let _w = watchdog("idle_sleep", 60);
    let ctx = Context::new().unwrap();
    let (addr_tx, addr_rx) = mpsc::channel::<Vec<u8>>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let sender = std::thread::spawn(move || {
        let ctx = Context::new().unwrap();
        let w = ctx.create_worker().unwrap();
        let peer = WorkerAddress::from_bytes(addr_rx.recv().unwrap());
        let ep = w.connect(&peer, EndpointOptions::default()).unwrap();
        go_rx.recv().unwrap();
        ep.am_send(AM_DATA, b"wake", b"up".to_vec(), SendOptions::default())
            .unwrap()
            .wait(deadline(10))
            .unwrap();
        ep.flush(deadline(10)).unwrap();
        // A close started without a wait finishes as the worker is progressed.
        let mut closing = ep.start_close();
        let until = deadline(10);
        let closed = loop {
            if let Some(outcome) = closing.poll() {
                break outcome;
            }
            assert!(Instant::now() < until, "the close did not finish");
            w.progress();
        };
        closed.unwrap();
    });
    let worker = ctx.create_worker().unwrap();
    let q = queue_handler(&worker, AM_DATA);
    addr_tx
        .send(worker.address().unwrap().as_bytes().to_vec())
        .unwrap();
    assert!(worker.event_fd().unwrap() >= 0);

    // An idle second: the wait sleeps on the event fd instead of spinning.
    let cpu0 = thread_cpu_time();
    let err = worker
        .wait_until(
            Instant::now() + Duration::from_secs(1),
            "an idle second",
            || false,
        )
        .unwrap_err();
    let cpu = thread_cpu_time() - cpu0;
    assert!(err.is_timeout(), "{err}");
    assert!(err.to_string().contains("an idle second"), "{err}");
    assert!(
        cpu < Duration::from_millis(150),
        "idle wait used {cpu:?} of CPU"
    );

    // A message wakes the sleeping wait long before its deadline.
    go_tx.send(()).unwrap();
    let cpu0 = thread_cpu_time();
    worker
        .wait_until(deadline(20), "the wake-up message", || {
            !q.borrow().is_empty()
        })
        .unwrap();
    let m = q.borrow_mut().pop_front().unwrap();
    assert_eq!(m.header(), b"wake");
    assert_eq!(m.data().unwrap(), b"up");
    drop(m);
    // Keep progressing so the sender's close completes.
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        worker.progress_or_sleep(Duration::from_millis(10)).unwrap();
    }
    sender.join().unwrap();
    let _ = cpu0;
}

/// A peer killed between announcing a rendezvous message and its copy: the
/// copy (cma's `process_vm_readv` on the dead pid) fails the receive
/// instead of aborting this process, and the lanes stay shared memory.
#[test]
fn peer_dead_before_its_data_is_copied_fails_the_receive() {
    let _w = watchdog("dead_mid_copy", 90);
    benchfs_ucx::survive_dead_peers();
    let before = benchfs_ucx::dead_peer_copies();
    let ctx = Context::new().unwrap();
    let worker = ctx.create_worker().unwrap();
    let echoes = queue_handler(&worker, AM_ECHO);
    let mut peer = ChildPeer::spawn(&worker, &[]);
    let ep = worker
        .connect(&peer.address, EndpointOptions::default())
        .unwrap();
    let body = fill(7, MIB);
    let send = ep
        .am_send(AM_DATA, &header(1, MIB, 7), body, SendOptions::rndv())
        .unwrap();
    // The echo's announcement arrives; its data stays in the peer.
    worker
        .wait_until(deadline(30), "the echo's announcement", || {
            !echoes.borrow().is_empty()
        })
        .unwrap();
    drop(send);
    let msg = echoes.borrow_mut().pop_front().unwrap();
    assert!(msg.is_rndv(), "a 1 MiB echo goes by rendezvous");
    assert!(ep.uses_shared_memory(), "{}", ep.info());
    assert!(ep.info().contains("cma/"), "{}", ep.info());
    peer.kill();
    let err = msg
        .recv_into(vec![0u8; MIB])
        .and_then(|r| r.wait_filled(deadline(10)))
        .expect_err("received data from a dead process");
    eprintln!("receive from the dead peer: {err}");
    assert_eq!(benchfs_ucx::dead_peer_copies(), before + 1, "{err}");
}
