//! Errors, request lifetimes and hostile uses within one process.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use benchfs_ucx::{AmMessage, Context, EndpointOptions, Error, SendOptions, Worker};
use common::*;

#[test]
fn error_names_status_and_operation() {
    let e = Error::timeout("reply from node3 (rpc read)");
    assert!(e.is_timeout());
    assert_eq!(e.errno(), libc::ETIMEDOUT);
    let s = e.to_string();
    assert!(s.contains("reply from node3 (rpc read)"), "{s}");
    assert!(s.to_lowercase().contains("timed out"), "{s}");
    let io: std::io::Error = e.into();
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
    assert_eq!(benchfs_ucx::status_name(0), "Success");
}

#[test]
fn request_wait_names_what_it_waited_for() {
    let _w = watchdog("wait_named", 60);
    let (_a, b, ep) = pair();
    let _q = queue_handler(&b, AM_DATA);
    // Rendezvous to a worker that never progresses cannot complete.
    let r = ep
        .am_send(AM_DATA, b"", vec![0u8; 1 << 20], SendOptions::rndv())
        .unwrap();
    let e = r
        .wait_named(
            Instant::now() + Duration::from_millis(200),
            "chunk 12 to node3",
        )
        .unwrap_err();
    assert!(e.is_timeout());
    assert_eq!(e.op(), "waiting for chunk 12 to node3");
}

#[test]
fn library_version_matches_headers() {
    let (maj, min, _) = Context::library_version();
    let built = benchfs_ucx::UCX_BUILD_VERSION;
    assert!(
        built.starts_with(&format!("{maj}.{min}")),
        "{built} vs {maj}.{min}"
    );
}

fn pair() -> (Worker, Worker, benchfs_ucx::Endpoint) {
    let ctx = Context::new().unwrap();
    let a = ctx.create_worker().unwrap();
    let b = ctx.create_worker().unwrap();
    let ep = a
        .connect(&b.address().unwrap(), EndpointOptions::default())
        .unwrap();
    (a, b, ep)
}

fn pump(a: &Worker, b: &Worker, until: Instant, mut done: impl FnMut() -> bool) {
    while !done() {
        assert!(Instant::now() < until, "pump deadline");
        a.progress();
        b.progress();
    }
}

#[test]
fn drop_requests_and_messages_in_flight() {
    let _w = watchdog("drop_in_flight", 60);
    let (a, b, ep) = pair();
    let got: Rc<RefCell<Vec<AmMessage>>> = Rc::default();
    let g = got.clone();
    b.set_am_handler(AM_DATA, move |m| g.borrow_mut().push(m))
        .unwrap();
    // Drop send handles at once: the operations go on, buffers stay alive.
    for i in 0..64u64 {
        let r = ep
            .am_send(
                AM_DATA,
                &i.to_le_bytes(),
                fill(i, 200_000),
                SendOptions::rndv(),
            )
            .unwrap();
        drop(r);
    }
    pump(&a, &b, deadline(30), || got.borrow().len() == 64);
    // Receive half, drop the other half unreceived (UCX completes the
    // sender), then more traffic still works.
    let msgs: Vec<AmMessage> = got.borrow_mut().drain(..).collect();
    let mut recvs = Vec::new();
    for m in msgs {
        let i = u64::from_le_bytes(m.header().try_into().unwrap());
        assert!(m.is_rndv());
        if i % 2 == 0 {
            recvs.push((
                i,
                m.recv_into(vec![0u8; 200_000].into_boxed_slice()).unwrap(),
            ));
        }
    }
    let until = deadline(30);
    pump(&a, &b, until, || recvs.iter().all(|(_, r)| r.is_done()));
    for (i, r) in recvs {
        let buf = r.try_take().unwrap().unwrap();
        assert!(buf[..] == fill(i, 200_000)[..]);
    }
    let r = ep
        .am_send(
            AM_DATA,
            &7u64.to_le_bytes(),
            vec![1u8; 10],
            SendOptions::eager(),
        )
        .unwrap();
    pump(&a, &b, until, || got.borrow().len() == 1);
    let _ = r.wait(until).unwrap();
    // A rendezvous receive whose handle is dropped before completion.
    let r = ep
        .am_send(
            AM_DATA,
            &8u64.to_le_bytes(),
            fill(8, 1 << 20),
            SendOptions::rndv(),
        )
        .unwrap();
    pump(&a, &b, until, || got.borrow().len() == 2);
    let m = got.borrow_mut().pop().unwrap();
    drop(m.recv_into(Vec::with_capacity(1 << 20)).unwrap());
    pump(&a, &b, until, || r.is_done());
    r.try_take().unwrap().unwrap();
    // Rendezvous messages kept past their callback, then dropped without
    // being received: each sender still completes.
    got.borrow_mut().clear();
    let sends: Vec<_> = (0..4u64)
        .map(|i| {
            ep.am_send(
                AM_DATA,
                &i.to_le_bytes(),
                fill(i, 300_000),
                SendOptions::rndv(),
            )
            .unwrap()
        })
        .collect();
    pump(&a, &b, until, || got.borrow().len() == 4);
    got.borrow_mut().clear();
    pump(&a, &b, until, || sends.iter().all(|r| r.is_done()));
}

