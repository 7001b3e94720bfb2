//! How the fuzz bytes become the arguments of calls: integers that favour
//! the edges, kind codes either side of the table, and names, keys and
//! owners that are often wrong. Apart from the calls, so that what an input
//! means is read in one place.

/// Reads the fuzz input as the arguments of calls; past its end, zeros.
pub(super) struct Input<'a> {
    pub(super) data: &'a [u8],
}

impl<'a> Input<'a> {
    pub(super) fn done(&self) -> bool {
        self.data.is_empty()
    }

    pub(super) fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.data.split_first() else {
            return 0;
        };
        self.data = rest;
        b
    }

    pub(super) fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// Eight bytes as an integer, or (often) one of the values at the edges.
    pub(super) fn i64(&mut self) -> i64 {
        match self.u8() % 8 {
            0 => 0,
            1 => i64::MIN,
            2 => i64::MAX,
            3 => -1,
            4 => i64::from(self.u8()),
            5 => 60_000_000_000, // a minute in ns
            _ => {
                let mut b = [0u8; 8];
                for x in &mut b {
                    *x = self.u8();
                }
                i64::from_le_bytes(b)
            }
        }
    }

    /// A kind code: the table's, and one either side.
    pub(super) fn kind(&mut self) -> i32 {
        i32::from(self.u8() % 12) - 1
    }

    /// One length byte and that many bytes (cut short at the end).
    pub(super) fn bytes(&mut self) -> &'a [u8] {
        let n = (self.u8() as usize).min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// Owners as the ABI reads them (u32 lengths and bytes), often wrong.
    pub(super) fn owners(&mut self) -> Vec<u8> {
        match self.u8() % 4 {
            0 | 1 => Vec::new(),
            2 => {
                let mut out = Vec::new();
                for _ in 0..=self.u8() % 2 {
                    let o = self.bytes();
                    out.extend_from_slice(&(o.len() as u32).to_le_bytes());
                    out.extend_from_slice(o);
                }
                out
            }
            _ => self.bytes().to_vec(),
        }
    }

    /// A key: mostly short text the calls share, sometimes any bytes.
    pub(super) fn key(&mut self) -> Vec<u8> {
        match self.u8() % 4 {
            0 => b"k".to_vec(),
            1 => vec![b'a' + self.u8() % 4],
            2 => Vec::new(),
            _ => self.bytes().to_vec(),
        }
    }
}
