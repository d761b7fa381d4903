//! End-to-end tests live in `tests/*.rs`; this library is empty on purpose (a package needs a target).
