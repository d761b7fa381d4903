//! Console logs: every byte from every console, timestamped, in size-rotated files under the data
//! directory, indexed through [`ConsoleLogIndex`] (the store, or [`DirLogIndex`] without a database).

pub mod format;
pub mod index;
pub mod reader;
pub(crate) mod writer;

pub use format::{LogRecord, RecordKind, encode_record, parse_record};
pub use index::{ConsoleLogIndex, DirLogIndex, IndexError, LogFileEntry};
pub use reader::LogReader;
pub use writer::LogConfig;
