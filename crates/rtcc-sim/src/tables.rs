//! A run's logs as Arrow tables, and their Parquet files.
//!
//! A run folder holds four logs (docs/cli.md, "Run folder"); this module is the one place that
//! turns a run into them, so the command line, the Python API and a Rust user of this crate get
//! the same columns, derived ones included:
//!
//! | table | one row per | columns |
//! |---|---|---|
//! | `packets` | data packet | `flow, seq, kind, size, frame, send_ns, enqueue_ns, depart_ns, recv_ns, dropped, ecn` |
//! | `frames` | encoded frame | `flow, frame, capture_ns, size, target_bps, packets, first_send_ns, last_send_ns, complete_ns, delay_ns, keyframe, psnr_db, height, display_ns, latency_ns, recovered, unrecoverable` |
//! | `state` | controller signal sample | `flow, time_ns, signal, value` |
//! | `capacity` | 100 ms bin of the forward link | `time_ns, bps` (+ `bps.<hop>` per hop of a multi-hop path) |
//!
//! For a path of several hops, `bps` is the tightest hop's forward capacity at each instant and
//! one more column per hop, `bps.<hop name>`, holds that hop's own.
//!
//! Times are integer nanoseconds; −1 stands for "never" (a packet lost, a frame not shown).
//! `delay_ns` (SQP's frame delay, `metrics::frame_delays`), `display_ns` and `latency_ns`
//! (`metrics::playout`) are computed here from the frame records, not by the caller.
//!
//! [`PacketLogWriter`] streams a packet log to Parquet chunk by chunk, as
//! [`crate::run::run_streaming_with_registry`] hands the records over, in row groups of
//! [`PACKET_ROW_GROUP`] rows (each flow's packets in send order, flows interleaved);
//! [`TableWriter`] does the same for the frame log (each flow's frames in frame order, as they
//! settle) and the state log of [`crate::run::run_with_sinks`]; [`write_logs`] writes a
//! finished run's other three tables. Packet logs are written with
//! zstd and without dictionaries (nanosecond times do not repeat: a dictionary only doubled the
//! file); the other tables keep the writer's default dictionaries (the state log's signal names).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use rtcc_core::metrics::{self, PacketRecord};
use rtcc_core::Time;

use crate::frames::SettledFrame;
use crate::run::RunResult;
use crate::sim::{StateLog, FRAME_CHUNK, STREAM_CHUNK};

/// The names of the four logs, as their files are named in a run folder (`<name>.parquet`).
pub const TABLES: [&str; 4] = ["packets", "frames", "state", "capacity"];

fn ns(t: Option<Time>) -> i64 {
    t.map_or(-1, |t| t.0 as i64)
}

fn batch(schema: SchemaRef, columns: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_new(schema, columns).expect("columns match the table's schema")
}

/// The packet log's schema.
pub fn packet_schema() -> SchemaRef {
    use DataType::*;
    Arc::new(Schema::new(vec![
        Field::new("flow", UInt32, false),
        Field::new("seq", UInt64, false),
        Field::new("kind", UInt8, false),
        Field::new("size", UInt32, false),
        Field::new("frame", Int64, false),
        Field::new("send_ns", Int64, false),
        Field::new("enqueue_ns", Int64, false),
        Field::new("depart_ns", Int64, false),
        Field::new("recv_ns", Int64, false),
        Field::new("dropped", Boolean, false),
        Field::new("ecn", UInt8, false),
    ]))
}

/// The packet log of `parts`, one after the other (`kind`: 0 media, 1 padding, 2
/// retransmission, 3 probe, 4 FEC; `frame` −1 for packets that carry none).
pub fn packets(parts: &[&[PacketRecord]]) -> RecordBatch {
    let all = || parts.iter().flat_map(|p| p.iter());
    batch(
        packet_schema(),
        vec![
            Arc::new(UInt32Array::from_iter_values(all().map(|p| p.flow))),
            Arc::new(UInt64Array::from_iter_values(all().map(|p| p.seq))),
            Arc::new(UInt8Array::from_iter_values(all().map(|p| p.kind as u8))),
            Arc::new(UInt32Array::from_iter_values(all().map(|p| p.size))),
            Arc::new(Int64Array::from_iter_values(
                all().map(|p| p.frame.map_or(-1, |f| f as i64)),
            )),
            Arc::new(Int64Array::from_iter_values(all().map(|p| p.send.0 as i64))),
            Arc::new(Int64Array::from_iter_values(
                all().map(|p| p.enqueue.0 as i64),
            )),
            Arc::new(Int64Array::from_iter_values(all().map(|p| ns(p.depart)))),
            Arc::new(Int64Array::from_iter_values(all().map(|p| ns(p.recv)))),
            Arc::new(BooleanArray::from_iter(all().map(|p| Some(p.dropped)))),
            Arc::new(UInt8Array::from_iter_values(all().map(|p| p.ecn as u8))),
        ],
    )
}

