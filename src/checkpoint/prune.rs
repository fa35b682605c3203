//! Pruning: the oldest checkpoints go first, past `keep` checkpoints or past
//! `max_total_bytes` of store, then every blob no remaining checkpoint reaches.

use std::collections::HashMap;

use super::store::Store;
use super::tree::{Kind, read_tree};

/// What a prune removed.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Pruned {
    pub checkpoints: usize,
    pub blobs: usize,
    /// The store's size after (the blobs the remaining checkpoints reach).
    pub bytes: u64,
}

/// Prune the store (call with its lock held).
pub fn prune(store: &Store, keep: usize, max_total_bytes: u64) -> std::io::Result<Pruned> {
    let ids = store.record_ids()?;
    let records: Vec<_> = ids.iter().filter_map(|i| store.record(i).ok()).collect();
    // Each blob's newest user: dropping the checkpoints before it frees the blob.
    let mut newest_user: HashMap<String, usize> = HashMap::new();
    for (i, rec) in records.iter().enumerate().rev() {
        for root in std::iter::once(&rec.tree).chain(rec.after.as_ref()) {
            mark(store, root, i, &mut newest_user);
        }
    }
    let mut sizes: Vec<(usize, u64)> = newest_user
        .iter()
        .map(|(h, i)| (*i, store.blob_size(h)))
        .collect();
    sizes.sort_unstable();
    let mut total: u64 = sizes.iter().map(|(_, s)| s).sum();
    let mut drop = records.len().saturating_sub(keep.max(1));
    // Past the size budget: drop more of the oldest, but never the newest.
    let mut freed_upto = 0;
    let mut freed_by = |drop: usize, total: &mut u64| {
        while freed_upto < sizes.len() && sizes[freed_upto].0 < drop {
            *total -= sizes[freed_upto].1;
            freed_upto += 1;
        }
    };
    freed_by(drop, &mut total);
    while total > max_total_bytes && drop + 1 < records.len() {
        drop += 1;
        freed_by(drop, &mut total);
    }
    let mut out = Pruned {
        bytes: total,
        ..Pruned::default()
    };
    for rec in &records[..drop] {
        store.remove_record(&rec.id)?;
        out.checkpoints += 1;
    }
    for hash in store.blob_hashes()? {
        let kept = newest_user.get(&hash).is_some_and(|i| *i >= drop);
        if !kept {
            store.remove_blob(&hash)?;
            out.blobs += 1;
        }
    }
    Ok(out)
}

/// Mark every blob under the tree `root` as used by checkpoint `i` (unless a newer one
/// already did: then everything under it is marked too).
fn mark(store: &Store, root: &str, i: usize, newest_user: &mut HashMap<String, usize>) {
    if newest_user.contains_key(root) {
        return;
    }
    newest_user.insert(root.to_string(), i);
    let Ok(entries) = read_tree(store, root) else {
        return;
    };
    for e in entries {
        match e.kind {
            Kind::File { hash, .. } => {
                newest_user.entry(hash).or_insert(i);
            }
            Kind::Dir { tree } => mark(store, &tree, i, newest_user),
            _ => {}
        }
    }
}
