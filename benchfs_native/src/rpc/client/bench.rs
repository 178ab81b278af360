//! The RPC layer alone, measured as `ucx_perftest` measures UCX: pings
//! that carry a payload (no storage on the daemon). One outstanding echoed
//! ping is a round trip (`ucp_am_lat` reports half of one); a window of
//! one-way pings is bandwidth (`ucp_am_bw`).

use std::time::{Duration, Instant};

use super::Client;
use super::buf::SharedBuf;
use super::inflight::Call;
use crate::error::{Error, Result};
use crate::latency::{LatencySummary, summarize};
use crate::rpc::wire::Request;

/// What [`Client::bench_ping`] measured.
#[derive(Debug, Clone)]
pub struct PingBench {
    /// Payload bytes per ping.
    pub size: usize,
    /// Timed pings (after the warm-up).
    pub iterations: u64,
    /// Pings outstanding at once.
    pub window: usize,
    /// Whether the daemon sent the payload back.
    pub echo: bool,
    /// Issue to completion of each timed ping.
    pub latency: LatencySummary,
    /// Wall time of the timed pings.
    pub elapsed: Duration,
}

impl PingBench {
    /// Payload MiB per second (one way) over the timed pings.
    pub fn mib_per_s(&self) -> f64 {
        let bytes = self.size as f64 * self.iterations as f64;
        bytes / self.elapsed.as_secs_f64().max(1e-9) / (1024.0 * 1024.0)
    }
}

impl Client {
    /// `warmup` then `iterations` pings of `size` payload bytes to `node`,
    /// at most `window` outstanding (bounded by the client's
    /// `max_in_flight`); with `echo` the daemon sends the payload back.
    pub fn bench_ping(
        &mut self,
        node: u32,
        size: usize,
        iterations: u64,
        warmup: u64,
        echo: bool,
        window: usize,
    ) -> Result<PingBench> {
        self.check_node(node, "ping")?;
        if iterations == 0 {
            return Err(Error::invalid("iterations", "must be at least 1"));
        }
        let window = window.clamp(1, self.window.max_in_flight());
        let request = Request::Ping {
            len: size as u64,
            echo,
        };
        // Allocated as a phase's transfer buffers are (huge pages from 1 MiB).
        let mut payload = one_transfer_buffer(size);
        if let Some(bytes) = payload.bytes_mut() {
            bytes.fill(0xa5);
        }
        let mut echoed = one_transfer_buffer(if echo { size } else { 0 });
        let total = warmup + iterations;
        let mut issued_at = vec![Instant::now(); window];
        let mut free_slots: Vec<u64> = (0..window as u64).collect();
        let mut samples = Vec::with_capacity(usize::try_from(iterations).unwrap_or(0));
        let (mut issued, mut finished) = (0u64, 0u64);
        let mut started = Instant::now();
        while finished < total {
            while issued < total
                && let Some(slot) = free_slots.pop()
            {
                let mut call = Call::new(&self.conn, node, &request, slot)?
                    .with_payload(payload.piece(0, size));
                if echo {
                    // One echo at a time in latency runs; a shared scratch
                    // buffer is enough for the rest.
                    call = call.with_dest(echoed.piece(0, size));
                }
                if issued == warmup {
                    started = Instant::now();
                }
                let now = Instant::now();
                issued_at[slot as usize] = now;
                self.window.submit_at(&self.conn, call, now);
                issued += 1;
            }
            let Some(outcome) = self.window.next(&self.conn, None)? else {
                return Err(Error::invalid("window", "no ping outstanding"));
            };
            outcome.result?;
            let slot = outcome.tag;
            if finished >= warmup {
                let t = issued_at[slot as usize].elapsed();
                samples.push(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX));
            }
            free_slots.push(slot);
            finished += 1;
        }
        let elapsed = started.elapsed();
        self.window.flush_trace();
        Ok(PingBench {
            size,
            iterations,
            window,
            echo,
            latency: summarize(&samples),
            elapsed,
        })
    }
}

fn one_transfer_buffer(len: usize) -> SharedBuf {
    SharedBuf::transfer_set(1, len)
        .pop()
        .unwrap_or_else(|| SharedBuf::zeroed(len))
}