#[test]
fn rendezvous_dropped_in_handler_completes_sender() {
    let _w = watchdog("rndv_dropped_in_handler", 60);
    let (a, b, ep) = pair();
    b.set_am_handler(AM_DATA, drop).unwrap();
    let r = ep
        .am_send(AM_DATA, b"x", fill(1, 1 << 20), SendOptions::rndv())
        .unwrap();
    let until = deadline(20);
    pump(&a, &b, until, || r.is_done());
    // The receiver refused the data: the sender learns it.
    let res = r.try_take().unwrap();
    assert!(res.is_err(), "sender should see the rejection");
}

#[test]
fn reply_from_inside_handler_and_not_after() {
    let _w = watchdog("reply", 60);
    let (a, b, ep) = pair();
    let kept: Rc<RefCell<Vec<AmMessage>>> = Rc::default();
    let k = kept.clone();
    b.set_am_handler(AM_DATA, move |m| {
        m.reply(
            AM_ECHO,
            m.header(),
            m.data().unwrap().to_vec(),
            SendOptions::default(),
        )
        .unwrap();
        k.borrow_mut().push(m);
    })
    .unwrap();
    let echoes = queue_handler(&a, AM_ECHO);
    let _r = ep
        .am_send(
            AM_DATA,
            b"hdr",
            b"ping".to_vec(),
            SendOptions::default().with_reply(),
        )
        .unwrap();
    pump(&a, &b, deadline(20), || !echoes.borrow().is_empty());
    let e = echoes.borrow_mut().pop_front().unwrap();
    assert_eq!(e.header(), b"hdr");
    assert_eq!(e.data().unwrap(), b"ping");
    // Outside its callback the reply endpoint is not guaranteed: refused.
    let m = kept.borrow_mut().pop().unwrap();
    let err = m
        .reply(AM_ECHO, b"", Vec::new(), SendOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");
}

#[test]
fn handler_panic_is_resumed_by_progress() {
    let _w = watchdog("handler_panic", 60);
    let (a, b, ep) = pair();
    b.set_am_handler(AM_DATA, |_m| panic!("handler failed"))
        .unwrap();
    let _r = ep
        .am_send(AM_DATA, b"", vec![0u8; 8], SendOptions::eager())
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        while Instant::now() < until {
            a.progress();
            b.progress();
        }
    }));
    assert!(
        res.is_err(),
        "the handler's panic reaches the caller of progress"
    );
}

#[test]
fn wait_without_wakeup_spins_and_times_out() {
    let ctx = Context::builder().wakeup(false).build().unwrap();
    let w = ctx.create_worker().unwrap();
    assert!(w.event_fd().is_err());
    let t = Instant::now();
    let e = w
        .wait_until(t + Duration::from_millis(100), "nothing", || false)
        .unwrap_err();
    assert!(e.is_timeout() && t.elapsed() >= Duration::from_millis(100));
}

