// Command pion-gcc-replay replays a packet log open-loop into pion/interceptor's
// send-side Google Congestion Control (github.com/pion/interceptor/pkg/gcc) and
// prints pion's estimates after every transport-wide feedback report.
//
// Input CSV (with header), one row per packet of one flow, in sequence order:
//
//	seq,send_us,recv_us,size,feedback_us
//
// Output CSV, one row per feedback report:
//
//	time_us,delay_bps,loss_bps,target_bps,state
//	  [-extra: ,updates,usage,measurement_ms,estimate_ms,threshold_ms,avg_loss,acks,acks_lost]
//
// pion's gcc reads the wall clock (time.Now) in about a dozen places. The whole
// replay therefore runs inside a testing/synctest bubble, whose fake clock is
// advanced to each packet's send_us and each report's feedback_us with
// time.Sleep. See README.md.
package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/logging"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

const (
	// pionVersion is the pinned module version (see go.mod).
	pionVersion = "v0.1.51"

	// The transport-cc header extension URI pion looks for (send_side_bwe.go:21).
	transportCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
	twccExtID      = 5
	mediaSSRC      = 0x1234

	// pion's FeedbackAdapter keeps the last 250 sent packets
	// (internal/cc/feedback_adapter.go:42); feedback for older ones is dropped.
	pionSendHistory = 250

	refTickUs   = 64_000 // TWCC reference time unit
	deltaTickUs = 250    // TWCC receive delta unit
	// Added to every recv_us: pion treats an arrival equal to time.Time{} as
	// "lost", and the receiver clock of the log may start at 0. A whole number of
	// reference ticks, so it changes no rounding.
	recvOffsetUs = 16 * refTickUs
)

type packet struct {
	line       int
	seq        int64
	sendUs     int64
	recvUs     int64 // -1: lost
	size       int
	feedbackUs int64 // -1: never reported
}

type report struct {
	timeUs int64
	pkts   []int // indices into the packet slice, in seq order
}

type config struct {
	in, out        string
	startBps       int
	minBps, maxBps int
	quantize       bool
	extra          bool
}

// row is what is printed for one feedback report.
type row struct {
	timeUs    int64
	hasDelay  bool // pion has produced at least one delay-based update
	delayBps  int
	lossBps   int
	targetBps int
	avgLoss   float64
	updates   int             // delay-controller updates during this report
	last      *gcc.DelayStats // the last of them
	acks      int             // acknowledgments pion could match to a sent packet
	acksLost  int             // of which reported lost
}

type summary struct {
	reports       int
	acksEvicted   int // reported packets already gone from pion's send history
	sizeRaised    int // packets smaller than the RTP header pion counts
	splitReports  int // reports whose packets were not a contiguous seq range
	delayUpdates  int // delay-controller updates seen through the log hook
	rtpHeaderSize int
}

func main() {
	runtime.GOMAXPROCS(1) // see README "Determinism"
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(2)
	}
	pkts, err := readLogFile(cfg.in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	reports := groupReports(pkts)

	out, closeOut := os.Stdout, func() error { return nil }
	if cfg.out != "" && cfg.out != "-" {
		f, err := os.Create(cfg.out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		out, closeOut = f, f.Close
	}

	var rows []row
	var sum summary
	var rerr error
	withBubble(
		func() { rows, sum, rerr = replay(pkts, reports, cfg) },
		func() int {
			err := rerr
			if err == nil {
				err = writeRows(out, rows, cfg.extra)
			}
			if cerr := closeOut(); err == nil {
				err = cerr
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "error:", err)
				return 1
			}
			printSummary(os.Stderr, rows, sum)
			return 0
		})
}

