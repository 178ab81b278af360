//! Requests started without waiting: answered on their channel (waking
//! it when parked), in registered buffers, a synced write followed by its
//! fsync.

use benchfs_native::Error;
use benchfs_native::storage::store::{Completions, Finished, ReadAnswer};
use benchfs_native::sys::poll::readable_now;

use crate::common::{TempDir, pattern, small_store, watchdog};

fn next_finished(to: &Completions) -> Finished {
    loop {
        if let Some(f) = to.try_take() {
            return f;
        }
        std::thread::yield_now();
    }
}

#[test]
fn started_requests_answer_on_their_channel_and_wake_it_when_parked() {
    watchdog(60, || {
        let dir = TempDir::new("started");
        let s = small_store(dir.path(), |o| o.pool_buffers = 2);
        let to = Completions::new().unwrap();
        let data = pattern(3000, 5);
        // Parked: the driver thread writes the eventfd after the result.
        to.wake().park();
        s.start_write("a", 100, data.clone(), false, 7, &to)
            .unwrap();
        while !readable_now(to.wake().raw()) {
            std::thread::yield_now();
        }
        let f = to.try_take().expect("a result before the wake-up");
        to.wake().unpark();
        assert!(!readable_now(to.wake().raw()), "unpark drains the eventfd");
        assert_eq!((f.tag, f.result.unwrap()), (7, 3000));
        assert_eq!(f.buf, data, "a write's data comes back as given");
        // Awake: no wake-up, the result is on the channel. A read past the
        // end of the file comes back short.
        s.start_read("a", 100, 4000, Vec::new(), ReadAnswer::Copied, 8, &to)
            .unwrap();
        let f = next_finished(&to);
        assert_eq!((f.tag, f.result.unwrap()), (8, 3000));
        assert_eq!(f.buf, data);
        assert!(!readable_now(to.wake().raw()));
        // Errors as the blocking call words them.
        s.start_read("none", 0, 10, Vec::new(), ReadAnswer::Copied, 9, &to)
            .unwrap();
        let f = next_finished(&to);
        match f.result {
            Err(Error::Os { errno, op, path }) => {
                assert_eq!((errno, op, path.as_str()), (libc::ENOENT, "read", "none"));
            }
            r => panic!("{r:?}"),
        }
        // Not started, the data given back whole: more than one buffer,
        // across a chunk border, empty, a bad path.
        let five = pattern(5000, 6);
        assert_eq!(
            s.start_write("b", 0, five.clone(), false, 1, &to),
            Err(five)
        );
        let two = pattern(200, 7);
        let border = 16 * 1024 - 100;
        assert_eq!(
            s.start_write("b", border, two.clone(), false, 1, &to),
            Err(two)
        );
        assert_eq!(
            s.start_write("b", 0, Vec::new(), false, 1, &to),
            Err(Vec::new())
        );
        assert!(
            s.start_read("../x", 0, 10, Vec::new(), ReadAnswer::Copied, 1, &to)
                .is_err()
        );
        assert!(
            s.start_read("b", 0, 5000, Vec::new(), ReadAnswer::Copied, 1, &to)
                .is_err()
        );
        let st = s.stats();
        assert_eq!(st.pool_free, st.pool_buffers, "every buffer returned");
        // A closed store starts nothing.
        s.close().unwrap();
        let one = pattern(100, 8);
        assert_eq!(s.start_write("a", 0, one.clone(), false, 1, &to), Err(one));
        assert!(to.try_take().is_none(), "nothing answered twice");
    });
}

#[test]
fn started_requests_in_registered_buffers_move_no_bytes_through_the_caller() {
    watchdog(60, || {
        let dir = TempDir::new("started-fixed");
        let s = small_store(dir.path(), |o| o.pool_buffers = 2);
        let to = Completions::new().unwrap();
        let data = pattern(3000, 13);
        // A write received into a buffer from `write_buf` is written from it.
        let mut buf = s.write_buf("f", 100, 3000).expect("a free buffer");
        buf.fill_from(&data);
        s.start_write_fixed("f", 100, buf, false, 4, &to).unwrap();
        let f = next_finished(&to);
        assert_eq!((f.tag, f.result.unwrap()), (4, 3000));
        assert!(f.fixed.is_none() && f.buf.is_empty());
        assert_eq!(s.read("f", 100, 3000).unwrap(), data);
        // A read answers with its registered buffer: short at the end of
        // the file, a hole before the data as zeros.
        s.start_read("f", 0, 4000, Vec::new(), ReadAnswer::Registered, 5, &to)
            .unwrap();
        let f = next_finished(&to);
        assert_eq!((f.tag, f.result.unwrap()), (5, 3100));
        let fixed = f.fixed.expect("the data in its registered buffer");
        let mut want = vec![0u8; 100];
        want.extend_from_slice(&data);
        assert_eq!(fixed.as_slice(), &want[..]);
        assert_eq!(s.stats().pool_free, 1, "held until the caller drops it");
        drop(fixed);
        // A failed read hands back no buffer.
        s.start_read("none", 0, 10, Vec::new(), ReadAnswer::Registered, 6, &to)
            .unwrap();
        assert!(next_finished(&to).fixed.is_none());
        // No buffer for what would not start: empty, across a chunk
        // border, more than one buffer, a bad path.
        assert!(s.write_buf("f", 0, 0).is_none());
        assert!(s.write_buf("f", 16 * 1024 - 100, 200).is_none());
        assert!(s.write_buf("f", 0, 5000).is_none());
        assert!(s.write_buf("../x", 0, 10).is_none());
        // A closed store gives the data back.
        let buf = s.write_buf("f", 0, 10).expect("a free buffer");
        s.close().unwrap();
        let back = s.start_write_fixed("f", 0, buf, false, 7, &to).unwrap_err();
        drop(back);
        assert_eq!(s.stats().pool_free, s.stats().pool_buffers);
        assert!(to.try_take().is_none(), "nothing answered twice");
    });
}

#[test]
fn a_started_synced_write_is_followed_by_its_fsync() {
    watchdog(60, || {
        let dir = TempDir::new("started-sync");
        let s = small_store(dir.path(), |_| {});
        let to = Completions::new().unwrap();
        let data = pattern(4096, 9);
        let ops0 = s.stats().completed_ops;
        s.start_write("s", 0, data.clone(), true, 3, &to).unwrap();
        let f = next_finished(&to);
        assert_eq!((f.tag, f.result.unwrap()), (3, 4096));
        assert_eq!(
            s.stats().completed_ops - ops0,
            2,
            "the write, then its fsync"
        );
        assert_eq!(s.read("s", 0, 4096).unwrap(), data);
    });
}