#[test]
fn receive_buffer_too_small_is_an_error() {
    let _w = watchdog("small_buffer", 60);
    let (a, b, ep) = pair();
    let q = queue_handler(&b, AM_DATA);
    let _r = ep
        .am_send(AM_DATA, b"", vec![5u8; 1 << 20], SendOptions::rndv())
        .unwrap();
    pump(&a, &b, deadline(20), || !q.borrow().is_empty());
    let m = q.borrow_mut().pop_front().unwrap();
    let e = m.recv_into(Vec::with_capacity(10)).unwrap_err();
    assert!(e.to_string().contains("buffer of 10 bytes"), "{e}");
}

#[test]
fn rendezvous_received_inside_handler() {
    let _w = watchdog("rndv_in_handler", 60);
    let (a, b, ep) = pair();
    let recvs: Rc<RefCell<Vec<benchfs_ucx::Request<Vec<u8>>>>> = Rc::default();
    let r2 = recvs.clone();
    b.set_am_handler(AM_DATA, move |m| {
        let len = m.len();
        r2.borrow_mut()
            .push(m.recv_into(Vec::with_capacity(len)).unwrap());
    })
    .unwrap();
    let sends: Vec<_> = (0..8u64)
        .map(|i| {
            ep.am_send(AM_DATA, b"", fill(i, 3 << 20), SendOptions::rndv())
                .unwrap()
        })
        .collect();
    let until = deadline(30);
    pump(&a, &b, until, || {
        recvs.borrow().len() == 8 && recvs.borrow().iter().all(|r| r.is_done())
    });
    for (i, r) in recvs.borrow_mut().drain(..).enumerate() {
        let buf = r.wait_filled(until).unwrap();
        assert!(buf == fill(i as u64, 3 << 20), "message {i}");
    }
    pump(&a, &b, until, || sends.iter().all(|r| r.is_done()));
    for r in sends {
        r.try_take().unwrap().unwrap();
    }
}

#[test]
fn any_drop_order_is_safe() {
    let _w = watchdog("drop_order", 60);
    let (a, b, ep) = pair();
    let q = queue_handler(&b, AM_DATA);
    let send = ep
        .am_send(AM_DATA, b"h", fill(3, 1 << 20), SendOptions::rndv())
        .unwrap();
    pump(&a, &b, deadline(20), || !q.borrow().is_empty());
    let kept = q.borrow_mut().pop_front().unwrap();
    // Workers go first, then the endpoint, the in-flight send, the
    // message: each keeps what it needs alive until it is dropped.
    drop(b);
    drop(a);
    drop(q);
    drop(ep);
    drop(send);
    drop(kept);
}

#[test]
fn eager_recv_into_copies_and_reports_length() {
    let _w = watchdog("eager_recv_into", 60);
    let (a, b, ep) = pair();
    let q = queue_handler(&b, AM_DATA);
    let _r = ep
        .am_send(AM_DATA, b"", fill(5, 3000), SendOptions::eager())
        .unwrap();
    pump(&a, &b, deadline(20), || !q.borrow().is_empty());
    let m = q.borrow_mut().pop_front().unwrap();
    assert!(!m.is_rndv());
    let r = m.recv_into(Vec::with_capacity(4096)).unwrap();
    assert!(r.is_done());
    assert_eq!(r.received_len(), 3000);
    assert!(r.wait_filled(deadline(1)).unwrap() == fill(5, 3000));
}

#[test]
fn eager_copy_into_copies_without_a_request_and_leaves_rendezvous_alone() {
    let _w = watchdog("eager_copy_into", 60);
    let (a, b, ep) = pair();
    let q = queue_handler(&b, AM_DATA);
    let _e = ep
        .am_send(AM_DATA, b"", fill(6, 3000), SendOptions::eager())
        .unwrap();
    let _r = ep
        .am_send(AM_DATA, b"", fill(7, 1 << 20), SendOptions::rndv())
        .unwrap();
    pump(&a, &b, deadline(20), || q.borrow().len() == 2);
    let eager = q.borrow_mut().pop_front().unwrap();
    let mut small = Vec::with_capacity(10);
    let e = eager.copy_into(&mut small).unwrap().unwrap_err();
    assert!(e.to_string().contains("buffer of 10 bytes"), "{e}");
    let mut buf = Vec::with_capacity(4096);
    assert_eq!(eager.copy_into(&mut buf).unwrap().unwrap(), 3000);
    assert!(buf == fill(6, 3000));
    let rndv = q.borrow_mut().pop_front().unwrap();
    assert!(rndv.copy_into(&mut Vec::with_capacity(2 << 20)).is_none());
    let r = rndv.recv_into(Vec::with_capacity(1 << 20)).unwrap();
    let until = deadline(20);
    pump(&a, &b, until, || r.is_done());
    assert!(r.wait_filled(until).unwrap() == fill(7, 1 << 20));
}

