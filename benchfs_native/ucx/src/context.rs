//! The UCP application context: transports and features, shared by the
//! workers of one process.

use std::ffi::CString;
use std::ptr;
use std::sync::Arc;

use crate::error::{Error, Result, check};
use crate::sys;

/// A UCP context (`ucp_context_h`) with the active-message feature and,
/// unless disabled, the wake-up feature (worker event fds).
///
/// Cheap to clone; the context is destroyed when the last clone and the
/// last [`Worker`](crate::Worker) created from it are gone. It may be shared between
/// threads: it is created with `mt_workers_shared`, and each thread then
/// creates its own worker.
#[derive(Clone, Debug)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

#[derive(Debug)]
pub(crate) struct ContextInner {
    pub(crate) handle: sys::ucp_context_h,
    pub(crate) wakeup: bool,
}

// Safety: the context is created with `mt_workers_shared = 1`, which makes
// UCX guard its context-level state (memory domains, registration cache)
// for workers living in different threads; the handle itself is only
// passed to `ucp_worker_create` and `ucp_cleanup`.
unsafe impl Send for ContextInner {}
// Safety: see `Send` above; no method takes `&mut` access to UCX state.
unsafe impl Sync for ContextInner {}

impl Drop for ContextInner {
    fn drop(&mut self) {
        // Safety: `handle` came from a successful `ucp_init_version`; every
        // worker holds an `Arc<ContextInner>`, so none is alive any more.
        unsafe { sys::ucp_cleanup(self.handle) };
    }
}

/// Options of a [`Context`], set before it is created.
#[derive(Debug, Clone)]
pub struct ContextBuilder {
    wakeup: bool,
    name: Option<String>,
    config: Vec<(String, String)>,
}

impl Default for ContextBuilder {
    fn default() -> Self {
        ContextBuilder {
            wakeup: true,
            name: None,
            config: Vec::new(),
        }
    }
}

impl ContextBuilder {
    /// Enable `UCP_FEATURE_WAKEUP` (default: on), needed for
    /// [`Worker::event_fd`](crate::Worker::event_fd).
    pub fn wakeup(mut self, on: bool) -> Self {
        self.wakeup = on;
        self
    }

    /// Name of the context in UCX's logs.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Set one UCX configuration key, without the `UCX_` prefix (e.g.
    /// `("TLS", "tcp")`). Overrides the environment for this context only.
    pub fn config(mut self, key: &str, value: &str) -> Self {
        self.config.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Read the UCX configuration (environment plus the keys set here) and
    /// create the context.
    pub fn build(self) -> Result<Context> {
        let mut config: *mut sys::ucp_config_t = ptr::null_mut();
        // Safety: NULL prefix and file name mean "UCX_" and no file;
        // `config` is a valid out-pointer.
        check("ucp_config_read", unsafe {
            sys::ucp_config_read(ptr::null(), ptr::null(), &mut config)
        })?;
        let config = ConfigGuard(config);
        for (k, v) in &self.config {
            let op = format!("ucp_config_modify({k}={v})");
            let ck = CString::new(k.as_str())
                .map_err(|_| Error::new(&op, sys::UCS_ERR_INVALID_PARAM))?;
            let cv = CString::new(v.as_str())
                .map_err(|_| Error::new(&op, sys::UCS_ERR_INVALID_PARAM))?;
            // Safety: `config.0` is a live config from `ucp_config_read`;
            // both strings are NUL-terminated and outlive the call.
            check(&op, unsafe {
                sys::ucp_config_modify(config.0, ck.as_ptr(), cv.as_ptr())
            })?;
        }

        let name = self
            .name
            .as_deref()
            .map(|n| CString::new(n).unwrap_or_default());
        let mut features = sys::UCP_FEATURE_AM as u64;
        if self.wakeup {
            features |= sys::UCP_FEATURE_WAKEUP as u64;
        }
        let mut params = sys::ucp_params_t {
            field_mask: (sys::UCP_PARAM_FIELD_FEATURES | sys::UCP_PARAM_FIELD_MT_WORKERS_SHARED)
                as u64,
            features,
            mt_workers_shared: 1,
            ..Default::default()
        };
        if let Some(n) = &name {
            params.field_mask |= sys::UCP_PARAM_FIELD_NAME as u64;
            params.name = n.as_ptr();
        }
        let mut handle: sys::ucp_context_h = ptr::null_mut();
        // Safety: `ucp_init` is an inline wrapper of exactly this call with
        // the API version the headers were generated from; `params` and
        // `config` are valid for the duration of the call, `handle` is a
        // valid out-pointer.
        check("ucp_init", unsafe {
            sys::ucp_init_version(
                sys::UCP_API_MAJOR,
                sys::UCP_API_MINOR,
                &params,
                config.0,
                &mut handle,
            )
        })?;
        Ok(Context {
            inner: Arc::new(ContextInner {
                handle,
                wakeup: self.wakeup,
            }),
        })
    }
}

struct ConfigGuard(*mut sys::ucp_config_t);

impl Drop for ConfigGuard {
    fn drop(&mut self) {
        // Safety: the pointer came from a successful `ucp_config_read` and
        // is released exactly once.
        unsafe { sys::ucp_config_release(self.0) };
    }
}

impl Context {
    /// A context with the defaults: active messages and wake-up, the UCX
    /// configuration from the environment (`UCX_TLS`, ...).
    pub fn new() -> Result<Context> {
        ContextBuilder::default().build()
    }

    /// Options before creation.
    pub fn builder() -> ContextBuilder {
        ContextBuilder::default()
    }

    /// Whether the wake-up feature (event fds) is enabled.
    pub fn has_wakeup(&self) -> bool {
        self.inner.wakeup
    }

    /// Version of the libucp loaded at run time, e.g. `(1, 13, 1)`.
    pub fn library_version() -> (u32, u32, u32) {
        let (mut major, mut minor, mut release) = (0, 0, 0);
        // Safety: three valid out-pointers.
        unsafe { sys::ucp_get_version(&mut major, &mut minor, &mut release) };
        (major, minor, release)
    }
}
