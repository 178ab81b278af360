//! The session decoder against hostile bytes (what any local process can
//! send a daemon before it holds a session): random bytes, and valid
//! messages of every kind cut, extended and with bytes flipped, never panic
//! the decoder; a decoded message encodes back to the same bytes; a connect
//! whose bytes were changed never verifies under the session key.

use benchfs_native::rpc::session::{self, NONCE_LEN, Session};
use benchfs_native::rpc::session_key::{SessionKey, TAG_LEN};
use proptest::prelude::*;

/// Cases per property: 2000, or `WIRE_FUZZ_CASES`.
fn fuzz_cases() -> u32 {
    std::env::var("WIRE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn key() -> SessionKey {
    SessionKey::from_hex(&"5a".repeat(32), "test").unwrap()
}

fn session() -> impl Strategy<Value = Vec<u8>> {
    let name = "[a-z0-9/.-]{0,40}";
    prop_oneof![
        (
            any::<u64>(),
            name,
            prop::collection::vec(any::<u8>(), 1..200),
            any::<u64>(),
            any::<[u8; NONCE_LEN]>(),
        )
            .prop_map(|(client_id, n, address, time, nonce)| {
                let mut m = session::encode(&Session::Connect {
                    client_id,
                    client_name: &n,
                    address: &address,
                    time_unix_ns: time,
                    nonce,
                    tag: [0; TAG_LEN],
                });
                session::sign_connect(&mut m, Some(&key()), "node0");
                m
            }),
        (
            any::<u64>(),
            1..=u16::MAX,
            any::<u32>(),
            any::<u64>(),
            name,
            any::<u64>()
        )
            .prop_map(|(client_id, channel, node_id, chunk_size, n, token)| {
                session::encode(&Session::Accept {
                    client_id,
                    channel,
                    status: 0,
                    node_id,
                    chunk_size,
                    node_name: &n,
                    token,
                })
            }),
        (any::<u64>(), any::<u16>(), any::<u64>()).prop_map(|(client_id, channel, token)| {
            session::encode(&Session::Disconnect {
                client_id,
                channel,
                token,
            })
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases()))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(m) = session::decode(&bytes) {
            prop_assert_eq!(session::encode(&m), bytes);
        }
    }

    #[test]
    fn valid_messages_round_trip_and_mutations_never_panic(
        msg in session(),
        flip in (any::<prop::sample::Index>(), 1..=255u8),
        cut in any::<prop::sample::Index>(),
        extra in prop::collection::vec(any::<u8>(), 1..8),
    ) {
        let m = session::decode(&msg).unwrap();
        prop_assert_eq!(&session::encode(&m), &msg);
        if let Session::Connect { .. } = m {
            prop_assert!(session::connect_tag_valid(&msg, &key(), "node0"));
        }
        let mut flipped = msg.clone();
        let at = flip.0.index(flipped.len());
        flipped[at] ^= flip.1;
        if let Ok(Session::Connect { .. }) = session::decode(&flipped) {
            prop_assert!(!session::connect_tag_valid(&flipped, &key(), "node0"));
        }
        prop_assert!(session::decode(&msg[..cut.index(msg.len())]).is_err());
        let mut longer = msg.clone();
        longer.extend_from_slice(&extra);
        prop_assert!(session::decode(&longer).is_err());
    }
}
