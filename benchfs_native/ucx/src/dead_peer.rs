//! Surviving a peer that dies in the middle of a shared-memory copy.
//!
//! With `UCP_ERR_HANDLING_MODE_NONE` (this crate's [`ErrorMode::Deadline`],
//! the mode that keeps shared memory), UCX 1.13 handles a failed
//! `process_vm_readv`/`process_vm_writev` of its cma transport (the peer
//! process is gone) like peer error handling does: it marks the UCP
//! endpoint failed and fails its operations. Only because no error
//! callback is installed it then logs the failure at level FATAL, and
//! UCX's own log handler aborts the process. Error mode PEER would avoid
//! that but, on 1.13, drops cma for rendezvous (it requires memory
//! invalidation, which cma's memory domain lacks; docs/TRANSPORT.md).
//!
//! [`survive_dead_peers`] installs a UCX log handler, called before UCX's
//! own, that swallows exactly that message (from `uct_cma_ep_tx_error`):
//! the process keeps running, the operation that needed the dead peer
//! fails, and [`dead_peer_copies`] counts the event. Every other message
//! goes on to UCX's handler unchanged.
//!
//! [`ErrorMode::Deadline`]: crate::ErrorMode::Deadline

use std::ffi::{CStr, c_char, c_uint};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::sys;

/// The UCX function that logs a failed cma copy.
const CMA_FAILURE: &[u8] = b"uct_cma_ep_tx_error";

static INSTALL: Once = Once::new();
static COPIES: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn on_log(
    _file: *const c_char,
    _line: c_uint,
    function: *const c_char,
    level: sys::ucs_log_level_t,
    _comp: *const sys::ucs_log_component_config_t,
    _format: *const c_char,
    _ap: *mut sys::__va_list_tag,
) -> sys::ucs_log_func_rc_t {
    if level != sys::UCS_LOG_LEVEL_FATAL || function.is_null() {
        return sys::UCS_LOG_FUNC_RC_CONTINUE;
    }
    // Safety: UCX passes `__func__`, a NUL-terminated static string.
    let name = unsafe { CStr::from_ptr(function) };
    if name.to_bytes() != CMA_FAILURE {
        return sys::UCS_LOG_FUNC_RC_CONTINUE;
    }
    COPIES.fetch_add(1, Ordering::Relaxed);
    sys::UCS_LOG_FUNC_RC_STOP
}

/// Keeps the process alive when a peer dies during a cma copy (see the
/// module). Idempotent; call it before the first context is created.
pub fn survive_dead_peers() {
    INSTALL.call_once(|| {
        // Safety: registers a plain function that never unwinds; UCX keeps
        // the pointer for the life of the process.
        unsafe { sys::ucs_log_push_handler(Some(on_log)) };
    });
}

/// How many cma copies failed because their peer was gone (and did not
/// abort the process), since the process started.
pub fn dead_peer_copies() -> u64 {
    COPIES.load(Ordering::Relaxed)
}
