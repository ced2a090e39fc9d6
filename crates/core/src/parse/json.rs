//! What the JSON-lines parsers (`caddy`, `jsonlines`) share: a string value that is
//! borrowed from the line when it has no escapes, or copied, unescaped, into the
//! parser's scratch arena.

/// A string value: none, borrowed from the line, or a range of the scratch arena.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) enum S<'de> {
    /// JSON `null` or absent.
    #[default]
    None,
    /// Borrowed from the line.
    B(&'de str),
    /// `arena[start..end]`.
    A(usize, usize),
}

impl<'de> S<'de> {
    /// The value's bytes (`None` for [`S::None`]).
    pub(crate) fn get<'x>(self, arena: &'x [u8]) -> Option<&'x [u8]>
    where
        'de: 'x,
    {
        match self {
            S::None => None,
            S::B(s) => Some(s.as_bytes()),
            S::A(a, b) => Some(&arena[a..b]),
        }
    }

    /// The value's bytes, empty for [`S::None`].
    pub(crate) fn bytes<'x>(self, arena: &'x [u8]) -> &'x [u8]
    where
        'de: 'x,
    {
        self.get(arena).unwrap_or_default()
    }

    /// Copies an unescaped (not borrowable) string into the arena.
    pub(crate) fn stash(arena: &mut Vec<u8>, v: &str) -> S<'de> {
        let a = arena.len();
        arena.extend_from_slice(v.as_bytes());
        S::A(a, arena.len())
    }
}