// errReported marks a flag error that the flag package has already printed.
var errReported = errors.New("bad flags")

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("pion-gcc-replay", flag.ContinueOnError)
	cfg := config{}
	fs.StringVar(&cfg.in, "i", "", "input CSV `file` (seq,send_us,recv_us,size,feedback_us); - or empty for stdin")
	fs.StringVar(&cfg.out, "o", "", "output CSV `file` (default stdout)")
	fs.IntVar(&cfg.startBps, "start", 300_000, "initial bitrate, bit/s")
	fs.IntVar(&cfg.minBps, "min", 30_000, "minimum bitrate, bit/s")
	fs.IntVar(&cfg.maxBps, "max", 30_000_000, "maximum bitrate, bit/s")
	fs.BoolVar(&cfg.quantize, "quantize", false,
		"quantize receive times as a TWCC packet on the wire does (64 ms reference, 250 us deltas, libwebrtc rounding); default: exact microseconds")
	fs.BoolVar(&cfg.extra, "extra", false,
		"add columns updates,usage,measurement_ms,estimate_ms,threshold_ms,avg_loss,acks,acks_lost")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: pion-gcc-replay [flags] [-i] LOG.csv\n"+
			"Replays LOG.csv open-loop into pion/interceptor %s pkg/gcc (SendSideBWE).\n", pionVersion)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, fmt.Errorf("%w: %v", errReported, err) // fs has printed it and the usage
	}
	switch {
	case fs.NArg() == 1 && cfg.in == "":
		cfg.in = fs.Arg(0)
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected arguments %q (give the input once, with -i or as the only argument)", fs.Args())
	}
	if cfg.minBps <= 0 || cfg.maxBps < cfg.minBps || cfg.startBps < cfg.minBps || cfg.startBps > cfg.maxBps {
		return cfg, fmt.Errorf("need 0 < -min <= -start <= -max (got %d, %d, %d)", cfg.minBps, cfg.startBps, cfg.maxBps)
	}
	return cfg, nil
}

// ---------------------------------------------------------------- input

func readLogFile(name string) ([]packet, error) {
	if name == "" || name == "-" {
		return readLog(os.Stdin, "stdin")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLog(f, name)
}

var columns = []string{"seq", "send_us", "recv_us", "size", "feedback_us"}

// readLog parses and checks the log. Errors name the file and line.
func readLog(r io.Reader, name string) ([]packet, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file (expected header %s)", name, strings.Join(columns, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range columns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s:1: header lacks column %q (expected %s)", name, c, strings.Join(columns, ","))
		}
	}
	var pkts []packet
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err) // csv errors carry the line
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) < len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields, header has %d", name, line, len(rec), len(header))
		}
		var v [5]int64
		for i, c := range columns {
			s := strings.TrimSpace(rec[col[c]])
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s=%q is not an integer", name, line, c, s)
			}
			v[i] = n
		}
		p := packet{line: line, seq: v[0], sendUs: v[1], recvUs: v[2], size: int(v[3]), feedbackUs: v[4]}
		if err := checkPacket(p, pkts); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		pkts = append(pkts, p)
	}
	if len(pkts) == 0 {
		return nil, fmt.Errorf("%s: no packets", name)
	}
	return pkts, nil
}

func checkPacket(p packet, prev []packet) error {
	const maxUs = int64(1) << 52 // ~142 years: differences stay within a time.Duration
	switch {
	case p.seq < 0:
		return fmt.Errorf("seq=%d is negative", p.seq)
	case p.recvUs < -1 || p.feedbackUs < -1:
		return fmt.Errorf("recv_us and feedback_us must be >= 0, or -1")
	case p.size <= 0 || p.size > 1<<20:
		return fmt.Errorf("size=%d out of range (1..1048576)", p.size)
	case p.sendUs < -maxUs || p.sendUs > maxUs || p.recvUs > maxUs-recvOffsetUs || p.feedbackUs > maxUs:
		return fmt.Errorf("time out of range (|t| < 2^52 us)")
	case p.feedbackUs >= 0 && p.feedbackUs < p.sendUs:
		return fmt.Errorf("feedback_us=%d before send_us=%d", p.feedbackUs, p.sendUs)
	}
	if len(prev) > 0 {
		q := prev[len(prev)-1]
		if p.seq <= q.seq {
			return fmt.Errorf("seq=%d not above the previous row's %d (rows must be in sequence order)", p.seq, q.seq)
		}
		if p.sendUs < q.sendUs {
			return fmt.Errorf("send_us=%d before the previous row's %d (packets are sent in seq order)", p.sendUs, q.sendUs)
		}
	}
	return nil
}

// groupReports collects the packets of each feedback report, in time order.
func groupReports(pkts []packet) []report {
	byTime := map[int64][]int{}
	for i, p := range pkts {
		if p.feedbackUs >= 0 {
			byTime[p.feedbackUs] = append(byTime[p.feedbackUs], i)
		}
	}
	reports := make([]report, 0, len(byTime))
	for t, idx := range byTime {
		reports = append(reports, report{timeUs: t, pkts: idx})
	}
	sort.Slice(reports, func(a, b int) bool { return reports[a].timeUs < reports[b].timeUs })
	return reports
}

// ---------------------------------------------------------------- replay

