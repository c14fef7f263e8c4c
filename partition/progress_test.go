package partition

import (
	"sync"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

func TestStartupReportsRecoveryProgressUpToEverySegment(t *testing.T) {
	fs := NewMemFS()
	cfg := ManagerConfig{Dirs: []string{"/d1"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}
	cfg.Defaults.SegmentBytes = 200 // a few batches per segment
	m, err := OpenManager(fs, cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	wantSegs := 0
	for p := range int32(3) {
		l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			mustAppend(t, l, testkit.SimpleBatch(1, 1, 50), 0)
		}
		wantSegs += l.NumSegments()
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if wantSegs <= 3 {
		t.Fatalf("test needs several segments per partition, has %d", wantSegs)
	}

	var mu sync.Mutex
	var reports []RecoveryProgress
	cfg.Progress = func(p RecoveryProgress) {
		mu.Lock()
		reports = append(reports, p)
		mu.Unlock()
	}
	m, err = OpenManager(fs, cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(reports) != 3 {
		t.Fatalf("%d progress reports for 3 partitions: %+v", len(reports), reports)
	}
	last := reports[len(reports)-1]
	for _, r := range reports {
		if r.PartitionsDone > last.PartitionsDone {
			last = r
		}
	}
	if last.Partitions != 3 || last.PartitionsDone != 3 || last.Segments != wantSegs || last.SegmentsDone != wantSegs || last.BytesDone <= 0 {
		t.Fatalf("final progress %+v, want 3/3 partitions and %d/%d segments", last, wantSegs, wantSegs)
	}
	if first := reports[0]; first.Partitions != 3 || first.SegmentsDone >= wantSegs || first.Segments < first.SegmentsDone {
		t.Fatalf("first report %+v: the partitions' total must be known from the start, and segments estimated", first)
	}
}
