//! The real-world corpus's shared parts: the independent secret extractor and the corpus loader
//! with its leak and over-scrub counts.

pub mod corpus;
pub mod extract;
