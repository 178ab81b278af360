//! Any bytes as a session message (what a local process can send a daemon
//! before it holds a session): the decoder never panics, and what decodes
//! encodes back to the same bytes.
#![no_main]

use benchfs_native::rpc::session;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = session::decode(data) {
        assert_eq!(session::encode(&m), data, "not canonical");
    }
});
