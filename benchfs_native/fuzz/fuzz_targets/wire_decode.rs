//! Any bytes as a request or reply header, and as a readdir payload: the
//! decoders never panic, and what decodes encodes back to the same bytes.
#![no_main]

use benchfs_native::rpc::wire::{
    Limits, Message, Route, decode, decode_dir_entries, encode_reply, encode_request,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    if let Ok((h, m)) = decode(data, &limits) {
        let mut back = Vec::new();
        let route = Route::from(&h);
        let encoded = match m {
            Message::Request(r) => encode_request(&mut back, route, &r),
            Message::Reply(r) => encode_reply(&mut back, route, &r),
        };
        assert!(encoded.is_ok() && back == data, "not canonical");
    }
    let _ = decode_dir_entries(data, u32::from(data.first().copied().unwrap_or(0)), &limits);
});
