//! Packet captures of a simulated run (`rtcc run --pcap FILE`): every datagram an endpoint sends,
//! at the instant it sends it (a capture next to each sender, so a datagram later lost in a
//! queue is in it too), as a pcap file ([`rtcc_core::wire::pcap`] says what each record holds).

use rtcc_core::packet::Ecn;
use rtcc_core::wire::pcap;
use rtcc_core::Time;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Where a simulation hands the datagrams its endpoints send.
pub trait Capture: Send {
    /// Flow `flow`'s end A (`from_a`) or B sent `bytes` at `t`, `wire_size` bytes on the wire.
    fn datagram(
        &mut self,
        t: Time,
        flow: u32,
        from_a: bool,
        bytes: &[u8],
        wire_size: u32,
        ecn: Ecn,
    );
    /// The run is over: complete the capture (the first error, if any, is reported here).
    fn finish(self: Box<Self>) -> Result<(), String>;
}

/// A pcap file, written as the run goes.
pub struct PcapFile {
    out: BufWriter<File>,
    path: PathBuf,
    record: Vec<u8>,
    error: Option<String>,
}

impl PcapFile {
    pub fn create(path: &Path) -> Result<PcapFile, String> {
        let fail = |e: std::io::Error| format!("{}: cannot write the capture: {e}", path.display());
        let mut out = BufWriter::new(File::create(path).map_err(fail)?);
        out.write_all(&pcap::file_header()).map_err(fail)?;
        Ok(PcapFile {
            out,
            path: path.to_path_buf(),
            record: Vec::with_capacity(1600),
            error: None,
        })
    }
}

impl Capture for PcapFile {
    fn datagram(
        &mut self,
        t: Time,
        flow: u32,
        from_a: bool,
        bytes: &[u8],
        wire_size: u32,
        ecn: Ecn,
    ) {
        if self.error.is_some() {
            return;
        }
        let (src, dst) = pcap::simulated_ends(flow, from_a, bytes);
        self.record.clear();
        pcap::record(t, src, dst, ecn, bytes, wire_size, &mut self.record);
        if let Err(e) = self.out.write_all(&self.record) {
            self.error = Some(format!(
                "{}: cannot write the capture: {e}",
                self.path.display()
            ));
        }
    }

    fn finish(mut self: Box<Self>) -> Result<(), String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out
            .flush()
            .map_err(|e| format!("{}: cannot write the capture: {e}", self.path.display()))
    }
}
