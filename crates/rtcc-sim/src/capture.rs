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
    out: pcap::Writer<BufWriter<File>>,
    path: PathBuf,
    error: Option<String>,
}

impl PcapFile {
    pub fn create(path: &Path) -> Result<PcapFile, String> {
        let out = File::create(path)
            .and_then(|f| pcap::Writer::new(BufWriter::new(f)))
            .map_err(|e| cannot_write(path, e))?;
        Ok(PcapFile {
            out,
            path: path.to_path_buf(),
            error: None,
        })
    }
}

fn cannot_write(path: &Path, e: std::io::Error) -> String {
    format!("{}: cannot write the capture: {e}", path.display())
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
        if let Err(e) = self.out.write(t, src, dst, ecn, bytes, wire_size) {
            self.error = Some(cannot_write(&self.path, e));
        }
    }

    fn finish(self: Box<Self>) -> Result<(), String> {
        match self.error {
            Some(e) => Err(e),
            None => self
                .out
                .into_inner()
                .flush()
                .map_err(|e| cannot_write(&self.path, e)),
        }
    }
}
