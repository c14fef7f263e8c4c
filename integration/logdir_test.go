package integration

// A failing disk takes its log dir offline, not the broker (issue item
// 12). The brokers run with GOKAFKA_TEST_FAIL_LOG_DIR naming one of their
// log dirs: every I/O there fails with EIO once "<dir>.fail" exists in the
// broker's working directory, which is how a test makes a real process's
// disk fail on demand.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceSync produces n records with acks=all to topic/partition p and
// fails the test on any error.
func produceSync(t *testing.T, cl *kgo.Client, topic string, p int32, tag string, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s-%d-%d", tag, p, i))}
		if err := cl.ProduceSync(testCtx(t, 60*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("produce %s to %s-%d: %v", tag, topic, p, err)
		}
	}
}

func manualPartitioner() kgo.Opt { return kgo.RecordPartitioner(kgo.ManualPartitioner()) }

func TestLogDirFailureMovesItsPartitionsAndKeepsServingTheOthers(t *testing.T) {
	c := startCluster(t, map[string]string{
		"GOKAFKA_LOG_DIRS":          "data,data2",
		"GOKAFKA_TEST_FAIL_LOG_DIR": "data2",
	})
	const topic = "logdir-fail"
	// Node 1 leads every partition; its replicas spread over both dirs.
	c.createTopicAssigned(t, topic, [][]int32{{1, 2, 3}, {1, 3, 2}, {1, 2, 3}, {1, 3, 2}})
	adm := c.admin(t)
	// Node 1 creates each partition's log as it applies its leadership,
	// which may come after CreateTopics returns.
	var dirs kadm.DescribedLogDirs
	eventually(t, 30*time.Second, func() error {
		var err error
		if dirs, err = adm.DescribeBrokerLogDirs(testCtx(t, 30*time.Second), 1, nil); err != nil {
			return fmt.Errorf("DescribeLogDirs: %w", err)
		}
		for p := int32(0); p < 4; p++ {
			if _, ok := dirs.LookupPartition(topic, p); !ok {
				return fmt.Errorf("DescribeLogDirs of node 1 does not list %s-%d yet", topic, p)
			}
		}
		return nil
	})
	failing, _ := filepath.Abs(filepath.Join(c.node(1).root, "data2"))
	healthy, _ := filepath.Abs(filepath.Join(c.node(1).root, "data"))
	var inFailing, inHealthy []int32
	for p := int32(0); p < 4; p++ {
		d, ok := dirs.LookupPartition(topic, p)
		if !ok {
			t.Fatalf("DescribeLogDirs of node 1 does not list %s-%d: %+v", topic, p, dirs)
		}
		switch d.Dir {
		case failing:
			inFailing = append(inFailing, p)
		case healthy:
			inHealthy = append(inHealthy, p)
		default:
			t.Fatalf("%s-%d in %q, want %q or %q", topic, p, d.Dir, healthy, failing)
		}
	}
	if len(inFailing) == 0 || len(inHealthy) == 0 {
		t.Fatalf("partitions not spread over both dirs: %v in %s, %v in %s", inFailing, failing, inHealthy, healthy)
	}
	for _, d := range dirs {
		if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Fatalf("healthy dir described as %+v", d)
		}
	}

	cl := c.client(t, manualPartitioner(), kgo.RequiredAcks(kgo.AllISRAcks()))
	for p := int32(0); p < 4; p++ {
		produceSync(t, cl, topic, p, "before", 5)
	}

	// The disk under data2 fails.
	if err := os.WriteFile(filepath.Join(c.node(1).root, "data2.fail"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The next write there hits it; the broker answers
	// KAFKA_STORAGE_ERROR (retriable), the controller moves the
	// leadership, and the client's retry lands on the new leader.
	for _, p := range inFailing {
		produceSync(t, cl, topic, p, "after", 5)
	}
	for _, p := range inFailing {
		s := c.waitPartition(t, topic, p, "a new leader and node 1 out of the ISR", func(s partState) bool {
			return s.Leader > 0 && s.Leader != 1 && !s.inISR(1)
		})
		t.Logf("%s-%d (failed dir): %v", topic, p, s)
	}
	eventually(t, 30*time.Second, func() error {
		resp, err := c.metadataFrom(2, topic)
		if err != nil {
			return err
		}
		for _, mp := range resp.Topics[0].Partitions {
			offline := slices.Contains(mp.OfflineReplicas, 1)
			if want := slices.Contains(inFailing, mp.Partition); offline != want {
				return fmt.Errorf("%s-%d: offline replicas %v, want node 1 listed: %v", topic, mp.Partition, mp.OfflineReplicas, want)
			}
		}
		return nil
	})
	// The healthy dir's partitions stay on node 1, with node 1 in the ISR.
	for _, p := range inHealthy {
		produceSync(t, cl, topic, p, "after", 5)
		s, err := c.partition(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if s.Leader != 1 || !s.inISR(1) || len(s.ISR) != 3 {
			t.Fatalf("%s-%d (healthy dir) is %v, want still led by 1 with a full ISR", topic, p, s)
		}
	}
	c.node(1).CheckAlive(t)

	// DescribeLogDirs reports the failed dir offline.
	dirs, err := adm.DescribeBrokerLogDirs(testCtx(t, 30*time.Second), 1, nil)
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	if d := dirs[failing]; !errors.Is(d.Err, kerr.KafkaStorageError) || len(d.Topics) != 0 {
		t.Fatalf("failed dir described as %+v, want KAFKA_STORAGE_ERROR and no partitions", d)
	}
	if d := dirs[healthy]; d.Err != nil || len(d.Topics[topic]) != len(inHealthy) {
		t.Fatalf("healthy dir described as %+v", d)
	}

	// Every acknowledged record is readable.
	got := c.consumeAll(t, topic, 4)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	for p := int32(0); p < 4; p++ {
		for _, tag := range []string{"before", "after"} {
			for i := range 5 {
				if v := fmt.Sprintf("%s-%d-%d", tag, p, i); !seen[v] {
					t.Fatalf("acknowledged record %q missing", v)
				}
			}
		}
	}
}

func TestOnlyLogDirFailingShutsTheBrokerDownAndRestartServesAcknowledged(t *testing.T) {
	b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_TEST_FAIL_LOG_DIR": "data"}})
	const topic = "only-dir"
	createTopic(t, kadm.NewClient(b.client(t)), topic, 1, nil)
	cl := b.client(t, manualPartitioner(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(2))
	produceSync(t, cl, topic, 0, "acked", 20)

	b.mu.Lock()
	b.expected = true // it is about to exit on its own
	b.mu.Unlock()
	trigger := filepath.Join(b.root, "data.fail")
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("doomed")}
	err := cl.ProduceSync(testCtx(t, 30*time.Second), r).FirstErr()
	if err == nil {
		t.Fatal("produce to a broker whose only log dir failed succeeded")
	}
	t.Logf("produce after the failure: %v", err)
	cl.Close()
	select {
	case <-b.done:
	case <-time.After(60 * time.Second):
		t.Fatal("broker did not shut down after its only log dir failed")
	}
	exitErr := b.exitError()
	if exitErr == nil {
		t.Fatal("broker exited 0 after losing its only log dir, want non-zero")
	}
	if log := b.logTail(200); !containsAll(log, "fatal error; shutting down", "shutdown") {
		t.Fatalf("no clean shutdown in the log:\n%s", log)
	}

	// The disk is back: a restart serves everything acknowledged.
	if err := os.Remove(trigger); err != nil {
		t.Fatal(err)
	}
	b.start()
	got := consumeKgo(t, b, topic, []int32{0}, 20)
	var vals []string
	for _, r := range got {
		vals = append(vals, string(r.Value))
	}
	for i := range 20 {
		if v := "acked-0-" + strconv.Itoa(i); !slices.Contains(vals, v) {
			t.Fatalf("acknowledged record %q missing after restart: %v", v, vals)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// A real full disk: one log dir is a size-limited tmpfs (root only). An
// append that hits ENOSPC is answered KAFKA_STORAGE_ERROR, the dir goes
// offline while the other dir keeps serving, and once space comes back a
// restart serves every acknowledged record.
func TestDiskFullIsStorageErrorAndRestartAfterSpaceReturnsServesAcknowledged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a size-limited tmpfs")
	}
	b := newBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_LOG_DIRS": "data,small"}})
	small := filepath.Join(b.root, "small")
	if err := os.MkdirAll(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if b.Running() {
			b.Stop()
		}
		if out, err := exec.Command("umount", small).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", small, err, out)
		}
	})
	b.start()
	const topic = "disk-full"
	adm := kadm.NewClient(b.client(t))
	createTopic(t, adm, topic, 2, nil)
	var full, other int32 = -1, -1
	eventually(t, 30*time.Second, func() error {
		dirs, err := adm.DescribeBrokerLogDirs(testCtx(t, 10*time.Second), 1, nil)
		if err != nil {
			return err
		}
		for p := int32(0); p < 2; p++ {
			d, ok := dirs.LookupPartition(topic, p)
			if !ok {
				return fmt.Errorf("partition %d not described", p)
			}
			if d.Dir == small {
				full = p
			} else {
				other = p
			}
		}
		if full < 0 || other < 0 {
			return fmt.Errorf("partitions not spread over both dirs")
		}
		return nil
	})

	rc := dialRaw(t, b)
	value := make([]byte, 32<<10)
	acked := 0
	var code int16
	for i := 0; i < 100; i++ {
		copy(value, fmt.Sprintf("rec-%04d", i))
		resp := rc.roundTrip(produceRequest(9, -1, topic, full, buildBatch([][]byte{value}, time.Now().UnixMilli())))
		if code = producePartitionResult(t, resp).ErrorCode; code != 0 {
			break
		}
		acked++
	}
	if code != kerr.KafkaStorageError.Code {
		t.Fatalf("after %d acknowledged 32 KiB records on a 1 MiB disk: error code %d, want KAFKA_STORAGE_ERROR", acked, code)
	}
	if acked == 0 {
		t.Fatal("nothing was acknowledged before the disk filled")
	}
	// The other dir keeps serving.
	resp := rc.roundTrip(produceRequest(9, -1, topic, other, buildBatch([][]byte{[]byte("other")}, time.Now().UnixMilli())))
	if c := producePartitionResult(t, resp).ErrorCode; c != 0 {
		t.Fatalf("produce to the partition on the healthy dir: code %d", c)
	}
	b.CheckAlive(t)

	// Space comes back; the broker restarts and serves every acknowledged
	// record of the partition whose disk filled.
	b.Stop()
	if out, err := exec.Command("mount", "-o", "remount,size=64m", small).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v: %s", err, out)
	}
	b.start()
	got := consumeKgo(t, b, topic, []int32{full}, acked)
	for i, r := range got[:acked] {
		if want := fmt.Sprintf("rec-%04d", i); string(r.Value[:8]) != want || r.Offset != int64(i) {
			t.Fatalf("record %d after restart: offset %d value %q, want offset %d %q", i, r.Offset, r.Value[:8], i, want)
		}
	}
	resp = dialRaw(t, b).roundTrip(produceRequest(9, -1, topic, full, buildBatch([][]byte{[]byte("after")}, time.Now().UnixMilli())))
	if c := producePartitionResult(t, resp).ErrorCode; c != 0 {
		t.Fatalf("produce after the restart: code %d", c)
	}
}