/// The frame log's schema.
pub fn frame_schema() -> SchemaRef {
    use DataType::*;
    Arc::new(Schema::new(vec![
        Field::new("flow", UInt32, false),
        Field::new("frame", Int64, false),
        Field::new("capture_ns", Int64, false),
        Field::new("size", UInt32, false),
        Field::new("target_bps", Float64, false),
        Field::new("packets", UInt32, false),
        Field::new("first_send_ns", Int64, false),
        Field::new("last_send_ns", Int64, false),
        Field::new("complete_ns", Int64, false),
        Field::new("delay_ns", Int64, false),
        Field::new("keyframe", Boolean, false),
        Field::new("psnr_db", Float64, false),
        Field::new("height", UInt32, false),
        Field::new("display_ns", Int64, false),
        Field::new("latency_ns", Int64, false),
        Field::new("recovered", Boolean, false),
        Field::new("unrecoverable", Boolean, false),
    ]))
}

/// The frame log of every flow of `result`, flow by flow in capture order, with the derived
/// `delay_ns`, `display_ns` and `latency_ns` (the run ends at `end`).
pub fn frames(result: &RunResult, end: Time) -> RecordBatch {
    let mut rows = Vec::new();
    for f in &result.flows {
        let later = metrics::frame_stats::later_events(&f.frames);
        for (record, later) in f.frames.iter().zip(later) {
            let (delay, latency) = metrics::frame_stats::derive(record, later, end);
            rows.push(SettledFrame {
                record: *record,
                delay,
                latency,
            });
        }
    }
    frame_rows(&rows)
}

/// Frame log rows: each record with its derived values ([`SettledFrame`]).
pub fn frame_rows(rows: &[SettledFrame]) -> RecordBatch {
    let int64 = |f: &dyn Fn(&SettledFrame) -> i64| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(rows.iter().map(f)))
    };
    let flag = |f: &dyn Fn(&metrics::FrameRecord) -> bool| -> ArrayRef {
        Arc::new(BooleanArray::from_iter(
            rows.iter().map(|r| Some(f(&r.record))),
        ))
    };
    let all = || rows.iter().map(|r| &r.record);
    batch(
        frame_schema(),
        vec![
            Arc::new(UInt32Array::from_iter_values(all().map(|f| f.flow))),
            int64(&|r| r.record.frame as i64),
            int64(&|r| r.record.capture.0 as i64),
            Arc::new(UInt32Array::from_iter_values(all().map(|f| f.size))),
            Arc::new(Float64Array::from_iter_values(all().map(|f| f.target_bps))),
            Arc::new(UInt32Array::from_iter_values(
                all().map(|f| f.packets as u32),
            )),
            int64(&|r| ns(r.record.first_send)),
            int64(&|r| ns(r.record.last_send)),
            int64(&|r| ns(r.record.complete)),
            int64(&|r| r.delay.map_or(-1, |d| d.0 as i64)),
            flag(&|f| f.keyframe),
            Arc::new(Float64Array::from_iter_values(
                all().map(|f| f.psnr_db.unwrap_or(f64::NAN)),
            )),
            Arc::new(UInt32Array::from_iter_values(
                all().map(|f| f.resolution.map_or(0, |r| r.height)),
            )),
            int64(&|r| ns(r.record.display)),
            int64(&|r| r.latency.0 as i64),
            flag(&|f| f.recovered),
            flag(&|f| f.unrecoverable),
        ],
    )
}

/// The state log's schema.
pub fn state_schema() -> SchemaRef {
    use DataType::*;
    Arc::new(Schema::new(vec![
        Field::new("flow", UInt32, false),
        Field::new("time_ns", Int64, false),
        Field::new("signal", Utf8, false),
        Field::new("value", Float64, false),
    ]))
}

/// The controllers' state log, long format: one row per (flow, time, signal) sample.
pub fn state(log: &StateLog) -> RecordBatch {
    batch(
        state_schema(),
        vec![
            Arc::new(UInt32Array::from(log.flow.clone())),
            Arc::new(Int64Array::from_iter_values(
                log.time.iter().map(|t| t.0 as i64),
            )),
            Arc::new(StringArray::from_iter_values(log.signal.iter())),
            Arc::new(Float64Array::from(log.value.clone())),
        ],
    )
}

/// The forward capacity in 100 ms bins (empty for an unlimited path): the path's tightest
/// (`bps`) and, for a multi-hop path, each hop's (`bps.<hop>`, from `hops`: name and the same
/// bins, or none for an unlimited hop).
pub fn capacity(bins: &[(Time, f64)], hops: &[(String, Vec<(Time, f64)>)]) -> RecordBatch {
    use DataType::*;
    let mut fields = vec![
        Field::new("time_ns", Int64, false),
        Field::new("bps", Float64, false),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            bins.iter().map(|b| b.0 .0 as i64),
        )),
        Arc::new(Float64Array::from_iter_values(bins.iter().map(|b| b.1))),
    ];
    for (name, hop_bins) in hops {
        fields.push(Field::new(format!("bps.{name}"), Float64, false));
        // An unlimited hop logs no bins: its column is infinite.
        let value = |i: usize| hop_bins.get(i).map_or(f64::INFINITY, |b| b.1);
        columns.push(Arc::new(Float64Array::from_iter_values(
            (0..bins.len()).map(value),
        )));
    }
    batch(Arc::new(Schema::new(fields)), columns)
}

