//! A short TCP flow's downloads (RFC 8867 §5.7): how many completed and how long they took.
//!
//! A download's completion time runs from its start to the acknowledgement of its last byte at
//! the sender ([`crate::endpoint::short_tcp`] explains why that is the client's request-to-last-
//! byte time). Downloads still under way when the flow stops are not counted. Percentiles use
//! [`super::percentile`] (NumPy's `linear` method).

use crate::endpoint::Download;
use serde::Serialize;

/// Completed downloads and their completion times in seconds (`None`s without any).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DownloadSummary {
    pub downloads: usize,
    /// Data bytes of the completed downloads.
    pub bytes: u64,
    pub completion_mean_s: Option<f64>,
    pub completion_p50_s: Option<f64>,
    pub completion_p95_s: Option<f64>,
}

pub fn summarize(downloads: &[Download]) -> DownloadSummary {
    let mut times: Vec<f64> = downloads
        .iter()
        .map(|d| (d.end - d.start).as_secs_f64())
        .collect();
    times.sort_by(f64::total_cmp);
    DownloadSummary {
        downloads: downloads.len(),
        bytes: downloads.iter().map(|d| d.bytes).sum(),
        completion_mean_s: (!times.is_empty())
            .then(|| times.iter().sum::<f64>() / times.len() as f64),
        completion_p50_s: super::percentile(&times, 50.0),
        completion_p95_s: super::percentile(&times, 95.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    #[test]
    fn completion_times_are_end_minus_start() {
        let d = |start: u64, end: u64| Download {
            start: Time::from_millis(start),
            end: Time::from_millis(end),
            bytes: 40_000,
        };
        let s = summarize(&[d(0, 300), d(1000, 1100), d(5000, 5200)]);
        assert_eq!((s.downloads, s.bytes), (3, 120_000));
        assert!((s.completion_mean_s.unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(s.completion_p50_s, Some(0.2));
        assert!((s.completion_p95_s.unwrap() - 0.29).abs() < 1e-12);
        assert_eq!(summarize(&[]).completion_mean_s, None);
    }
}
