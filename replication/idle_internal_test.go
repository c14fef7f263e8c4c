package replication

import (
	"context"
	"testing"
	"time"

	"github.com/gokafka/gokafka/partition"
	"github.com/rs/zerolog"
)

// Every role change loads the producer state in the background so that it
// is ready by the first idempotent produce. Once it is in place the load
// is over: a partition that then stays idle (most of 10,000) keeps
// neither the finished load nor its channel.
func TestIdlePartitionKeepsNoFinishedProducerLoad(t *testing.T) {
	fs := partition.NewMemFS()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	tp := partition.TopicPartition{Topic: "t", Partition: 0}
	lg, err := partition.Open(fs, "/data", tp, partition.DefaultConfig(), zerolog.Nop(), partition.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	logger := zerolog.Nop()
	p := &Partition{TP: tp, log: lg, now: time.Now, mlog: &logger}
	p.prod.spawn = func(load func(context.Context)) bool {
		go load(context.Background())
		return true
	}
	p.startProducerLoad()
	p.prod.mu.Lock()
	ld := p.prod.load
	p.prod.mu.Unlock()
	if ld == nil {
		t.Fatal("no load started")
	}
	select {
	case <-ld.done:
	case <-time.After(10 * time.Second): // a watchdog against a hang only
		t.Fatal("load did not end")
	}
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	if p.prod.st == nil {
		t.Fatalf("state not installed (load error %v)", ld.err)
	}
	if p.prod.load != nil {
		t.Fatal("the finished load is still kept")
	}
	if p.prod.st.Len() != 0 {
		t.Fatalf("%d producers in an empty log", p.prod.st.Len())
	}
}