/// A run's table by name ([`TABLES`]); `packets` is empty for a run whose packet log was
/// streamed or forgotten.
pub fn table(result: &RunResult, end: Time, name: &str) -> Option<RecordBatch> {
    Some(match name {
        "packets" => {
            let parts: Vec<&[PacketRecord]> = result.flows.iter().map(|f| &f.packets[..]).collect();
            packets(&parts)
        }
        "frames" => frames(result, end),
        "state" => state(&result.state),
        "capacity" => capacity(&result.capacity, &result.hop_capacity),
        _ => return None,
    })
}

fn properties(dictionary: bool) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_dictionary_enabled(dictionary)
        .build()
}

fn create(path: &Path) -> Result<BufWriter<File>, String> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| format!("{}: cannot create: {e}", path.display()))
}

fn failed(path: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: cannot write: {e}", path.display())
}

/// Write one table to a Parquet file (a packet log without dictionaries, as [`PacketLogWriter`]).
pub fn write_parquet(path: &Path, table: &RecordBatch) -> Result<(), String> {
    let dictionary = table.schema() != packet_schema();
    let mut w = ArrowWriter::try_new(create(path)?, table.schema(), Some(properties(dictionary)))
        .map_err(|e| failed(path, e))?;
    w.write(table).map_err(|e| failed(path, e))?;
    w.close().map(|_| ()).map_err(|e| failed(path, e))
}

/// Write a finished run's `frames`, `state` and `capacity` tables into `folder` (the run ends at
/// `end`); the packet log is streamed by a [`PacketLogWriter`], or written with
/// [`write_parquet`] of [`table`]`(…, "packets")` when it was kept.
pub fn write_logs(folder: &Path, result: &RunResult, end: Time) -> Result<(), String> {
    for name in &TABLES[1..] {
        let table = table(result, end, name).expect("a known table");
        write_parquet(&folder.join(format!("{name}.parquet")), &table)?;
    }
    Ok(())
}

/// Rows in a row group of a streamed packet log. A Parquet writer keeps every row group's
/// metadata until it closes the file, about 13 KB for the packet log's eleven columns: with
/// row groups of 65,536 packets an hour at 100 Mbit/s (516 row groups) held 7 MB more at its
/// end than at its start; with these, under 2 MB, for about 3 MB more of the row group being
/// written.
pub const PACKET_ROW_GROUP: usize = 1 << 18;

/// Streams a table to a Parquet file chunk by chunk, in row groups of [`PACKET_ROW_GROUP`]
/// packets, [`FRAME_CHUNK`] frames or [`STREAM_CHUNK`] state samples: what a streaming run hands
/// its sinks ([`crate::sim::Sinks`]) goes to one of these.
pub struct TableWriter {
    writer: ArrowWriter<BufWriter<File>>,
    path: std::path::PathBuf,
}

impl TableWriter {
    /// A writer of `schema`'s table; dictionaries only where names repeat (not for the packet
    /// log, see the module header).
    pub fn create(path: &Path, schema: SchemaRef) -> Result<Self, String> {
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_dictionary_enabled(schema != packet_schema())
            .set_max_row_group_row_count(Some(if schema == packet_schema() {
                PACKET_ROW_GROUP
            } else if schema == frame_schema() {
                FRAME_CHUNK
            } else {
                STREAM_CHUNK
            }))
            .build();
        let writer = ArrowWriter::try_new(create(path)?, schema, Some(properties))
            .map_err(|e| failed(path, e))?;
        Ok(Self {
            writer,
            path: path.to_path_buf(),
        })
    }

    /// Append one chunk (a row group is written whenever a row group's rows are buffered).
    pub fn write(&mut self, chunk: &RecordBatch) -> Result<(), String> {
        self.writer.write(chunk).map_err(|e| failed(&self.path, e))
    }

    /// Finish the file (an empty table when no chunk was written).
    pub fn finish(self) -> Result<(), String> {
        self.writer
            .close()
            .map(|_| ())
            .map_err(|e| failed(&self.path, e))
    }
}

/// Streams a packet log to a Parquet file, in row groups of [`PACKET_ROW_GROUP`] records.
pub struct PacketLogWriter(TableWriter);

impl PacketLogWriter {
    pub fn create(path: &Path) -> Result<Self, String> {
        TableWriter::create(path, packet_schema()).map(Self)
    }

    /// Append one chunk (a row group is written whenever [`PACKET_ROW_GROUP`] rows are
    /// buffered).
    pub fn write(&mut self, chunk: &[PacketRecord]) -> Result<(), String> {
        self.0.write(&packets(&[chunk]))
    }

    /// Finish the file (an empty table when no chunk was written).
    pub fn finish(self) -> Result<(), String> {
        self.0.finish()
    }
}
