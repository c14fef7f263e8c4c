package replication

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The ISR rules as scripts: each file in testdata/isr drives one
// leaderState (broker 1, replicas 1, 2, 3, replica.lag.time.max.ms 100ms,
// leader epoch 5, partition epoch 7) through commands and compares what
// each command did with the block under it. A new rule is a new file;
// `go test ./replication/ -run TestISRScripts -rewrite` writes the blocks
// from what the code does (review the diff before committing it).
//
// A directive is a command line, a line "----" and the expected output,
// ended by a blank line; lines starting with # are comments. Commands
// (times are milliseconds on the test's clock, as "100" or "100ms"; t=
// moves the clock before the command runs and stays):
//
//	new isr=1,2 leo=0 hw=0 min-isr=1   a leader state
//	append leo=20 [t=..]                the leader's log end moved
//	fetch follower=2 offset=10 [t=..]   a follower fetch at offset
//	tick [t=..]                          the periodic ISR check
//	wait id=1 offset=10                 park an acks=all produce needing HW >= offset
//	accept                               the controller accepts the last proposal
//	alter-done outcome=ok|rejected|wait-for-metadata|retry [proposal=N]
//	                                     an AlterPartition answer for proposal N
//	                                     (1-based; the last one by default)
//	metadata leader-epoch=6 partition-epoch=8 isr=1,2 [min-isr=1] [t=..]
//	                                     new leader and ISR from metadata
//	resign                               leadership lost
//
// Output: a line per new proposal and per answered produce, then the state
// (hw, committed ISR, whether a change is in flight).

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata scripts from the code's behaviour")

func TestISRScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "isr", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ISR scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runISRScript(t, f) })
	}
}

type scriptDirective struct {
	pos      string // file:line of the command
	cmd      string
	args     map[string]string
	expected string
}

