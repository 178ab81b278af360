//! Shared pieces of the integration tests: an echo peer (in a thread or a
//! child process), a client that verifies echoes byte for byte, and a
//! watchdog that fails a hung test.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use benchfs_ucx::{
    AmMessage, Context, Endpoint, EndpointOptions, ErrorMode, Request, Result, SendOptions, Worker,
    WorkerAddress,
};

pub const AM_DATA: u16 = 1;
pub const AM_ECHO: u16 = 2;
pub const AM_STOP: u16 = 3;

/// Env var that turns the test binary into a child peer.
pub const CHILD_ENV: &str = "BENCHFS_UCX_TEST_CHILD";

/// Aborts the whole test process if not dropped within `secs`: a hang
/// becomes a failure with a message instead of a stuck CI run.
pub struct Watchdog {
    tx: Option<mpsc::Sender<()>>,
}

pub fn watchdog(name: &'static str, secs: u64) -> Watchdog {
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(secs)) {
            eprintln!("watchdog: test {name} still running after {secs} s, aborting");
            std::process::abort();
        }
    });
    Watchdog { tx: Some(tx) }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(());
        }
    }
}

pub fn deadline(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

/// Deterministic bytes for (seed, len).
pub fn fill(seed: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while v.len() + 8 <= len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    while v.len() < len {
        v.push((v.len() as u8).wrapping_mul(31));
    }
    v
}

pub fn header(seq: u64, len: usize, seed: u64) -> [u8; 24] {
    let mut h = [0u8; 24];
    h[..8].copy_from_slice(&seq.to_le_bytes());
    h[8..16].copy_from_slice(&(len as u64).to_le_bytes());
    h[16..].copy_from_slice(&seed.to_le_bytes());
    h
}

pub fn parse_header(h: &[u8]) -> (u64, usize, u64) {
    let seq = u64::from_le_bytes(h[..8].try_into().unwrap());
    let len = u64::from_le_bytes(h[8..16].try_into().unwrap()) as usize;
    let seed = u64::from_le_bytes(h[16..24].try_into().unwrap());
    (seq, len, seed)
}

pub type Queue = Rc<RefCell<VecDeque<AmMessage>>>;

pub fn queue_handler(worker: &Worker, id: u16) -> Queue {
    let q: Queue = Rc::new(RefCell::new(VecDeque::new()));
    let q2 = q.clone();
    worker
        .set_am_handler(id, move |m| q2.borrow_mut().push_back(m))
        .unwrap();
    q
}

/// Payload of a message, received into a fresh buffer if rendezvous.
pub fn payload(m: AmMessage, deadline: Instant) -> Result<Vec<u8>> {
    if m.is_rndv() {
        let len = m.len();
        m.recv_into(Vec::with_capacity(len))?.wait_filled(deadline)
    } else {
        Ok(m.data().unwrap().to_vec())
    }
}

/// Echo peer: every AM_DATA message comes back as AM_ECHO with the same
/// header and payload, until AM_STOP or `deadline`.
pub fn serve(worker: &Worker, ep: &Endpoint, deadline: Instant) -> Result<u64> {
    let data = queue_handler(worker, AM_DATA);
    let stop = queue_handler(worker, AM_STOP);
    let mut sends: Vec<Request<Vec<u8>>> = Vec::new();
    let mut served = 0u64;
    while stop.borrow().is_empty() {
        if Instant::now() > deadline {
            return Err(benchfs_ucx::Error::timeout("echo peer: AM_STOP"));
        }
        worker.progress_or_sleep(Duration::from_millis(100))?;
        loop {
            let Some(m) = data.borrow_mut().pop_front() else {
                break;
            };
            let h = m.header().to_vec();
            let body = payload(m, deadline)?;
            sends.push(ep.am_send(AM_ECHO, &h, body, SendOptions::default())?);
            served += 1;
        }
        let mut still = Vec::with_capacity(sends.len());
        for r in sends.drain(..) {
            match r.try_take() {
                Ok(res) => {
                    res?;
                }
                Err(r) => still.push(r),
            }
        }
        sends = still;
    }
    for r in sends {
        r.wait(deadline)?;
    }
    ep.flush(deadline)?;
    Ok(served)
}

/// Client side: a worker, an endpoint to the echo peer and the queue of
/// echoes.
pub struct Client {
    pub worker: Worker,
    pub ep: Endpoint,
    pub echoes: Queue,
}

impl Client {
    pub fn new(worker: Worker, ep: Endpoint) -> Client {
        let echoes = queue_handler(&worker, AM_ECHO);
        Client { worker, ep, echoes }
    }

    /// Send one message per size, at most `max_in_flight` unanswered at a
    /// time, and verify every echo byte for byte.
    pub fn roundtrips(
        &self,
        sizes: &[usize],
        max_in_flight: usize,
        opts: SendOptions,
        until: Instant,
    ) -> Result<()> {
        let mut next = 0usize;
        let mut outstanding = 0usize;
        let mut received = 0usize;
        let mut seen = vec![false; sizes.len()];
        let mut sends: VecDeque<Request<Vec<u8>>> = VecDeque::new();
        while received < sizes.len() {
            while next < sizes.len() && outstanding < max_in_flight {
                let len = sizes[next];
                let seed = 1000 + next as u64;
                let r = self.ep.am_send(
                    AM_DATA,
                    &header(next as u64, len, seed),
                    fill(seed, len),
                    opts,
                )?;
                sends.push_back(r);
                next += 1;
                outstanding += 1;
            }
            while let Some(r) = sends.pop_front() {
                match r.try_take() {
                    Ok(res) => {
                        res?;
                    }
                    Err(r) => {
                        sends.push_front(r);
                        break;
                    }
                }
            }
            let echoes = &self.echoes;
            let ep = &self.ep;
            self.worker
                .wait_until(until, "echo of an AM_DATA message", || {
                    !echoes.borrow().is_empty() || ep.failure().is_some()
                })?;
            if let Some(e) = self.ep.failure() {
                return Err(e);
            }
            loop {
                let Some(m) = self.echoes.borrow_mut().pop_front() else {
                    break;
                };
                let (seq, len, seed) = parse_header(m.header());
                assert_eq!(m.len(), len, "echo {seq}: length");
                let got = payload(m, until)?;
                assert!(
                    got == fill(seed, len),
                    "echo {seq}: payload of {len} bytes differs"
                );
                assert!(!seen[seq as usize], "echo {seq} twice");
                seen[seq as usize] = true;
                received += 1;
                outstanding -= 1;
            }
        }
        for r in sends {
            r.wait(until)?;
        }
        Ok(())
    }

    pub fn stop_peer(&self, until: Instant) -> Result<()> {
        self.ep
            .am_send(AM_STOP, &[], Vec::new(), SendOptions::default())?
            .wait(until)?;
        Ok(())
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// A child process running the echo peer (the test binary itself, with
/// `CHILD_ENV` set), connected both ways to `worker`.
pub struct ChildPeer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    pub address: WorkerAddress,
}

impl ChildPeer {
    pub fn spawn(worker: &Worker, env: &[(&str, &str)]) -> ChildPeer {
        let exe = std::env::current_exe().unwrap();
        let mut cmd = Command::new(exe);
        cmd.args([
            "--exact",
            "child_peer",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "echo")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn child peer");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(pos) = line.find("ADDR ") {
                    let _ = tx.send(line[pos + 5..].trim().to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("child peer published its worker address");
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "ADDR {}", hex(worker.address().unwrap().as_bytes())).unwrap();
        stdin.flush().unwrap();
        ChildPeer {
            child,
            stdin: Some(stdin),
            address: WorkerAddress::from_bytes(unhex(&addr)),
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Wait for the child to exit successfully, progressing `worker`
    /// meanwhile (the child's close may need this side to answer).
    pub fn wait_success(&mut self, worker: &Worker, secs: u64) {
        let until = deadline(secs);
        loop {
            worker.progress_or_sleep(Duration::from_millis(10)).unwrap();
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(st.success(), "child peer exited with {st}");
                return;
            }
            assert!(
                Instant::now() < until,
                "child peer did not exit within {secs} s"
            );
        }
    }
}

impl Drop for ChildPeer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if self.child.try_wait().ok().flatten().is_none() {
            self.kill();
        }
    }
}

/// Body of the child process: publish the address, read the parent's,
/// connect back and echo until told to stop.
pub fn child_main() {
    let mode = match std::env::var("BENCHFS_UCX_TEST_ERRMODE").as_deref() {
        Ok("peer") => ErrorMode::Peer,
        _ => ErrorMode::Deadline,
    };
    let ctx = Context::new().unwrap();
    let worker = ctx.create_worker().unwrap();
    println!("\nADDR {}", hex(worker.address().unwrap().as_bytes()));
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let parent = WorkerAddress::from_bytes(unhex(line.trim().strip_prefix("ADDR ").unwrap()));
    let ep = worker
        .connect(&parent, EndpointOptions::with_error_mode(mode))
        .unwrap();
    serve(&worker, &ep, deadline(90)).unwrap();
    ep.close(deadline(5)).unwrap();
}
