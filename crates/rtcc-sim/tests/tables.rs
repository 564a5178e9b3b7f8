//! A run's logs as Arrow tables and Parquet files (`rtcc_sim::tables`): the documented columns,
//! one row per record, derived columns equal to the metrics' own, and Parquet files that read
//! back as the tables they were written from, whether the packet log was kept or streamed.

use crate::common;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::RecordBatch;
use arrow_select::concat::concat_batches;
use common::{run_quiet, scenario};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rtcc_core::metrics;
use rtcc_core::Time;
use rtcc_sim::tables::{self, PacketLogWriter, TABLES};
use rtcc_sim::{run_streaming, RunResult, Scenario};
use std::path::Path;

/// Video (lost packets, frames never shown), TCP and a reverse flow over a lossy, shallow link.
const MIXED: &str = r#"
duration = "6s"
seed = 3
[path.forward]
capacity = "4Mbps"
delay = "15ms"
queue = "20pkts"
loss = { model = "random", p = 0.01 }
[[flows]]
controller = "gcc"
[[flows]]
kind = "tcp"
controller = "cubic"
start = "2s"
[[flows]]
controller = "sqp"
direction = "reverse"
"#;

fn read_parquet(path: &Path) -> RecordBatch {
    let file = std::fs::File::open(path).expect("the file was written");
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .build()
        .expect("readable");
    let batches: Vec<RecordBatch> = reader.map(|b| b.expect("a batch")).collect();
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(tables::packet_schema);
    concat_batches(&schema, &batches).expect("row groups of one schema")
}

fn names(batch: &RecordBatch) -> Vec<String> {
    batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

fn int64(batch: &RecordBatch, column: &str) -> Vec<i64> {
    batch
        .column_by_name(column)
        .unwrap_or_else(|| panic!("no column {column}"))
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

fn end(sc: &Scenario) -> Time {
    Time(sc.duration.0)
}

#[test]
fn the_tables_have_the_documented_columns_and_one_row_per_record() {
    let sc = scenario(MIXED);
    let run = run_quiet(&sc);
    let t = |name| tables::table(&run, end(&sc), name).expect("a known table");
    assert_eq!(
        names(&t("packets")),
        [
            "flow",
            "seq",
            "kind",
            "size",
            "frame",
            "send_ns",
            "enqueue_ns",
            "depart_ns",
            "recv_ns",
            "dropped",
            "ecn"
        ]
    );
    assert_eq!(
        names(&t("frames")),
        [
            "flow",
            "frame",
            "capture_ns",
            "size",
            "target_bps",
            "packets",
            "first_send_ns",
            "last_send_ns",
            "complete_ns",
            "delay_ns",
            "keyframe",
            "psnr_db",
            "height",
            "display_ns",
            "latency_ns",
            "recovered",
            "unrecoverable"
        ]
    );
    assert_eq!(names(&t("state")), ["flow", "time_ns", "signal", "value"]);
    assert_eq!(names(&t("capacity")), ["time_ns", "bps"]);
    assert!(tables::table(&run, end(&sc), "other").is_none());

    let packets: usize = run.flows.iter().map(|f| f.packets.len()).sum();
    let frames: usize = run.flows.iter().map(|f| f.frames.len()).sum();
    assert_eq!(t("packets").num_rows(), packets);
    assert_eq!(t("frames").num_rows(), frames);
    assert_eq!(t("state").num_rows(), run.state.value.len());
    assert_eq!(t("capacity").num_rows(), run.capacity.len());
    let lost = int64(&t("packets"), "recv_ns")
        .iter()
        .filter(|&&r| r == -1)
        .count();
    assert!(lost > 0, "the lossy link loses packets: -1 marks them");
}

#[test]
fn derived_frame_columns_are_the_metrics_own() {
    let sc = scenario(MIXED);
    let run = run_quiet(&sc);
    let frames = tables::frames(&run, end(&sc));
    let (mut delay, mut display, mut latency) = (vec![], vec![], vec![]);
    for f in &run.flows {
        delay.extend(
            metrics::frame_delays(&f.frames, end(&sc))
                .iter()
                .map(|d| d.map_or(-1, |d| d.0 as i64)),
        );
        let shown = metrics::playout::display_times(&f.frames);
        display.extend(shown.iter().map(|t| t.map_or(-1, |t| t.0 as i64)));
        let lat = metrics::playout::frame_latencies(&f.frames, &shown, end(&sc));
        latency.extend(lat.iter().map(|d| d.0 as i64));
    }
    assert_eq!(int64(&frames, "delay_ns"), delay);
    assert_eq!(int64(&frames, "display_ns"), display);
    assert_eq!(int64(&frames, "latency_ns"), latency);
    assert!(
        display.contains(&-1),
        "some frames are never shown on this link, so the -1 case is exercised"
    );
}

#[test]
fn parquet_files_read_back_as_the_tables_kept_or_streamed() {
    let sc = scenario(MIXED);
    let kept: RunResult = run_quiet(&sc);
    let dir = std::env::temp_dir().join(format!("rtcc-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    tables::write_logs(&dir, &kept, end(&sc)).expect("writes");
    for name in &TABLES[1..] {
        let back = read_parquet(&dir.join(format!("{name}.parquet")));
        assert_eq!(
            back,
            tables::table(&kept, end(&sc), name).unwrap(),
            "{name}"
        );
    }

    let path = dir.join("packets.parquet");
    let mut writer = PacketLogWriter::create(&path).expect("creates");
    let mut error = None;
    run_streaming(&sc, None, &mut |_| {}, &mut |chunk| {
        if let Err(e) = writer.write(chunk) {
            error = Some(e);
        }
    })
    .expect("runs");
    assert_eq!(error, None);
    writer.finish().expect("finishes");
    let streamed = read_parquet(&path);
    // A streamed log comes in chunks as packets settle: flow by flow it is the kept log.
    let kept_packets = tables::table(&kept, end(&sc), "packets").unwrap();
    let by_flow = |b: &RecordBatch| -> Vec<Vec<(i64, i64, i64)>> {
        let flow = b
            .column_by_name("flow")
            .unwrap()
            .as_primitive::<arrow_array::types::UInt32Type>();
        let (send, recv, depart) = (
            int64(b, "send_ns"),
            int64(b, "recv_ns"),
            int64(b, "depart_ns"),
        );
        let mut out = vec![vec![]; sc.flows.len()];
        for i in 0..b.num_rows() {
            out[flow.value(i) as usize].push((send[i], depart[i], recv[i]));
        }
        out
    };
    assert_eq!(by_flow(&streamed), by_flow(&kept_packets));
    assert_eq!(streamed.num_rows(), kept_packets.num_rows());

    let empty = dir.join("empty.parquet");
    PacketLogWriter::create(&empty).unwrap().finish().unwrap();
    assert_eq!(
        read_parquet(&empty).num_rows(),
        0,
        "no packets: an empty table"
    );
    let missing = PacketLogWriter::create(&dir.join("no/such/folder/p.parquet"));
    assert!(
        missing.as_ref().is_err_and(|e| e.contains("cannot create")),
        "a file that cannot be created is an error naming it"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
