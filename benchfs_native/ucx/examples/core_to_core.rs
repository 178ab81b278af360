//! Cache-line round trip between two CPUs: two threads, pinned one per
//! CPU, pass a counter back and forth through one atomic. It is the floor
//! under every shared-memory round trip (a 4 KiB active message moves
//! about 70 cache lines each way) and shows where the host has placed the
//! two virtual CPUs at the moment.
//!
//! ```text
//! cargo run --release --example core_to_core -- [--cpus 0,1] [--iters 200000]
//! ```
//! Prints `c2c cpus=A,B iters=N rtt_p50_ns=.. rtt_p10_ns=.. rtt_p90_ns=..`
//! (medians of batches of 1000 round trips).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const BATCH: u64 = 1000;

fn pin(cpu: usize) {
    // Safety: a zeroed cpu_set_t is a valid empty set; CPU_SET stays in
    // bounds for cpu < CPU_SETSIZE, which the kernel call then checks.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    assert!(
        ok,
        "cannot pin to CPU {cpu}: {}",
        std::io::Error::last_os_error()
    );
}

fn main() {
    let mut cpus = (0usize, 1usize);
    let mut iters: u64 = 200_000;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--cpus" => {
                let (a, b) = v.split_once(',').expect("--cpus A,B");
                cpus = (a.parse().expect("CPU"), b.parse().expect("CPU"));
            }
            "--iters" => iters = v.parse().expect("--iters N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let iters = iters.div_ceil(BATCH) * BATCH;
    let line = Arc::new(AtomicU64::new(0));
    let peer_line = line.clone();
    let peer = std::thread::spawn(move || {
        pin(cpus.1);
        // Answer every odd value with the next even one.
        let mut want = 1;
        while want < 2 * iters {
            while peer_line.load(Ordering::Acquire) != want {
                std::hint::spin_loop();
            }
            peer_line.store(want + 1, Ordering::Release);
            want += 2;
        }
    });
    pin(cpus.0);
    let mut batches = Vec::with_capacity((iters / BATCH) as usize);
    let mut v = 0;
    for _ in 0..iters / BATCH {
        let t = Instant::now();
        for _ in 0..BATCH {
            line.store(v + 1, Ordering::Release);
            while line.load(Ordering::Acquire) != v + 2 {
                std::hint::spin_loop();
            }
            v += 2;
        }
        batches.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
    }
    peer.join().expect("peer thread");
    batches.sort_by(f64::total_cmp);
    let at = |p: f64| batches[((batches.len() - 1) as f64 * p).round() as usize];
    println!(
        "c2c cpus={},{} iters={iters} rtt_p50_ns={:.1} rtt_p10_ns={:.1} rtt_p90_ns={:.1}",
        cpus.0,
        cpus.1,
        at(0.5),
        at(0.1),
        at(0.9)
    );
}