// replay feeds the log to a fresh pion SendSideBWE. It must run inside a
// synctest bubble: it moves the bubble's fake clock with time.Sleep.
func replay(pkts []packet, reports []report, cfg config) ([]row, summary, error) {
	sum := summary{reports: len(reports)}
	hook := &delayUpdates{}
	bwe, err := gcc.NewSendSideBWE(
		gcc.WithLoggerFactory(hookedLoggerFactory{logging.NewDefaultLoggerFactory(), hook}),
		gcc.SendSideBWEInitialBitrate(cfg.startBps),
		gcc.SendSideBWEMinBitrate(cfg.minBps),
		gcc.SendSideBWEMaxBitrate(cfg.maxBps),
		gcc.SendSideBWEPacer(gcc.NewNoOpPacer()), // send exactly at send_us, no pacing
	)
	if err != nil {
		return nil, sum, err
	}
	defer bwe.Close()

	ext := interceptor.RTPHeaderExtension{URI: transportCCURI, ID: twccExtID}
	writer := bwe.AddStream(
		&interceptor.StreamInfo{SSRC: mediaSSRC, RTPHeaderExtensions: []interceptor.RTPHeaderExtension{ext}},
		interceptor.RTPWriterFunc(func(*rtp.Header, []byte, interceptor.Attributes) (int, error) { return 0, nil }),
	)

	// Fake time: the bubble starts at 2000-01-01 UTC; that instant is log time
	// 0 (or the first send_us, if negative).
	origin := min(int64(0), pkts[0].sendUs)
	start := time.Now()
	sleepUntil := func(us int64) {
		if d := start.Add(time.Duration(us-origin) * time.Microsecond).Sub(time.Now()); d > 0 {
			time.Sleep(d)
		}
	}

	payload := make([]byte, 1<<20)
	sent := 0 // packets handed to pion so far
	lastRef := int64(-1)
	rows := make([]row, 0, len(reports))
	for ri, rep := range reports {
		for sent < len(pkts) && pkts[sent].sendUs <= rep.timeUs {
			p := pkts[sent]
			sleepUntil(p.sendUs)
			hdr := &rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: uint16(p.seq), SSRC: mediaSSRC}
			tcc, _ := (&rtp.TransportCCExtension{TransportSequence: uint16(p.seq)}).Marshal()
			if err := hdr.SetExtension(twccExtID, tcc); err != nil {
				return nil, sum, err
			}
			// pion counts header + payload as the packet size (feedback_adapter.go:74).
			sum.rtpHeaderSize = hdr.MarshalSize()
			n := p.size - hdr.MarshalSize()
			if n < 0 {
				n = 0
				sum.sizeRaised++
			}
			if _, err := writer.Write(hdr, payload[:n], interceptor.Attributes{}); err != nil {
				return nil, sum, fmt.Errorf("line %d: pion refused the packet: %w", p.line, err)
			}
			sent++
		}

		sleepUntil(rep.timeUs)
		var fbs []rtcp.Packet
		for _, run := range contiguousRuns(pkts, rep.pkts) {
			fbs = append(fbs, buildTWCC(pkts, run, uint8(ri), cfg.quantize, &lastRef))
		}
		if len(fbs) > 1 {
			sum.splitReports++
		}
		if err := bwe.WriteRTCP(fbs, nil); err != nil {
			return nil, sum, fmt.Errorf("report at feedback_us=%d (line %d): pion: %w", rep.timeUs, pkts[rep.pkts[0]].line, err)
		}
		// Let pion's two pipeline goroutines finish this report before reading.
		synctest.Wait()

		r := row{timeUs: rep.timeUs, targetBps: bwe.GetTargetBitrate()}
		for _, i := range rep.pkts {
			if i < sent-pionSendHistory {
				sum.acksEvicted++
				continue
			}
			r.acks++
			if pkts[i].recvUs < 0 {
				r.acksLost++
			}
		}
		st := bwe.GetStats()
		if d, _ := st["delayTargetBitrate"].(int); d > 0 { // 0 until the first delay update
			r.hasDelay = true
			r.delayBps = d
			r.lossBps, _ = st["lossTargetBitrate"].(int)
			r.avgLoss, _ = st["averageLoss"].(float64)
		}
		if ups := hook.take(); len(ups) > 0 {
			r.updates, r.last = len(ups), &ups[len(ups)-1]
			sum.delayUpdates += len(ups)
		}
		if r.hasDelay && sum.delayUpdates == 0 {
			return nil, sum, errors.New("pion reports a delay-based target but its delay-controller log hook never fired " +
				"(pion's logging changed?): the state column would be wrong")
		}
		rows = append(rows, r)
	}
	return rows, sum, nil
}

