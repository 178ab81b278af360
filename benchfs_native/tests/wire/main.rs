//! The RPC wire format: round trips of every message, precise decode errors,
//! and a fuzz-style property test that hostile bytes never panic the decoder
//! nor make it allocate beyond its limits; the same for session messages.

#![allow(
    clippy::unwrap_used,
    reason = "shared test code outside #[test] functions"
)]

mod errors;
mod layout;
mod links;
mod properties;
mod session;
mod strategies;
