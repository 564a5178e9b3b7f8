"""Real video: real encoders (libvpx VP8, x264) over real clips in the loop, and quality measured
on decoded frames. See docs/encoders.md."""
