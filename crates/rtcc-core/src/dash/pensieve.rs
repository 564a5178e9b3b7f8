//! The throughput predictor of Pensieve's dash.js fork (Mao, Netravali and Alizadeh,
//! "Neural Adaptive Video Streaming with Pensieve", SIGCOMM 2017; `dash.js/src/streaming/
//! controllers/AbrController.js` of github.com/hongzimao/pensieve, `predict_throughput`), which
//! its BB, RB and FESTIVE baselines share.
//!
//! Each download gives a sample `thr = 8 · bytes / dt` with `dt` the time from the first to the
//! last byte, at least 0.1 s. The prediction over the last `horizon` = 5 downloads is
//! `Σ dt_i / Σ (dt_i / thr_i)`: a harmonic mean of the samples weighted by their download times
//! (the time the path actually delivered at each rate). 0 before any download.

use super::Download;

/// `horizon`: downloads the prediction looks at.
pub const HORIZON: usize = 5;
/// The shortest download time a sample is computed with, seconds.
pub const MIN_DOWNLOAD_TIME_S: f64 = 0.1;

/// (download time s, throughput bit/s) of a download.
pub fn sample(d: &Download) -> (f64, f64) {
    let dt = d.download_time().as_secs_f64().max(MIN_DOWNLOAD_TIME_S);
    (dt, 8.0 * d.bytes as f64 / dt)
}

/// The prediction, bit/s, from the downloads so far (oldest first).
pub fn predict(downloads: &[Download]) -> f64 {
    let from = downloads.len().saturating_sub(HORIZON);
    let (mut time, mut weighted) = (0.0, 0.0);
    for d in &downloads[from..] {
        let (dt, thr) = sample(d);
        time += dt;
        weighted += dt / thr;
    }
    if weighted > 0.0 {
        time / weighted
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::download;
    use super::*;

    #[test]
    fn the_prediction_is_a_download_time_weighted_harmonic_mean_of_the_last_five() {
        assert_eq!(predict(&[]), 0.0);
        // An old fast sample (dropped: six downloads), then 10 Mbit/s for 1 s, 5 Mbit/s for
        // 2 s, 10, 10 and 20 Mbit/s for 1 s each: 6 s / (1/10 + 2/5 + 1/10 + 1/10 + 1/20) s per
        // Mbit = 6 / 0.75 = 8 Mbit/s.
        let ds = [
            download(0, 0, 100.0, 1.0, 0.0, 1.0),
            download(1, 0, 10.0, 1.0, 0.0, 5.0),
            download(2, 0, 10.0, 2.0, 0.0, 10.0),
            download(3, 0, 10.0, 1.0, 0.0, 15.0),
            download(4, 0, 10.0, 1.0, 0.0, 20.0),
            download(5, 0, 20.0, 1.0, 0.0, 25.0),
        ];
        assert!((predict(&ds) - 8e6).abs() < 1.0, "{}", predict(&ds));
        // A 20 ms download counts as 0.1 s.
        let fast = [download(0, 0, 1.0, 0.02, 0.0, 1.0)];
        assert!((predict(&fast) - 10e6).abs() < 1.0, "1 Mbit / 0.1 s");
    }
}
