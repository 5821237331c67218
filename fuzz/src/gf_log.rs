//! Fuzz target for a cluster node's applier of GrowthForecast's metadata log
//! (`sumi_http::growthforecast::replicated::Applier::apply`): any bytes as the
//! message at the next offset.
//!
//! Accepted outcomes, anything else panics: never a panic; the message is either
//! applied or skipped (unreadable, or an op that fails alike on every node: the
//! offset moves past it), or refused as this node's failure (the offset stays, the
//! consumer retries it); a message at an offset already applied changes nothing.

use std::cell::RefCell;
use std::sync::Arc;

use sumi_http::growthforecast::replicated::{Applier, Waiters};
use sumi_http::growthforecast::{Db, SeriesRegistry};
use sumi_store::{Store, StoreOptions};

struct Node {
    applier: Applier,
    db: Db,
    _store: Arc<Store>,
    dir: std::path::PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

thread_local! {
    static NODE: RefCell<Option<Node>> = const { RefCell::new(None) };
}

fn node() -> Node {
    let dir = crate::scratch_base().join(format!(
        "sumi-fuzz-gf-log-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let store = Store::open(
        StoreOptions::new(dir.join("store")),
        Arc::new(sumi_model::SystemClock),
    )
    .expect("scratch store");
    let db = Db::open(&dir).expect("scratch database");
    let mut applier = Applier::open(
        &db,
        store.clone(),
        SeriesRegistry::new(),
        1,
        Arc::new(Waiters::default()),
    )
    .expect("applier of an empty database");
    // a delete carrying the data topic's ends passes its wait (no consumer here)
    applier.set_data_wait(Box::new(|_| {}));
    Node {
        applier,
        db,
        _store: store,
        dir,
    }
}

/// One input.
pub fn gf_log_op(data: &[u8]) {
    NODE.with(|n| {
        let mut n = n.borrow_mut();
        let node = n.get_or_insert_with(node);
        let offset = node.applier.next_offset();
        match node.applier.apply(offset, data) {
            Ok(()) => assert_eq!(node.applier.next_offset(), offset + 1),
            Err(e) => {
                assert_eq!(node.applier.next_offset(), offset, "{e}");
                return;
            }
        }
        // again at an applied offset: nothing changes
        let before = node.db.graphs().expect("graphs");
        node.applier.apply(offset, data).expect("an applied offset");
        assert_eq!(node.applier.next_offset(), offset + 1);
        assert_eq!(node.db.graphs().expect("graphs"), before);
    });
}
