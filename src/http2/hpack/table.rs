//! HPACK's two tables (RFC 7541 §2.3): the static one, and the decoder's dynamic one, kept in an
//! arena that grows to a bound, so that inserting a header allocates nothing once it has.

/// The static table, RFC 7541 Appendix A: index `i` is `STATIC[i - 1]`.
pub(crate) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What an entry costs in a table beyond its bytes (§4.1).
pub(crate) const ENTRY_OVERHEAD: usize = 32;

/// The size of a field as HPACK counts it, in tables and in header lists.
pub(crate) fn field_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + ENTRY_OVERHEAD
}

/// One entry of the dynamic table: where its name and value start in the arena.
#[derive(Debug, Clone, Copy)]
struct Entry {
    start: usize,
    name_len: usize,
    value_len: usize,
}

/// The decoder's dynamic table.
///
/// Entries' bytes sit one after another in `arena`, oldest first, from `entries[0].start` to
/// `end`. Evicting moves nothing; when an insert would run past the arena's end, the arena
/// doubles, up to twice the largest size the table may ever have (`capacity`); at that size the
/// live bytes are moved to its start instead. Live bytes never exceed the current maximum, so a
/// new entry always fits after at most one move, and a move is paid for by at least as many
/// inserted bytes. A connection whose client indexes little (or nothing) holds an arena of what
/// it indexed, not 2 x 4 KiB.
#[derive(Debug)]
pub(crate) struct DynamicTable {
    arena: Vec<u8>,
    end: usize,
    /// Oldest first; HPACK's index 62 is the newest, the last.
    entries: std::collections::VecDeque<Entry>,
    /// The table's size as HPACK counts it (§4.1).
    size: usize,
    /// The current maximum, set by the encoder's size updates, never above `capacity`.
    max_size: usize,
    /// The most this table may ever hold: the SETTINGS_HEADER_TABLE_SIZE we announce.
    capacity: usize,
}

impl DynamicTable {
    pub(crate) fn new(capacity: usize) -> DynamicTable {
        DynamicTable {
            arena: Vec::new(),
            end: 0,
            entries: std::collections::VecDeque::new(),
            size: 0,
            max_size: capacity,
            capacity,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Entry `index` counted from the newest (0), as name and value.
    pub(crate) fn get(&self, index: usize) -> Option<(&[u8], &[u8])> {
        let entry = self
            .entries
            .get(self.entries.len().checked_sub(index + 1)?)?;
        let name_end = entry.start + entry.name_len;
        Some((
            &self.arena[entry.start..name_end],
            &self.arena[name_end..name_end + entry.value_len],
        ))
    }

    /// A size update from the encoder; the caller has checked it against `capacity`.
    pub(crate) fn set_max_size(&mut self, max_size: usize) {
        debug_assert!(max_size <= self.capacity);
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Empties the table, as inserting a field larger than it does (§4.4).
    pub(crate) fn clear(&mut self) {
        self.evict_to(0);
    }

    /// Inserts a field (§4.4), evicting the oldest entries to make room; a field larger than
    /// the table empties it. The name must not lie in this table's arena (copy it out first).
    pub(crate) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = field_size(name, value);
        if size > self.max_size {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - size);
        let len = name.len() + value.len();
        if self.end + len > self.arena.len() {
            let most = 2 * self.capacity;
            if self.arena.len() < most {
                let grown = (2 * self.arena.len())
                    .max(self.end + len)
                    .max(256)
                    .min(most);
                self.arena.resize(grown, 0);
            }
            if self.end + len > self.arena.len() {
                self.compact();
            }
        }
        let start = self.end;
        self.arena[start..start + name.len()].copy_from_slice(name);
        self.arena[start + name.len()..start + len].copy_from_slice(value);
        self.end += len;
        self.entries.push_back(Entry {
            start,
            name_len: name.len(),
            value_len: value.len(),
        });
        self.size += size;
    }

    fn evict_to(&mut self, size: usize) {
        while self.size > size {
            let oldest = self.entries.pop_front().expect("size counts entries");
            self.size -= oldest.name_len + oldest.value_len + ENTRY_OVERHEAD;
        }
        if self.entries.is_empty() {
            self.end = 0;
        }
    }

    /// Moves the live bytes to the arena's start.
    fn compact(&mut self) {
        let Some(first) = self.entries.front() else {
            self.end = 0;
            return;
        };
        let shift = first.start;
        self.arena.copy_within(shift..self.end, 0);
        self.end -= shift;
        for entry in &mut self.entries {
            entry.start -= shift;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_indexed_newest_first_and_evicted_oldest_first() {
        // Room for two 40-byte fields (4 + 4 + 32), not three.
        let mut table = DynamicTable::new(100);
        table.insert(b"aaaa", b"1111");
        table.insert(b"bbbb", b"2222");
        assert_eq!(table.get(0), Some((&b"bbbb"[..], &b"2222"[..])));
        assert_eq!(table.get(1), Some((&b"aaaa"[..], &b"1111"[..])));
        table.insert(b"cccc", b"3333");
        assert_eq!(table.len(), 2);
        assert_eq!(table.get(1), Some((&b"bbbb"[..], &b"2222"[..])));
        assert_eq!(table.get(2), None);
        assert_eq!(table.size(), 80);
    }

    #[test]
    fn a_field_larger_than_the_table_empties_it() {
        let mut table = DynamicTable::new(64);
        table.insert(b"a", b"b");
        table.insert(&[b'x'; 20], &[b'y'; 20]);
        assert_eq!((table.len(), table.size()), (0, 0));
    }

    #[test]
    fn size_updates_evict_and_the_arena_never_overflows() {
        let mut table = DynamicTable::new(256);
        for i in 0..10_000usize {
            let value = vec![b'v'; i % 97];
            table.insert(format!("n{}", i % 13).as_bytes(), &value);
            assert!(table.size() <= 256);
            let (name, got) = table.get(0).unwrap();
            assert_eq!((name, got), (format!("n{}", i % 13).as_bytes(), &value[..]));
            if i % 1000 == 999 {
                table.set_max_size(i % 200);
                assert!(table.size() <= i % 200);
                table.set_max_size(256);
            }
        }
    }
}
