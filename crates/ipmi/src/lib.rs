//! IPMI 2.0 lanplus for Lifeline (wire codecs; client behind the `client` feature).
pub mod wire;
