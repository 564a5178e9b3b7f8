package main

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/rtcp"
)

var raceBuild bool // set by race_test.go

func TestMain(m *testing.M) {
	runtime.GOMAXPROCS(1) // as main does
	os.Exit(m.Run())
}

func TestReadLogErrorsNameTheLine(t *testing.T) {
	const hdr = "seq,send_us,recv_us,size,feedback_us\n"
	cases := []struct{ in, want string }{
		{"", "empty file"},
		{"seq,send_us,recv_us,size\n0,1,2,3\n", `header lacks column "feedback_us"`},
		{hdr + "0,1,2,3,4\n1,a,3,4,5\n", `log.csv:3: send_us="a" is not an integer`},
		{hdr + "0,1,2\n", "log.csv:2: 3 fields"},
		{hdr + "0,10,2,3,40\n0,11,2,3,40\n", "log.csv:3: seq=0 not above"},
		{hdr + "0,10,2,3,40\n1,9,2,3,40\n", "log.csv:3: send_us=9 before"},
		{hdr + "0,10,2,3,5\n", "log.csv:2: feedback_us=5 before send_us=10"},
		{hdr + "0,10,-2,3,40\n", "log.csv:2: recv_us and feedback_us"},
		{hdr + "0,10,2,0,40\n", "log.csv:2: size=0"},
		{hdr + "0,10,2,\"3,40\n", "log.csv"},
		{hdr, "no packets"},
	}
	for _, c := range cases {
		_, err := readLog(strings.NewReader(c.in), "log.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("readLog(%q) = %v, want error containing %q", c.in, err, c.want)
		}
	}
	// Columns in another order, extra columns, CRLF and blank lines are fine.
	pkts, err := readLog(strings.NewReader("feedback_us,size,recv_us,send_us,seq,x\r\n40,1200,-1,10,7,z\r\n\r\n"), "log.csv")
	if err != nil || len(pkts) != 1 || pkts[0].seq != 7 || pkts[0].recvUs != -1 || pkts[0].size != 1200 {
		t.Fatalf("got %+v, %v", pkts, err)
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"x.csv"})
	if err != nil || cfg.in != "x.csv" || cfg.startBps != 300_000 || cfg.minBps != 30_000 || cfg.maxBps != 30_000_000 {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	if _, err := parseFlags([]string{"-min", "500000", "x.csv"}); err == nil {
		t.Fatal("-min above -start accepted")
	}
}

// TestTWCCMatchesLog checks that the feedback handed to pion decodes, as
// pion's FeedbackAdapter decodes it (reference time x 64 ms + running sum of
// the deltas in microseconds), to the log's receive times: exactly by default,
// within 125 us and identically after a marshal/unmarshal round trip with
// -quantize.
func TestTWCCMatchesLog(t *testing.T) {
	recv := []int64{1_000_123, 1_000_999, -1, 1_070_001, 1_069_000, -1, 1_200_126}
	var pkts []packet
	var idx []int
	for i, r := range recv {
		pkts = append(pkts, packet{seq: int64(65530 + i), recvUs: r})
		idx = append(idx, i)
	}
	for _, quantize := range []bool{false, true} {
		lastRef := int64(-1)
		fb := buildTWCC(pkts, idx, 3, quantize, &lastRef)
		if quantize {
			fb.Header = rtcp.Header{
				Count: rtcp.FormatTCC, Type: rtcp.TypeTransportSpecificFeedback, Length: uint16(fb.MarshalSize()/4 - 1),
			}
			raw, err := fb.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			fb = &rtcp.TransportLayerCC{}
			if err := fb.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
		}
		if fb.BaseSequenceNumber != 65530 || fb.PacketStatusCount != uint16(len(recv)) {
			t.Fatalf("base %d count %d", fb.BaseSequenceNumber, fb.PacketStatusCount)
		}
		got := decodeLikePion(fb)
		for i, r := range recv {
			switch {
			case r < 0 && got[i] != -1:
				t.Errorf("quantize=%v: packet %d lost in the log, decoded %d", quantize, i, got[i])
			case r >= 0 && !quantize && got[i] != r+recvOffsetUs:
				t.Errorf("packet %d: decoded %d, want %d", i, got[i], r+recvOffsetUs)
			case r >= 0 && quantize && math.Abs(float64(got[i]-r-recvOffsetUs)) > 125:
				t.Errorf("quantized packet %d: decoded %d, want %d +- 125", i, got[i], r+recvOffsetUs)
			}
		}
	}
}

