//! One chain's lists in the fake: records in listing order, indexed by id, and the failed list.
//! `push` and `mark` build the demo's world; `push_front`, `remove` and `unmark` move a list
//! the way the provider's own does (new records ahead, records gone, deliveries that succeeded).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::id_of;

/// One chain's notifications and failed list.
#[derive(Default)]
pub struct ChainLists {
    /// Serialized records, in listing order.
    pub(super) records: Vec<Arc<str>>,
    /// id -> index in `records`.
    pub(super) ids: HashMap<String, usize>,
    /// Indexes of failed notifications, in the order they failed.
    pub(super) failed: Vec<usize>,
    pub(super) failed_set: HashSet<usize>,
}

impl ChainLists {
    /// Adds a record at the end; a record whose `id` is listed already replaces it in place.
    pub fn push(&mut self, record: Value) {
        let id = id_of(&record);
        let text: Arc<str> = Arc::from(record.to_string());
        match id.as_ref().and_then(|id| self.ids.get(id)) {
            Some(&i) => self.records[i] = text,
            None => {
                if let Some(id) = id {
                    self.ids.insert(id, self.records.len());
                }
                self.records.push(text);
            }
        }
    }

    /// Puts `records` (ids not listed yet; a known id replaces its record in place) before
    /// every record: O(list).
    pub fn push_front(&mut self, records: Vec<Value>) {
        let mut front: Vec<Arc<str>> = Vec::new();
        let mut front_ids: Vec<(String, usize)> = Vec::new();
        for record in records {
            let id = id_of(&record);
            let text: Arc<str> = Arc::from(record.to_string());
            match id.as_ref().and_then(|id| self.ids.get(id)) {
                Some(&i) => self.records[i] = text,
                None => {
                    if let Some(id) = id {
                        front_ids.push((id, front.len()));
                    }
                    front.push(text);
                }
            }
        }
        let n = front.len();
        for i in self.ids.values_mut() {
            *i += n;
        }
        for i in &mut self.failed {
            *i += n;
        }
        self.failed_set = self.failed.iter().copied().collect();
        self.ids.extend(front_ids);
        front.append(&mut self.records);
        self.records = front;
    }

    /// Drops `ids` from both lists: O(list).
    pub fn remove(&mut self, ids: &[String]) {
        let gone: HashSet<usize> = ids
            .iter()
            .filter_map(|id| self.ids.get(id).copied())
            .collect();
        if gone.is_empty() {
            return;
        }
        let mut moved = vec![usize::MAX; self.records.len()];
        let mut kept = Vec::with_capacity(self.records.len() - gone.len());
        for (i, r) in std::mem::take(&mut self.records).into_iter().enumerate() {
            if !gone.contains(&i) {
                moved[i] = kept.len();
                kept.push(r);
            }
        }
        self.records = kept;
        self.ids.retain(|_, i| !gone.contains(i));
        for i in self.ids.values_mut() {
            *i = moved[*i];
        }
        self.failed.retain(|i| !gone.contains(i));
        for i in &mut self.failed {
            *i = moved[*i];
        }
        self.failed_set = self.failed.iter().copied().collect();
    }

    /// Puts a listed id on the failed list (once); false for an unknown id.
    pub fn mark(&mut self, id: &str) -> bool {
        let Some(&i) = self.ids.get(id) else {
            return false;
        };
        if self.failed_set.insert(i) {
            self.failed.push(i);
        }
        true
    }

    /// Takes an id off the failed list (a delivery that succeeded).
    pub fn unmark(&mut self, id: &str) {
        if let Some(i) = self.ids.get(id).copied() {
            if self.failed_set.remove(&i) {
                self.failed.retain(|&f| f != i);
            }
        }
    }

    /// Records listed.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Records on the failed list.
    pub fn failed_len(&self) -> usize {
        self.failed.len()
    }

    /// The records, serialized, in listing order.
    pub fn records(&self) -> impl Iterator<Item = &str> + '_ {
        self.records.iter().map(|r| &**r)
    }

    /// The records on the failed list, serialized, in the order they failed.
    pub fn failed(&self) -> impl Iterator<Item = &str> + '_ {
        self.failed.iter().map(|&i| &*self.records[i])
    }
}
