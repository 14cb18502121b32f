//! The byte-driven choices every target makes its input from: a fuzzer's bytes are
//! read front to back as decisions (which operation, which value, how deep), and an
//! exhausted input reads as zeros, so every byte string is a valid input and short
//! ones stay small. It owns no randomness: the seeded drivers of the tests hand it
//! random bytes, libFuzzer hands it mutated ones.

/// A cursor over a fuzzer's bytes.
pub struct Bytes<'a> {
    data: &'a [u8],
}

/// Values that make IEEE corners visible (zeros of both signs, infinities, NaN, the
/// ends of the range, subnormals, integers around 2^53) besides small integers.
pub const CORNERS: [f64; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    f64::MAX,
    f64::MIN_POSITIVE,
    5e-324,
    9007199254740992.0,
    9007199254740993.0,
    -9007199254740992.0,
    1e300,
    0.1,
];

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes { data }
    }

    /// Whether every byte has been read (later reads are zeros).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// A number below `n` (0 when `n` is 0), from one byte, or two when `n` > 256.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let x = if n > 256 {
            usize::from(self.byte()) << 8 | usize::from(self.byte())
        } else {
            usize::from(self.byte())
        };
        x % n
    }

    pub fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'b, T>(&mut self, items: &'b [T]) -> &'b T {
        let i = self.below(items.len());
        #[allow(clippy::indexing_slicing)] // `below` is in range; `items` is never empty
        &items[i]
    }

    pub fn u64(&mut self) -> u64 {
        let mut x = 0u64;
        for _ in 0..8 {
            x = x << 8 | u64::from(self.byte());
        }
        x
    }

    /// An input value: mostly a small integer (ties are frequent in real rows), else
    /// an IEEE corner, else any bits.
    pub fn value(&mut self) -> f64 {
        match self.below(8) {
            0..=3 => f64::from(self.below(300) as u16),
            4 | 5 => *self.pick(&CORNERS),
            6 => -f64::from(self.byte()),
            _ => f64::from_bits(self.u64()),
        }
    }

    /// The bytes not yet read.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}