// contiguousRuns splits a report's packets (in seq order) into runs of
// consecutive seq numbers: one TWCC packet covers one contiguous range of at
// most 65535 packets.
func contiguousRuns(pkts []packet, idx []int) [][]int {
	var runs [][]int
	for k, i := range idx {
		if k == 0 || pkts[i].seq != pkts[idx[k-1]].seq+1 || len(runs[len(runs)-1]) == 0xffff {
			runs = append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], i)
	}
	return runs
}

// buildTWCC builds the transport-wide feedback pion would have parsed for the
// packets idx (consecutive seq numbers). Receive deltas are in microseconds
// (rtcp.RecvDelta.Delta); pion's FeedbackAdapter adds them to the reference
// time as they are. Unless quantize is set they are the exact recv_us
// differences, i.e. finer than the 250 us a marshalled packet can carry.
func buildTWCC(pkts []packet, idx []int, count uint8, quantize bool, lastRef *int64) *rtcp.TransportLayerCC {
	fb := &rtcp.TransportLayerCC{
		SenderSSRC:         1,
		MediaSSRC:          mediaSSRC,
		BaseSequenceNumber: uint16(pkts[idx[0]].seq),
		PacketStatusCount:  uint16(len(idx)),
		FbPktCount:         count,
	}
	ref := *lastRef
	for _, i := range idx {
		if pkts[i].recvUs >= 0 {
			ref = (pkts[i].recvUs + recvOffsetUs) / refTickUs
			break
		}
	}
	if ref < 0 {
		ref = recvOffsetUs / refTickUs
	}
	*lastRef = ref
	fb.ReferenceTime = uint32(ref) & 0xffffff

	running := ref * refTickUs
	var symbols []uint16
	for _, i := range idx {
		if pkts[i].recvUs < 0 {
			symbols = append(symbols, rtcp.TypeTCCPacketNotReceived)
			continue
		}
		d := pkts[i].recvUs + recvOffsetUs - running
		if quantize { // libwebrtc: round to nearest tick, halves away from zero
			if d >= 0 {
				d = (d + deltaTickUs/2) / deltaTickUs * deltaTickUs
			} else {
				d = -((-d + deltaTickUs/2) / deltaTickUs * deltaTickUs)
			}
		}
		running += d
		sym := rtcp.TypeTCCPacketReceivedSmallDelta
		if d < 0 || d > 255*deltaTickUs {
			sym = rtcp.TypeTCCPacketReceivedLargeDelta
		}
		symbols = append(symbols, sym)
		fb.RecvDeltas = append(fb.RecvDeltas, &rtcp.RecvDelta{Type: sym, Delta: d})
	}
	// Run-length chunks (at most 8191 symbols each, as on the wire).
	for k := 0; k < len(symbols); {
		n := 1
		for k+n < len(symbols) && symbols[k+n] == symbols[k] && n < 8191 {
			n++
		}
		fb.PacketChunks = append(fb.PacketChunks, &rtcp.RunLengthChunk{
			Type: rtcp.TypeTCCRunLengthChunk, PacketStatusSymbol: symbols[k], RunLength: uint16(n),
		})
		k += n
	}
	return fb
}

// ---------------------------------------------------------------- output

