//! lazy-tools linked natively (the plugin crate as an rlib) over the same
//! shell state, as the baseline that WebAssembly figures are compared with.

use std::sync::{Arc, Mutex};

use lazy_tools::LazyTools;

use crate::host_view::HostView;
use crate::shell_core::ShellCore;

/// lazy-tools running natively over `core`, under restriction source `id`.
pub fn native_lazy_tools(core: Arc<Mutex<ShellCore>>, id: &str) -> LazyTools<HostView> {
    LazyTools::new(HostView::new(core, id))
}
