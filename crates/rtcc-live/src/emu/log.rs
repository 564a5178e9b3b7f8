//! The emulator's logs: mahimahi's link log per direction, and rtcc's packet log.
//!
//! **mahimahi format** (`link_queue.cc`), one event per line, times in whole milliseconds since
//! the shell started, so `mm-throughput-graph` and `mm-delay-graph` read it:
//!
//! ```text
//! # base timestamp: 0
//! 12 + 1500        a packet of 1500 bytes arrived at the queue
//! 13 # 1500        a delivery opportunity of 1500 bytes (trace and constant-rate links)
//! 13 - 1500 1      a packet of 1500 bytes left the link after 1 ms in queue and transmission
//! 14 d 1 1500      the queue dropped 1 packet of 1500 bytes
//! ```
//!
//! A constant-rate link logs one opportunity per 1500 bytes at its rate, which is what a
//! mahimahi trace of that rate holds; token-bucket and schedule links log none. A packet the
//! impairments lose is logged as a departure (it left the link), as mahimahi's loss shell comes
//! after its link shell.
//!
//! **rtcc's packet log** (`packets.csv`): one row per packet once it settles, with the simulator's
//! packet columns (`docs/cli.md`): `direction` (`up` leaves the shell, `down` enters it), `flow`,
//! `seq` (per flow and direction, in arrival order), `size`, `enqueue_ns`, `depart_ns`, `recv_ns`
//! (the model's delivery time; -1: never) and `dropped`. `flows.csv` names each flow by its
//! protocol and addresses.

use super::path::LogEvent;
use rtcc_core::net::Capacity;
use rtcc_core::Time;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file written under a temporary name and renamed when complete, so a reader never sees a
/// partial log.
pub struct AtomicWriter {
    out: BufWriter<File>,
    partial: PathBuf,
    path: PathBuf,
}

impl AtomicWriter {
    pub fn create(path: &Path) -> io::Result<AtomicWriter> {
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = File::create(&partial)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", partial.display())))?;
        Ok(AtomicWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            partial,
            path: path.to_path_buf(),
        })
    }

    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        std::fs::rename(&self.partial, &self.path)
    }
}

impl Write for AtomicWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// When a link offers its delivery opportunities (mahimahi's `#` lines).
enum Opportunities {
    None,
    Trace(std::sync::Arc<rtcc_core::net::MahimahiTrace>),
    /// One 1500-byte opportunity every this many nanoseconds.
    Every(f64),
}

/// mahimahi's log of one direction.
pub struct MahimahiLog {
    out: AtomicWriter,
    opportunities: Opportunities,
    next_opportunity: u64,
}

impl MahimahiLog {
    pub fn create(path: &Path, title: &str, capacity: &Capacity) -> io::Result<MahimahiLog> {
        let mut out = AtomicWriter::create(path)?;
        writeln!(out, "# mahimahi-format log written by rtcc emu ({title})")?;
        writeln!(out, "# init timestamp: 0")?;
        writeln!(out, "# base timestamp: 0")?;
        let opportunities = match capacity {
            Capacity::Trace(t) => Opportunities::Trace(t.clone()),
            Capacity::Constant(r) => Opportunities::Every(1500.0 * 8.0 / r.bps() * 1e9),
            _ => Opportunities::None,
        };
        Ok(MahimahiLog {
            out,
            opportunities,
            next_opportunity: 0,
        })
    }

    fn opportunity_time(&self, j: u64) -> Option<Time> {
        match &self.opportunities {
            Opportunities::None => None,
            Opportunities::Trace(t) => Some(t.opportunity_time(j)),
            Opportunities::Every(ns) => Some(Time((j as f64 * ns) as u64)),
        }
    }

    /// Write the opportunities up to `t`.
    fn opportunities_until(&mut self, t: Time) -> io::Result<()> {
        while let Some(o) = self
            .opportunity_time(self.next_opportunity)
            .filter(|&o| o <= t)
        {
            writeln!(self.out, "{} # 1500", o.0 / 1_000_000)?;
            self.next_opportunity += 1;
        }
        Ok(())
    }

    pub fn write(&mut self, e: &LogEvent) -> io::Result<()> {
        self.opportunities_until(e.at())?;
        let ms = |t: Time| t.0 / 1_000_000;
        match *e {
            LogEvent::Arrival { at, size, .. } => writeln!(self.out, "{} + {size}", ms(at)),
            LogEvent::Departure {
                at, size, arrival, ..
            } => writeln!(self.out, "{} - {size} {}", ms(at), ms(at) - ms(arrival)),
            LogEvent::Drop { at, size, .. } => writeln!(self.out, "{} d 1 {size}", ms(at)),
        }
    }

    /// Log the opportunities up to `end` and close the file.
    pub fn finish(mut self, end: Time) -> io::Result<()> {
        self.opportunities_until(end)?;
        self.out.finish()
    }
}

/// rtcc's per-packet log of both directions.
pub struct PacketLog {
    out: AtomicWriter,
}

impl PacketLog {
    pub fn create(path: &Path) -> io::Result<PacketLog> {
        let mut out = AtomicWriter::create(path)?;
        writeln!(
            out,
            "direction,flow,seq,size,enqueue_ns,depart_ns,recv_ns,dropped"
        )?;
        Ok(PacketLog { out })
    }

    /// Log a packet once it has settled (departed or dropped); arrivals add nothing. Rows come in
    /// the order packets settle; `seq` is each packet's number in its flow and direction in the
    /// order it arrived.
    pub fn write(&mut self, direction: usize, e: &LogEvent) -> io::Result<()> {
        let (flow, seq, size, arrival, depart, recv, dropped) = match *e {
            LogEvent::Arrival { .. } => return Ok(()),
            LogEvent::Departure {
                at,
                flow,
                seq,
                size,
                arrival,
                deliver,
            } => (
                flow,
                seq,
                size,
                arrival,
                Some(at),
                deliver,
                deliver.is_none(),
            ),
            LogEvent::Drop {
                flow,
                seq,
                size,
                arrival,
                ..
            } => (flow, seq, size, arrival, None, None, true),
        };
        let ns = |t: Option<Time>| t.map_or(-1, |t| t.0 as i64);
        writeln!(
            self.out,
            "{},{flow},{seq},{size},{},{},{},{}",
            ["up", "down"][direction],
            arrival.0,
            ns(depart),
            ns(recv),
            dropped as u8
        )
    }

    pub fn finish(self) -> io::Result<()> {
        self.out.finish()
    }
}