func writeRows(w io.Writer, rows []row, extra bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, "time_us,delay_bps,loss_bps,target_bps,state")
	if extra {
		fmt.Fprint(bw, ",updates,usage,measurement_ms,estimate_ms,threshold_ms,avg_loss,acks,acks_lost")
	}
	fmt.Fprintln(bw)
	for _, r := range rows {
		fmt.Fprintf(bw, "%d,", r.timeUs)
		if r.hasDelay {
			fmt.Fprintf(bw, "%d,%d", r.delayBps, r.lossBps)
		} else {
			fmt.Fprint(bw, ",")
		}
		fmt.Fprintf(bw, ",%d,", r.targetBps)
		if r.last != nil {
			fmt.Fprint(bw, r.last.State.String())
		}
		if extra {
			fmt.Fprintf(bw, ",%d,", r.updates)
			if r.last != nil {
				fmt.Fprintf(bw, "%s,%.3f,%.3f,%.3f", r.last.Usage.String(), ms(r.last.Measurement), ms(r.last.Estimate), ms(r.last.Threshold))
			} else {
				fmt.Fprint(bw, ",,,")
			}
			fmt.Fprint(bw, ",")
			if r.last != nil {
				fmt.Fprintf(bw, "%.6f", r.avgLoss)
			}
			fmt.Fprintf(bw, ",%d,%d", r.acks, r.acksLost)
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func printSummary(w io.Writer, rows []row, sum summary) {
	fmt.Fprintf(w, "pion/interceptor %s: %d feedback reports replayed\n", pionVersion, sum.reports)
	noUpdate := 0
	for _, r := range rows {
		if r.hasDelay && r.updates == 0 {
			noUpdate++
		}
	}
	fmt.Fprintf(w, "  %d delay-controller updates; %d reports after the first update produced none (empty state)\n",
		sum.delayUpdates, noUpdate)
	if sum.acksEvicted > 0 {
		fmt.Fprintf(w, "  note: %d reported packets had already left pion's %d-packet send history and were not seen by pion\n",
			sum.acksEvicted, pionSendHistory)
	}
	if sum.sizeRaised > 0 {
		fmt.Fprintf(w, "  note: %d packets were smaller than the %d-byte RTP header pion counts; pion saw %d bytes for them\n",
			sum.sizeRaised, sum.rtpHeaderSize, sum.rtpHeaderSize)
	}
	if sum.splitReports > 0 {
		fmt.Fprintf(w, "  note: %d reports covered non-contiguous seq ranges and were sent as several TWCC packets\n", sum.splitReports)
	}
	if len(rows) == 0 {
		return
	}
	last := rows[len(rows)-1].timeUs
	for a := int64(0); a < last; a += 10_000_000 {
		lo, hi := a+2_000_000, a+10_000_000
		if v, ok := medianTarget(rows, lo, hi); ok {
			fmt.Fprintf(w, "  median target %4.1f-%4.1f s: %.3f Mbit/s\n", float64(lo)/1e6, float64(hi)/1e6, v/1e6)
		}
	}
}

// medianTarget is the median target_bps over rows with lo <= time_us < hi.
func medianTarget(rows []row, lo, hi int64) (float64, bool) {
	var v []int
	for _, r := range rows {
		if r.timeUs >= lo && r.timeUs < hi {
			v = append(v, r.targetBps)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return float64(v[len(v)/2]), true
	}
	return float64(v[len(v)/2-1]+v[len(v)/2]) / 2, true
}

// ---------------------------------------------------------------- log hook

// pion's delay controller logs every update it hands on as
// Infof("delaystats: %v", DelayStats) (delay_based_bwe.go:67), from the
// goroutine that runs the detector. That is the only public place where each
// update, and so the rate controller's state, can be seen: GetStats keeps only
// the last one, and pion emits nothing while its rate controller holds.
type delayUpdates struct {
	mu      sync.Mutex
	pending []gcc.DelayStats
}

func (d *delayUpdates) add(ds gcc.DelayStats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = append(d.pending, ds)
}

func (d *delayUpdates) take() []gcc.DelayStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.pending
	d.pending = nil
	return p
}

type hookedLoggerFactory struct {
	base logging.LoggerFactory
	hook *delayUpdates
}

func (f hookedLoggerFactory) NewLogger(scope string) logging.LeveledLogger {
	l := f.base.NewLogger(scope)
	if scope == "gcc_delay_controller" {
		return delayLogger{l, f.hook}
	}
	return l
}

type delayLogger struct {
	logging.LeveledLogger
	hook *delayUpdates
}

func (l delayLogger) Infof(format string, args ...any) {
	if len(args) == 1 {
		if ds, ok := args[0].(gcc.DelayStats); ok {
			l.hook.add(ds)
		}
	}
	l.LeveledLogger.Infof(format, args...)
}

// ---------------------------------------------------------------- bubble

// withBubble runs f inside a testing/synctest bubble, then exits the process
// with after's exit code. synctest.Test needs a *testing.T, so the program
// hands itself to testing.Main with a single test; that test calls os.Exit,
// so testing.Main never prints its PASS/FAIL line.
func withBubble(f func(), after func() int) {
	os.Args = os.Args[:1] // testing.Main parses flag.CommandLine from os.Args
	stdout := os.Stdout
	os.Stdout = os.Stderr // anything the testing package prints stays off the CSV
	testing.Main(
		func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "replay", F: func(t *testing.T) {
			synctest.Test(t, func(*testing.T) { f() })
			os.Stdout = stdout
			os.Exit(after())
		}}},
		nil, nil,
	)
}