func runISRScript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var sh *isrScript
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			continue
		}
		d := scriptDirective{pos: fmt.Sprintf("%s:%d", path, line), args: map[string]string{}}
		fields := strings.Fields(l)
		d.cmd = fields[0]
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				t.Fatalf("%s: argument %q is not key=value", d.pos, f)
			}
			d.args[k] = v
		}
		if sep, ok := next(); !ok || sep != "----" {
			t.Fatalf("%s: want ---- after the command", d.pos)
		}
		var exp []string
		for {
			e, ok := next()
			if !ok || e == "" {
				break
			}
			exp = append(exp, e)
		}
		d.expected = strings.Join(exp, "\n")

		if d.cmd == "new" {
			sh = newISRScript(t, d)
		} else if sh == nil {
			t.Fatalf("%s: the script must start with new", d.pos)
		}
		got := sh.run(d)
		if !*rewrite && got != d.expected {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", d.pos, l, got, d.expected)
		}
		out.WriteString(l + "\n----\n" + got + "\n\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// isrScript runs directives against an isrHarness, reporting what each
// one added to the harness's proposals and answered produces.
type isrScript struct {
	t     *testing.T
	h     *isrHarness
	props int
	done  []uint64
}

func newISRScript(t *testing.T, d scriptDirective) *isrScript {
	s := &isrScript{t: t}
	s.h = newISR(t, s.ids(d, "isr"), s.int(d, "leo", 0), s.int(d, "hw", 0), int(s.int(d, "min-isr", 1)))
	return s
}

func (s *isrScript) run(d scriptDirective) string {
	h := s.h
	if v, ok := d.args["t"]; ok {
		h.at(s.ms(d, v))
	}
	switch d.cmd {
	case "new":
	case "append":
		h.append(s.int(d, "leo", -1))
	case "fetch":
		h.fetch(int32(s.int(d, "follower", -1)), s.int(d, "offset", -1))
	case "tick":
		h.tick()
	case "wait":
		h.collect(h.s.AddWaiter(uint64(s.int(d, "id", -1)), s.int(d, "offset", -1)))
	case "accept":
		if len(h.props) == 0 {
			s.t.Fatalf("%s: no proposal to accept", d.pos)
		}
		h.accept()
	case "alter-done":
		p := int(s.int(d, "proposal", int64(len(h.props))))
		if p < 1 || p > len(h.props) {
			s.t.Fatalf("%s: no proposal %d (%d made)", d.pos, p, len(h.props))
		}
		outcome, ok := map[string]AlterPartitionOutcome{
			"ok": AlterOK, "rejected": AlterRejected, "wait-for-metadata": AlterWaitForMetadata, "retry": AlterRetry,
		}[d.args["outcome"]]
		if !ok {
			s.t.Fatalf("%s: unknown outcome %q", d.pos, d.args["outcome"])
		}
		var result LeaderAndISR
		if outcome == AlterOK {
			pr := h.props[p-1]
			result = LeaderAndISR{LeaderEpoch: pr.LeaderEpoch, PartitionEpoch: pr.PartitionEpoch + 1, Replicas: []int32{1, 2, 3}, ISR: pr.NewISR}
		}
		h.collect(h.s.AlterPartitionDone(h.props[p-1].Seq, outcome, result))
	case "metadata":
		h.collect(h.s.UpdateLeaderAndISR(LeaderAndISR{
			LeaderEpoch: int32(s.int(d, "leader-epoch", -1)), PartitionEpoch: int32(s.int(d, "partition-epoch", -1)),
			Replicas: []int32{1, 2, 3}, ISR: s.ids(d, "isr"), MinISR: int(s.int(d, "min-isr", 1)),
		}, h.now))
	case "resign":
		h.collect(Effects{Done: h.s.Resign()})
	default:
		s.t.Fatalf("%s: unknown command %q", d.pos, d.cmd)
	}
	return s.report()
}

func (s *isrScript) report() string {
	h := s.h
	var b strings.Builder
	for _, p := range h.props[s.props:] {
		isr := slices.Clone(p.NewISR)
		slices.Sort(isr)
		fmt.Fprintf(&b, "propose isr=%s leader-epoch=%d partition-epoch=%d\n", fmtIDs(isr), p.LeaderEpoch, p.PartitionEpoch)
	}
	s.props = len(h.props)
	var ids []uint64
	for id := range h.done {
		if !slices.Contains(s.done, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "produce %d answered: %s\n", id, waiterResult(h.done[id]))
	}
	s.done = append(s.done, ids...)
	isr := slices.Clone(h.s.ISR())
	slices.Sort(isr)
	fmt.Fprintf(&b, "hw=%d isr=%s inflight=%t", h.s.HW(), fmtIDs(isr), h.s.Inflight())
	return b.String()
}

func waiterResult(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrNotEnoughReplicasAfterAppend):
		return "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
	case errors.Is(err, ErrNotLeaderOrFollower):
		return "NOT_LEADER_OR_FOLLOWER"
	}
	return err.Error()
}

func fmtIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (s *isrScript) int(d scriptDirective, key string, def int64) int64 {
	v, ok := d.args[key]
	if !ok {
		if def < 0 {
			s.t.Fatalf("%s: %s needs %s=", d.pos, d.cmd, key)
		}
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		s.t.Fatalf("%s: %s=%q: %v", d.pos, key, v, err)
	}
	return n
}

func (s *isrScript) ms(d scriptDirective, v string) int64 {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		s.t.Fatalf("%s: t=%q: %v", d.pos, v, err)
	}
	return dur.Milliseconds()
}

func (s *isrScript) ids(d scriptDirective, key string) []int32 {
	v, ok := d.args[key]
	if !ok {
		s.t.Fatalf("%s: %s needs %s=", d.pos, d.cmd, key)
	}
	var out []int32
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			s.t.Fatalf("%s: %s=%q: %v", d.pos, key, v, err)
		}
		out = append(out, int32(n))
	}
	return out
}