// decodeLikePion mirrors internal/cc/feedback_adapter.go (OnTransportCCFeedback).
func decodeLikePion(fb *rtcp.TransportLayerCC) []int64 {
	ref := int64(fb.ReferenceTime) * refTickUs
	var out []int64
	deltas := fb.RecvDeltas
	for _, c := range fb.PacketChunks {
		var syms []uint16
		switch c := c.(type) {
		case *rtcp.RunLengthChunk:
			for range c.RunLength {
				syms = append(syms, c.PacketStatusSymbol)
			}
		case *rtcp.StatusVectorChunk:
			syms = c.SymbolList
		}
		for _, s := range syms {
			if len(out) == int(fb.PacketStatusCount) {
				break
			}
			if s == rtcp.TypeTCCPacketReceivedSmallDelta || s == rtcp.TypeTCCPacketReceivedLargeDelta {
				ref += deltas[0].Delta
				deltas = deltas[1:]
				out = append(out, ref)
			} else {
				out = append(out, -1)
			}
		}
	}
	return out
}

// synthLog makes a 1200-byte packet every 10 ms (0.96 Mbit/s) for dur through
// a 20 ms path; from congestAt on, the path is a bottleneck of capBps that
// queues. Reports every 50 ms, 20 ms after their last packet arrives.
func synthLog(dur, congestAt time.Duration, capBps float64) []packet {
	var pkts []packet
	lastRecv := int64(0)
	// Not every 5 ms: pion's grouping would then merge all packets into one
	// arrival group that never completes (see README).
	for i := int64(0); i*10_000 < dur.Microseconds(); i++ {
		send := i * 10_000
		recv := send + 20_000
		if send >= congestAt.Microseconds() {
			recv = max(recv, lastRecv+int64(1200*8/capBps*1e6))
		}
		lastRecv = recv
		pkts = append(pkts, packet{line: int(i) + 2, seq: i, sendUs: send, recvUs: recv, size: 1200})
	}
	// A report every 50 ms of receiver time acknowledges what arrived since the last.
	for i := range pkts {
		pkts[i].feedbackUs = (pkts[i].recvUs/50_000+1)*50_000 + 20_000
	}
	return pkts
}

func runReplay(t *testing.T, pkts []packet) []row {
	t.Helper()
	var rows []row
	var err error
	synctest.Test(t, func(*testing.T) {
		rows, _, err = replay(pkts, groupReports(pkts), config{startBps: 300_000, minBps: 30_000, maxBps: 30_000_000})
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestReplayUsesLogTime: 60 s of log replays in well under 60 s, and with no
// congestion pion's delay-based estimate grows as 1.08^(log seconds), its
// multiplicative increase: so pion's clock is the log's.
func TestReplayUsesLogTime(t *testing.T) {
	wall := time.Now()
	rows := runReplay(t, synthLog(20*time.Second, time.Hour, 0))
	if el := time.Since(wall); el > 10*time.Second {
		t.Fatalf("replay of 20 s took %v of wall time", el)
	}
	var first *row
	for i := range rows {
		r := &rows[i]
		if !r.hasDelay {
			continue
		}
		if first == nil {
			first = r
			continue
		}
		secs := float64(r.timeUs-first.timeUs) / 1e6
		want := float64(first.delayBps) * math.Pow(1.08, secs)
		if math.Abs(float64(r.delayBps)/want-1) > 0.01 {
			t.Fatalf("at %d us delay estimate %d, want 1.08^%.2f x %d = %.0f", r.timeUs, r.delayBps, secs, first.delayBps, want)
		}
		if r.targetBps != min(r.delayBps, r.lossBps) {
			t.Fatalf("target %d is not min(delay %d, loss %d)", r.targetBps, r.delayBps, r.lossBps)
		}
	}
	if first == nil {
		var b strings.Builder
		writeRows(&b, rows[:10], true)
		t.Fatal("no delay-based update", b.String())
	}
}

// TestReplayIsDeterministicAndSeesOveruse: a queue building behind a
// 0.5 Mbit/s bottleneck makes pion's detector over-use and decrease, and two
// replays print the same bytes.
func TestReplayIsDeterministicAndSeesOveruse(t *testing.T) {
	pkts := synthLog(15*time.Second, 8*time.Second, 0.5e6)
	var outs [2]bytes.Buffer
	for i := range outs {
		if err := writeRows(&outs[i], runReplay(t, pkts), true); err != nil {
			t.Fatal(err)
		}
	}
	if outs[0].String() != outs[1].String() {
		if raceBuild {
			t.Log("two replays differ: expected under -race, whose randomised scheduler reorders pion's goroutines")
		} else {
			t.Fatal("two replays of the same log differ")
		}
	}
	if !strings.Contains(outs[0].String(), ",decrease,") || !strings.Contains(outs[0].String(), ",overuse,") {
		t.Fatalf("no overuse/decrease behind a growing queue:\n%s", outs[0].String())
	}
}
