//! `wasi:io/poll` for plugins, without waiting.
//!
//! A call's deadline is an epoch check in the plugin's compiled code, so it stops a plugin
//! that loops but not one that waits inside the host: `std::thread::sleep` in a plugin is a
//! `pollable.block` on a clock, which would hold the shell for as long as the plugin asked.
//! Here a pollable that is ready answers as WASI says; waiting on one that is not is a
//! failure of the call, which quarantines the plugin like any other.

use wasmtime::Result;
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::bindings::sync::io::poll::{Host, HostPollable};

use super::PluginState;

/// Why a waiting plugin's call failed.
pub const WAITED: &str = "the plugin waited on wasi:io/poll (a plugin may not wait in the host: its call's deadline could not stop it)";

/// Replaces WASI's `wasi:io/poll` in `linker` (which already holds WASI) with [`NoWait`].
pub fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    linker.allow_shadowing(true);
    let added = wasmtime_wasi::p2::bindings::sync::io::poll::add_to_linker::<PluginState, NoWaitData>(
        linker,
        |state| NoWait(&mut state.table),
    );
    linker.allow_shadowing(false);
    added
}

struct NoWaitData;

impl HasData for NoWaitData {
    type Data<'a> = NoWait<'a>;
}

/// A plugin's resource table, seen through `wasi:io/poll` without waiting.
pub struct NoWait<'a>(&'a mut ResourceTable);

impl NoWait<'_> {
    /// Whether the pollable behind `handle` is ready now (WASI's own `ready`, which never waits).
    fn ready_now(&mut self, handle: &Resource<DynPollable>) -> Result<bool> {
        HostPollable::ready(self.0, Resource::new_borrow(handle.rep()))
    }
}

impl Host for NoWait<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> Result<Vec<u32>> {
        if pollables.is_empty() {
            return Host::poll(self.0, pollables);
        }
        let mut ready = Vec::new();
        for (index, handle) in pollables.iter().enumerate() {
            if self.ready_now(handle)? {
                ready.push(u32::try_from(index)?);
            }
        }
        if ready.is_empty() {
            wasmtime::bail!("{WAITED}");
        }
        Ok(ready)
    }
}

impl HostPollable for NoWait<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> Result<bool> {
        HostPollable::ready(self.0, pollable)
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> Result<()> {
        if self.ready_now(&pollable)? {
            return Ok(());
        }
        wasmtime::bail!("{WAITED}");
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> Result<()> {
        HostPollable::drop(self.0, pollable)
    }
}
