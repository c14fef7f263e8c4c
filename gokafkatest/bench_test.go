package gokafkatest_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/gokafkatest"
)

// BenchmarkThreeNodeStartToFirstAck measures a 3-node embedded cluster from
// nothing to its first produce acknowledged by every replica (acks=all on
// an auto-created topic with replication factor 3), teardown excluded.
func BenchmarkThreeNodeStartToFirstAck(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		tb := &benchT{B: b}
		b.StartTimer()
		c := gokafkatest.NewCluster(tb, gokafkatest.Nodes(3))
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.AllowAutoTopicCreation())
		if err != nil {
			b.Fatal(err)
		}
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "bench", Value: []byte("v")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cl.Close()
		tb.cleanup()
		b.StartTimer()
	}
}

// benchT gives each iteration its own cleanups.
type benchT struct {
	*testing.B
	cleanups []func()
}

func (t *benchT) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *benchT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}
