//! Engine invariants: lifetime of buffers across shutdown, queue and pool
//! overflow, direct/buffered choice, ENOSPC, path checks and the trace.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;

mod files;
mod queues;
mod started;
mod trace;
