//! Python, reproduced where graphite-web's results depend on it.
//!
//! graphite-web is written in Python, so the exact spelling of a number in its output
//! (`1e-05`, `42.0`, `1e+16`), the strings it accepts as a number, the order in which it
//! sorts series and the last bit of a rounded value come from CPython. Everything that
//! imitates CPython lives here, one module a topic:
//! - [`text`] — `str.strip()`/`isspace()`, `int(str)`, `float(str)`, `str.expandtabs()`;
//! - [`repr`] — `repr(float)`;
//! - [`format`] — `'%g'`, `'%.Nf'`, `'%d'`, `'%*s'` and `template % value`;
//! - `number` — `sum()`, `min()`, `max()`, `int(float)`, `pow`, `round()`;
//! - `sort` — `list.sort`, ties and NaN included;
//! - `seq` — `seq[i]` and `seq[start:stop]`;
//! - `re` — `re.search` and `re.sub` over the `regex` crate.
//!
//! The text conversions and `repr` are public (the HTTP and render crates read and
//! write numbers with them); the rest serves the function families.

pub mod format;
pub(crate) mod number;
pub(crate) mod re;
pub mod repr;
pub(crate) mod seq;
pub(crate) mod sort;
pub mod text;

pub use repr::{float_repr, write_float_repr};
pub use text::{expandtabs, float, int, is_space, strip};
