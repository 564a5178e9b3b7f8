//! An append-only anonymous temporary file, for statistics that would otherwise grow with a run
//! ([`super::packet_stats::DelaySample`]'s encoded delays, [`super::sqp_frame_delay`]'s slots).
//!
//! The file is created at the first append and deleted by the system when it is dropped. If it
//! cannot be created or written (no temporary folder, disk full), appends fail from then on and
//! the caller keeps its data in memory: a run never fails for want of a temporary file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

#[derive(Debug, Default)]
pub struct SpillFile {
    file: Option<File>,
    /// Bytes appended (a failed write's partial bytes lie past them and are never read).
    len: u64,
    failed: bool,
}

impl SpillFile {
    /// Append `bytes`; false if they could not be written (they stay with the caller, as will
    /// everything after).
    pub fn append(&mut self, bytes: &[u8]) -> bool {
        if self.failed {
            return false;
        }
        if self.file.is_none() {
            match tempfile::tempfile() {
                Ok(f) => self.file = Some(f),
                Err(_) => {
                    self.failed = true;
                    return false;
                }
            }
        }
        let mut file: &File = self.file.as_ref().expect("created above");
        // At the end of what was counted (a read moves the file's position).
        match file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| file.write_all(bytes))
        {
            Ok(()) => {
                self.len += bytes.len() as u64;
                true
            }
            Err(_) => {
                self.failed = true;
                false
            }
        }
    }

    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `len` bytes from offset `at` (within what was appended).
    pub fn read(&self, at: u64, len: usize) -> Vec<u8> {
        assert!(
            at + len as u64 <= self.len,
            "a read within the bytes appended"
        );
        let mut buf = vec![0u8; len];
        if len > 0 {
            let mut file: &File = self.file.as_ref().expect("bytes were appended");
            file.seek(SeekFrom::Start(at))
                .and_then(|_| file.read_exact(&mut buf))
                .unwrap_or_else(|e| panic!("cannot read back a run's temporary file: {e}"));
        }
        buf
    }
}