#[test]
fn endpoint_dropped_inside_a_handler() {
    let _w = watchdog("ep_drop_in_handler", 60);
    let (a, b, ep) = pair();
    let back = Rc::new(RefCell::new(Some(
        b.connect(&a.address().unwrap(), EndpointOptions::default())
            .unwrap(),
    )));
    let back2 = back.clone();
    b.set_am_handler(AM_DATA, move |_m| {
        // Closing needs progress, which a handler may not call: the close
        // is handed to the worker instead of waiting here.
        drop(back2.borrow_mut().take());
    })
    .unwrap();
    let _r = ep
        .am_send(AM_DATA, b"", vec![1u8; 8], SendOptions::eager())
        .unwrap();
    pump(&a, &b, deadline(20), || back.borrow().is_none());
    let until = Instant::now() + Duration::from_millis(200);
    pump(&a, &b, deadline(20), || Instant::now() > until);
}

#[test]
fn completions_count_callbacks_not_immediate_completions() {
    let _w = watchdog("completions", 60);
    let (a, b, ep) = pair();
    let q = queue_handler(&b, AM_DATA);
    let until = deadline(20);
    // A small eager send that completes at once is not counted.
    let start = a.completions();
    let small = ep
        .am_send(AM_DATA, b"", vec![1u8; 8], SendOptions::eager())
        .unwrap();
    if small.is_done() {
        assert_eq!(a.completions(), start);
    }
    pump(&a, &b, until, || small.is_done() && q.borrow().len() == 1);
    drop(q.borrow_mut().pop_front());
    // A rendezvous send cannot finish before the receiver takes the data;
    // its callback is counted once, on the sender's worker only.
    let before = a.completions();
    let b_before = b.completions();
    let big = ep
        .am_send(AM_DATA, b"", fill(3, 1 << 20), SendOptions::rndv())
        .unwrap();
    assert!(!big.is_done());
    assert_eq!(a.completions(), before);
    pump(&a, &b, until, || !q.borrow().is_empty());
    let m = q.borrow_mut().pop_front().unwrap();
    let rx = m.recv_into(Vec::with_capacity(1 << 20)).unwrap();
    let rx_at_once = rx.is_done();
    pump(&a, &b, until, || big.is_done() && rx.is_done());
    assert_eq!(a.completions(), before + 1);
    let b_want = if rx_at_once { b_before } else { b_before + 1 };
    assert_eq!(b.completions(), b_want);
    assert!(rx.wait_filled(until).unwrap() == fill(3, 1 << 20));
    big.try_take().unwrap().unwrap();
}

#[test]
fn send_keeps_its_own_copy_of_the_header() {
    let _w = watchdog("header_copy", 60);
    let (a, b, ep) = pair();
    let q = queue_handler(&b, AM_DATA);
    let until = deadline(20);
    // The header must outlive the caller's buffer while the send is in
    // flight (a rendezvous send waits for the receiver).
    let lens = [1usize, 64, 128, 129, 1000];
    let mut sends = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        let mut h = fill(100 + i as u64, len);
        let r = ep
            .am_send(AM_DATA, &h, fill(i as u64, 1 << 20), SendOptions::rndv())
            .unwrap();
        h.iter_mut().for_each(|x| *x = !*x);
        drop(h);
        sends.push(r);
    }
    pump(&a, &b, until, || q.borrow().len() == lens.len());
    let msgs: Vec<AmMessage> = q.borrow_mut().drain(..).collect();
    for (i, (m, &len)) in msgs.into_iter().zip(&lens).enumerate() {
        assert!(
            m.header() == fill(100 + i as u64, len),
            "header of {len} bytes"
        );
        drop(m);
    }
    pump(&a, &b, until, || sends.iter().all(|r| r.is_done()));
}