func TestDescribeLogDirsEveryVersion(t *testing.T) {
	b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_LOG_DIRS": "data,data2"}})
	const topic = "describe-dirs"
	createTopic(t, kadm.NewClient(b.client(t)), topic, 2, nil)
	rc := dialRaw(t, b)
	for p := int32(0); p < 2; p++ {
		resp := rc.roundTrip(produceRequest(9, -1, topic, p, buildBatch([][]byte{[]byte("x")}, time.Now().UnixMilli())))
		if c := producePartitionResult(t, resp).ErrorCode; c != 0 {
			t.Fatalf("produce to %d: code %d", p, c)
		}
	}
	want := map[string]bool{}
	for _, d := range []string{"data", "data2"} {
		abs, _ := filepath.Abs(filepath.Join(b.root, d))
		want[abs] = true
	}
	for v := int16(0); v <= 4; v++ {
		for _, only := range []bool{false, true} {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			req.SetVersion(v)
			if only {
				rt := kmsg.NewDescribeLogDirsRequestTopic()
				rt.Topic, rt.Partitions = topic, []int32{1}
				req.Topics = append(req.Topics, rt)
			}
			resp := rc.roundTrip(req).(*kmsg.DescribeLogDirsResponse)
			if len(resp.Dirs) != 2 {
				t.Fatalf("v%d: %d dirs, want 2", v, len(resp.Dirs))
			}
			parts := map[int32]int64{}
			for _, d := range resp.Dirs {
				if !want[d.Dir] || d.ErrorCode != 0 {
					t.Fatalf("v%d: dir %q error %d", v, d.Dir, d.ErrorCode)
				}
				if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes < 0) {
					t.Fatalf("v%d: dir %s total %d usable %d", v, d.Dir, d.TotalBytes, d.UsableBytes)
				}
				for _, dt := range d.Topics {
					if dt.Topic != topic {
						continue
					}
					for _, dp := range dt.Partitions {
						parts[dp.Partition] = dp.Size
					}
				}
			}
			wantParts := 2
			if only {
				wantParts = 1
			}
			if len(parts) != wantParts {
				t.Fatalf("v%d (only partition 1: %v): partitions %v", v, only, parts)
			}
			for p, size := range parts {
				if size <= 0 {
					t.Fatalf("v%d: partition %d size %d", v, p, size)
				}
			}
		}
	}
}
