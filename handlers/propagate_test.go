package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

// metadataQuestion is another node's applied-offset question for offset.
func metadataQuestion(offset int64, wait time.Duration) (*protocol.Request, *kmsg.FetchRequest) {
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(12)
	r.ReplicaID = 2
	r.MaxWaitMillis = int32(wait / time.Millisecond)
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = partition.MetadataTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return &protocol.Request{Key: 1, Version: 12, Body: r}, r
}

func TestMetadataPositionAnswersOnceTheOffsetIsApplied(t *testing.T) {
	meta := fake.NewMeta(1, &cluster.Image{Offset: 5, Brokers: map[int32]cluster.BrokerInfo{}, Topics: map[string]*cluster.TopicInfo{}})
	h := &Handlers{meta: meta, applied: newApplied(meta)}
	req, r := metadataQuestion(7, time.Minute)
	if !isMetadataPositionFetch(req, r) {
		t.Fatal("the applied-offset question is not recognised")
	}
	got := make(chan int64, 1)
	go func() {
		got <- h.metadataPosition(context.Background(), r).Topics[0].Partitions[0].HighWatermark
	}()
	// Offset 6 is not enough; 7 answers at once, well before the
	// question's minute.
	meta.Publish(&cluster.Image{Offset: 6, Brokers: map[int32]cluster.BrokerInfo{}, Topics: map[string]*cluster.TopicInfo{}})
	select {
	case pos := <-got:
		t.Fatalf("answered %d before offset 7 was applied", pos)
	case <-time.After(50 * time.Millisecond):
	}
	meta.Publish(&cluster.Image{Offset: 7, Brokers: map[int32]cluster.BrokerInfo{}, Topics: map[string]*cluster.TopicInfo{}})
	if pos := <-got; pos != 7 {
		t.Fatalf("answered %d, want 7", pos)
	}

	// A question the broker cannot answer yet ends with what it has
	// applied.
	_, r = metadataQuestion(9, 0)
	if pos := h.metadataPosition(context.Background(), r).Topics[0].Partitions[0].HighWatermark; pos != 7 {
		t.Fatalf("answered %d, want 7 (applied so far)", pos)
	}
}

func TestClientFetchOfTheMetadataTopicIsNotAMetadataQuestion(t *testing.T) {
	req, r := metadataQuestion(1, 0)
	r.ReplicaID = -1
	if isMetadataPositionFetch(req, r) {
		t.Fatal("a consumer's fetch of __cluster_metadata taken as a node's question")
	}
}
