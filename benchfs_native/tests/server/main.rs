//! The RPC server end to end: a daemon on a thread (real store, real UCX,
//! real registry directory) and a raw client built only from benchfs_ucx,
//! rpc::session and rpc::wire.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

#[path = "../common/mod.rs"]
mod common;
mod harness;

mod in_loop;
mod lifecycle;
mod links_and_devices;
mod live_fuzz;
mod load;
mod malformed;
mod on_ring;
mod ops;
mod rename_inserts;
mod rendezvous;
mod shared_attrs;
mod trace;
mod truncate_opens;
mod trust;
